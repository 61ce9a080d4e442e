import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';

let fake: FakeRuntime;
let client: CriClient;
const logs = scratchDir('image-check-logs');

before(async () => {
  fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
  client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 10_000, pullTimeoutMs: 10_000 });
});
after(async () => {
  client.close();
  await fake.stop();
  logs.cleanup();
});

function pod(name: string, pullPolicy = 'IfNotPresent'): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, imagePullPolicy: ${pullPolicy}, command: [sleep, "3600"]}\n`;
  return parseManifestText(text, { kind: 'file', path: `/image-check/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
}

async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), `never: ${what}`);
}

test('SyncPod asks whether the image is present while the sandbox is created, and asks once', async () => {
  const kubelet = newKubelet({
    runtime: client,
    images: client,
    clock: new FakeClock(),
    logRoot: logs.dir,
    nodeName: 'unit',
    agent: 'image-check-1',
  });
  const p = pod('early-check');
  fake.resetCalls();
  fake.hang('RunPodSandbox');
  const syncing = kubelet.syncPod(p, 'create');
  try {
    await until('ImageStatus asked while RunPodSandbox is held', () => (fake.calls().ImageStatus ?? 0) === 1);
    assert.equal(fake.containers().length, 0, 'no container yet: the sandbox is still being created');
  } finally {
    fake.unhang('RunPodSandbox');
  }
  await syncing;
  assert.equal(fake.calls().ImageStatus, 1, 'the container start used that answer');
  assert.equal(fake.calls().PullImage ?? 0, 0);
  assert.deepEqual(
    fake.containers().map((c) => c.state),
    ['CONTAINER_RUNNING'],
  );
  await kubelet.syncTerminatingPod(p, 0);
  await kubelet.syncTerminatedPod(p);
});

test('Always pulls without asking; a failed sandbox leaves the early check unawaited and harmless', async () => {
  const kubelet = newKubelet({
    runtime: client,
    images: client,
    clock: new FakeClock(),
    logRoot: logs.dir,
    nodeName: 'unit',
    agent: 'image-check-2',
  });
  const always = pod('always', 'Always');
  fake.resetCalls();
  await kubelet.syncPod(always, 'create');
  assert.equal(fake.calls().ImageStatus ?? 0, 0);
  assert.equal(fake.calls().PullImage, 1);
  await kubelet.syncTerminatingPod(always, 0);
  await kubelet.syncTerminatedPod(always);

  // Both fail: the sync reports the sandbox's error, and the check's rejection goes nowhere.
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    const p = pod('no-sandbox');
    fake.resetCalls();
    fake.failNext('ImageStatus', grpc.status.UNAVAILABLE, 'image service down');
    fake.failNext('RunPodSandbox', grpc.status.UNKNOWN, 'CNI ADD failed');
    await assert.rejects(kubelet.syncPod(p, 'create'), /RunPodSandbox failed: CNI ADD failed/);
    assert.ok(
      kubelet.events.eventsFor(p.metadata!.uid!).some((e) => e.reason === 'FailedCreatePodSandBox' && /CNI ADD failed/.test(e.message)),
    );
    // The early check's failed answer has reached the client: the fake answered it, and a later call on
    // the same connection came back after it. Node reports an unhandled rejection once microtasks drain.
    assert.equal(fake.calls().ImageStatus, 1);
    await client.version();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
