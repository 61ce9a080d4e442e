import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import type { CriClient, RuntimeService } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import * as L from '../../src/core/kuberuntime/labels.js';
import { PodStatusReader } from '../../src/core/kuberuntime/pod-status.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';
import { startFake, stopFake } from '../support/fake-runtime.js';

const pod = (name: string, containers = ['app']): IPod =>
  parseManifestText(
    `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n${containers.map((c) => `  - {name: ${c}, image: busybox:1.36, command: [sleep, "3600"]}\n`).join('')}`,
    { kind: 'file', path: `/unit/${name}.yaml` },
    { nodeName: 'unit' },
  ).pods[0]!.pod;

const LISTS = new Set(['listPodSandbox', 'listContainers']);

/**
 * The client as a RuntimeService that logs each call as it is made ("call NAME ARG") and as it is
 * answered ("done NAME"); while `hold` is set, the pod lists wait for it to be released.
 */
function observed(client: CriClient) {
  const log: string[] = [];
  let release: (() => void) | undefined;
  let gate: Promise<void> | undefined;
  const runtime = new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const name = String(prop);
      return (...args: unknown[]) => {
        log.push(`call ${name}${typeof args[0] === 'string' ? ` ${args[0]}` : ''}`);
        const held = LISTS.has(name) ? gate : undefined;
        const answer = (held ?? Promise.resolve()).then(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
        return answer.then((r) => {
          log.push(`done ${name}`);
          return r;
        });
      };
    },
  }) as unknown as RuntimeService;
  return {
    runtime,
    log,
    hold: () => {
      gate = new Promise((r) => (release = r));
    },
    release: () => {
      gate = undefined;
      release?.();
    },
  };
}

describe('the read after a sync asks the statuses it expects with the lists', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  const clock = new FakeClock();
  const dir = scratchDir('pod-status-read');
  before(async () => {
    ({ fake, client } = await startFake({ clock }));
  });
  after(async () => {
    await stopFake({ fake, client });
    dir.cleanup();
  });

  test('expected IDs are asked before the lists answer; the lists decide what the pod has', async () => {
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: dir.dir, nodeName: 'unit', agent: 'status-read-unit' });
    const p = pod('expected');
    await kubelet.syncPod(p, 'create');
    const uid = p.metadata!.uid!;
    const [sandbox] = await client.listPodSandbox({ labelSelector: { [L.POD_UID_LABEL]: uid } });
    const [container] = await client.listContainers({ labelSelector: { [L.POD_UID_LABEL]: uid } });
    assert.ok(sandbox && container);

    const o = observed(client);
    const reader = new PodStatusReader({ runtime: o.runtime, clock });
    o.hold();
    const reading = reader.getPodStatus(uid, 'expected', 'default', {
      expected: { sandboxIds: [sandbox.id], containerIds: [container.id, 'removed-meanwhile'] },
    });
    // Nothing has answered yet: the lists are held.
    assert.deepEqual(o.log.filter((l) => l.startsWith('call')).sort(), [
      `call containerStatus ${container.id}`,
      'call containerStatus removed-meanwhile',
      'call listContainers',
      'call listPodSandbox',
      `call podSandboxStatus ${sandbox.id}`,
    ]);
    o.release();
    const status = await reading;
    assert.deepEqual(
      status.containers.map((c) => [c.id, c.state]),
      [[container.id, 'running']],
      'the ID the lists do not show is dropped',
    );
    assert.deepEqual(
      status.sandboxes.map((s) => [s.id, s.state]),
      [[sandbox.id, 'ready']],
    );
    assert.equal(o.log.filter((l) => l === `call containerStatus ${container.id}`).length, 1, 'each status is asked once');
    assert.equal(o.log.filter((l) => l === `call podSandboxStatus ${sandbox.id}`).length, 1);
  });

  test('a listed ID no one expected is asked after the lists; a failed answer no one waits for is not an unhandled rejection', async () => {
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: dir.dir, nodeName: 'unit', agent: 'status-read-unit' });
    const p = pod('unexpected');
    await kubelet.syncPod(p, 'create');
    const uid = p.metadata!.uid!;
    const [container] = await client.listContainers({ labelSelector: { [L.POD_UID_LABEL]: uid } });
    assert.ok(container);

    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const o = observed(client);
      // An unknown sandbox ID: the fake answers NOT_FOUND, which is no error, so an ID it refuses outright stands for a failure.
      const failing = new Proxy(o.runtime, {
        get(target, prop, receiver) {
          if (prop === 'containerStatus') {
            return (id: string, verbose?: boolean) =>
              id === 'broken' ? Promise.reject(new Error('connection reset')) : target.containerStatus(id, verbose);
          }
          return Reflect.get(target, prop, receiver) as unknown;
        },
      });
      const reader = new PodStatusReader({ runtime: failing, clock });
      const status = await reader.getPodStatus(uid, 'unexpected', 'default', { expected: { sandboxIds: [], containerIds: ['broken'] } });
      assert.deepEqual(
        status.containers.map((c) => c.id),
        [container.id],
      );
      const listedAt = o.log.indexOf('done listContainers');
      const askedAt = o.log.indexOf(`call containerStatus ${container.id}`);
      assert.ok(listedAt >= 0 && askedAt > listedAt, `the unexpected container is asked once the list shows it: ${o.log.join(', ')}`);
      // Let any rejection left unhandled be reported before looking.
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  test('SyncPod: the read after a start asks the new sandbox and container with the lists', async () => {
    const o = observed(client);
    const kubelet = newKubelet({
      runtime: o.runtime,
      images: client,
      clock,
      logRoot: dir.dir,
      nodeName: 'unit',
      agent: 'status-read-unit',
    });
    const p = pod('after-start');
    await kubelet.syncPod(p, 'create');
    const uid = p.metadata!.uid!;
    const [sandbox] = await client.listPodSandbox({ labelSelector: { [L.POD_UID_LABEL]: uid } });
    const [container] = await client.listContainers({ labelSelector: { [L.POD_UID_LABEL]: uid } });
    assert.ok(sandbox && container);
    assert.ok(kubelet.statusManager.get(uid)!.containerStatuses![0]!.state?.running, 'the status after the start says running');
    // The read after the start: from StartContainer's answer to the status.
    const read = o.log.slice(o.log.lastIndexOf('done startContainer'));
    const firstAnswer = read.findIndex((l, i) => i > 0 && l.startsWith('done'));
    assert.ok(firstAnswer > 0, read.join(', '));
    assert.deepEqual(
      read.slice(1, firstAnswer).sort(),
      ['call containerStatus ' + container.id, 'call listContainers', 'call listPodSandbox', 'call podSandboxStatus ' + sandbox.id],
      'all four asked before any answered',
    );
  });

  test("SyncPod: a new sandbox's IPs are asked once for all the containers it starts", async () => {
    const o = observed(client);
    const kubelet = newKubelet({
      runtime: o.runtime,
      images: client,
      clock,
      logRoot: dir.dir,
      nodeName: 'unit',
      agent: 'status-read-unit',
    });
    const p = pod('two-containers', ['one', 'two']);
    await kubelet.syncPod(p, 'create');
    const status = kubelet.statusManager.get(p.metadata!.uid!)!;
    assert.deepEqual(
      status.containerStatuses!.map((c) => [c.name, !!c.state?.running]),
      [
        ['one', true],
        ['two', true],
      ],
    );
    assert.ok(status.podIP, 'the pod has its IP');
    const steps = o.log.slice(o.log.indexOf('done runPodSandbox'), o.log.lastIndexOf('done startContainer'));
    assert.equal(steps.filter((l) => l.startsWith('call podSandboxStatus')).length, 1, steps.join(', '));
    assert.equal(steps.filter((l) => l.startsWith('call createContainer')).length, 2);
  });
});
