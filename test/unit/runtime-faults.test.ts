import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';

function pod(name: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;
  return parseManifestText(text, { kind: 'file', path: `/faults/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
}

describe('runtime faults (fake runtime, injected clock): retried with backoff, reported, never a crash, never a leak', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  const logs = scratchDir('faults-logs');
  before(async () => {
    fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
    // A deadline no answered call comes near on a loaded machine: only the call a test hangs may time out.
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 10_000, pullTimeoutMs: 10_000 });
  });
  after(async () => {
    client.close();
    await fake.stop();
    logs.cleanup();
  });

  const app = (s: IPodStatus | undefined) => s?.containerStatuses?.[0];

  test(
    'a StartContainer that fails once: the reason is in the status and the events, the pod worker retries after its backoff, ' +
      'and the pod runs',
    async () => {
      const clock = new FakeClock();
      const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'faults-1' });
      const p = pod('fails-once');
      fake.failNext('StartContainer', grpc.status.UNKNOWN, 'OCI runtime start failed: boom');
      kubelet.addOrUpdatePod(p);
      await kubelet.workers.waitIdle();
      const s = kubelet.statusManager.get(p.metadata!.uid!);
      assert.equal(app(s)?.state?.waiting?.reason, 'RunContainerError');
      assert.match(app(s)!.state!.waiting!.message!, /OCI runtime start failed: boom/);
      assert.match(kubelet.workers.lastError(p.metadata!.uid!) ?? '', /StartContainer app/);
      assert.ok(
        kubelet.events.eventsFor(p.metadata!.uid!).some((e) => e.type === 'Warning' && e.reason === 'Failed' && /boom/.test(e.message)),
      );
      clock.advance(9_999);
      assert.deepEqual(kubelet.workers.syncDue(), [], 'not before the 10 s backoff');
      clock.advance(1);
      assert.deepEqual(kubelet.workers.syncDue(), [p.metadata!.uid!]);
      await kubelet.workers.waitIdle();
      assert.ok(app(kubelet.statusManager.get(p.metadata!.uid!))?.state?.running);
      assert.deepEqual(
        fake.containers().map((c) => c.state),
        ['CONTAINER_RUNNING'],
        'the instance whose start failed is removed once a new one runs, not leaked',
      );
      await kubelet.syncTerminatingPod(p, 0);
      await kubelet.syncTerminatedPod(p);
    },
  );

  test('a CreateContainer that hangs past its deadline fails that sync with a clear reason; the next sync runs the pod', async () => {
    const clock = new FakeClock();
    // A short deadline (the client's, in real time) only for the CreateContainer the runtime holds, so the
    // hang fails fast; every other call, and the CreateContainer after unhang, has the shared client's.
    const short = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 300, pullTimeoutMs: 300 });
    let createVia: CriClient = short;
    const runtime = new Proxy(client, {
      get(target, prop) {
        if (prop === 'createContainer') return (...args: Parameters<CriClient['createContainer']>) => createVia.createContainer(...args);
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    try {
      const kubelet = newKubelet({ runtime, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'faults-2' });
      const p = pod('hangs');
      fake.hang('CreateContainer');
      await assert.rejects(kubelet.syncPod(p, 'create'), /CreateContainer did not answer within 300ms/);
      assert.equal(app(kubelet.statusManager.get(p.metadata!.uid!))?.state?.waiting?.reason, 'CreateContainerError');
      assert.match(
        app(kubelet.statusManager.get(p.metadata!.uid!))!.state!.waiting!.message!,
        /raise --request-timeout or check the runtime/,
      );
      fake.unhang('CreateContainer');
      createVia = client;
      await kubelet.syncPod(p, 'sync');
      assert.ok(app(kubelet.statusManager.get(p.metadata!.uid!))?.state?.running);
      assert.deepEqual(
        fake.containers().map((c) => c.state),
        ['CONTAINER_RUNNING'],
      );
      await kubelet.syncTerminatingPod(p, 0);
      await kubelet.syncTerminatedPod(p);
      assert.equal(fake.containers().length, 0);
    } finally {
      short.close();
    }
  });
});
