import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/core/clock.js';
import { RuntimeCache } from '../../src/core/container/runtime-cache.js';
import { newKubelet, createPleg } from '../../src/core/node/compose.js';
import { AGENT_LABEL, MANAGED_BY_LABEL } from '../../src/core/kuberuntime/labels.js';
import { startFake, stopFake } from '../support/fake-runtime.js';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseManifestText } from '../../src/core/pod/index.js';

const podLabels = (i: number) => ({
  'io.kubernetes.pod.name': `p${i}`,
  'io.kubernetes.pod.namespace': 'default',
  'io.kubernetes.pod.uid': `uid-${i}`,
  [MANAGED_BY_LABEL]: 'podctl',
  [AGENT_LABEL]: 'watch',
});

test('the runtime cache answers while its lists are fresh, never goes back to older ones, and lists when stale', async () => {
  const clock = new FakeClock();
  const cache = new RuntimeCache(clock, 3000);
  let listed = 0;
  const list = async () => {
    listed++;
    return { sandboxes: [], containers: [] };
  };
  await cache.get(list);
  assert.equal(listed, 1, 'nothing cached yet');
  const fresh = { sandboxes: [], containers: [], at: clock.now() };
  cache.update(fresh);
  cache.update({ sandboxes: [], containers: [], at: clock.now() - 1 });
  assert.equal(await cache.get(list), fresh, 'an older pair does not replace a newer one');
  clock.advance(2999);
  assert.equal(await cache.get(list), fresh);
  clock.advance(1);
  await cache.get(list);
  assert.equal(listed, 2, 'older than the refresh period: listed again');
});

test("housekeeping reads the PLEG's lists while they are fresh and lists for itself when not; an orphan gone since is not reported", async () => {
  const f = await startFake();
  const { fake, client } = f;
  try {
    fake.seed({ pods: 2, containersPerPod: 1, labels: podLabels });
    const clock = new FakeClock();
    const kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: '/nonexistent',
      nodeName: 'unit',
      agent: 'watch',
      removeOrphans: false,
    });
    const pleg = createPleg(kubelet);
    await kubelet.housekeeping(); // image GC's first pass lists everything itself (then every 5 minutes)
    await pleg.relist();
    fake.resetCalls();
    await kubelet.housekeeping();
    assert.equal(fake.calls().ListContainers ?? 0, 0, 'the relist of a moment ago');
    clock.advance(3000);
    await kubelet.housekeeping();
    assert.equal(fake.calls().ListContainers, 1, 'no relist for 3 s: its own list');

    // A watch removes its orphans: one is removed behind the cache's back, the other is still there.
    const orphans = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent', nodeName: 'unit', agent: 'watch' });
    const relister = createPleg(orphans);
    await relister.relist();
    const gone = fake.sandboxes().find((s) => s.labels['io.kubernetes.pod.name'] === 'p0')!;
    for (const c of fake.containers().filter((c) => c.podSandboxId === gone.id)) await client.removeContainer(c.id);
    await client.removePodSandbox(gone.id);
    const result = await orphans.housekeeping();
    assert.deepEqual(result.removedPods, ['default/p1'], 'p0 was in the cached lists but no longer in the runtime');
    assert.deepEqual(fake.sandboxes(), []);
  } finally {
    await stopFake(f);
  }
});

test("event-driven, the runtime cache keeps a caller's complete lists for a minute; housekeeping acts on one pair of lists once", async () => {
  const clock = new FakeClock();
  const cache = new RuntimeCache(clock);
  let listed = 0;
  const list = async () => (listed++, { sandboxes: [], containers: [] });
  await cache.get(list, true);
  await cache.get(list, true);
  assert.equal(listed, 2, 'beside a relist every second nothing a caller lists is kept');
  cache.setEventDriven(true);
  const kept = await cache.get(list, true);
  clock.advance(59_999);
  assert.equal(await cache.get(list), kept);
  assert.equal(listed, 3);
  clock.advance(1);
  await cache.get(list, false);
  await cache.get(list, false);
  assert.equal(listed, 5, 'lists that are not complete are not kept');
  cache.setEventDriven(false);
  clock.advance(3000);
  await cache.get(list);
  assert.equal(listed, 6);

  const f = await startFake();
  const { fake, client } = f;
  try {
    fake.seed({ pods: 2, containersPerPod: 1, labels: podLabels });
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent', nodeName: 'unit', agent: 'watch' });
    kubelet.runtimeCache.setEventDriven(true);
    await kubelet.housekeeping(); // image GC's first pass lists everything itself (then every 5 minutes)
    assert.equal(fake.sandboxes().length, 0, 'both orphans removed');
    fake.seed({ pods: 1, containersPerPod: 1, labels: podLabels });
    fake.resetCalls();
    const again = await kubelet.housekeeping();
    assert.deepEqual(
      [again.removedPods, fake.calls().ListContainers ?? 0, fake.calls().ListPodSandbox ?? 0],
      [[], 0, 0],
      'the same lists: nothing new to act on, nothing listed',
    );
    clock.advance(60_000);
    const later = await kubelet.housekeeping();
    assert.deepEqual(later.removedPods, ['default/p0'], 'lists a minute old are listed again');
  } finally {
    await stopFake(f);
  }
});

test("log rotation's running containers come from the PLEG's caches while they are current, not a list of its own", async () => {
  const f = await startFake();
  const { fake, client } = f;
  try {
    fake.seed({ pods: 2, containersPerPod: 1, labels: podLabels });
    const clock = new FakeClock();
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent', nodeName: 'unit', agent: 'watch' });
    const pleg = createPleg(kubelet);
    await pleg.relist();
    fake.resetCalls();
    await kubelet.containerLogs.rotateLogs();
    assert.equal(fake.calls().ListContainers ?? 0, 0, "the relist's lists of a moment ago");
    clock.advance(10_000);
    await kubelet.containerLogs.rotateLogs();
    assert.equal(fake.calls().ListContainers, 1, 'stale: listed');
  } finally {
    await stopFake(f);
  }
});

test(
  'event-driven, log rotation takes the runtime cache only while it is younger than its own interval, so a container started ' +
    'since is rotated',
  async () => {
    const f = await startFake();
    const { fake, client } = f;
    try {
      fake.seed({ pods: 1, containersPerPod: 1, labels: podLabels });
      const clock = new FakeClock();
      const kubelet = newKubelet({
        runtime: client,
        images: client,
        clock,
        logRoot: '/nonexistent',
        nodeName: 'unit',
        agent: 'watch',
        containerLogs: { monitorIntervalMs: 10_000 },
      });
      kubelet.runtimeCache.setEventDriven(true);
      const pleg = createPleg(kubelet);
      await pleg.relist();
      fake.resetCalls();
      await kubelet.containerLogs.rotateLogs();
      assert.equal(fake.calls().ListContainers ?? 0, 0, 'lists younger than the interval serve it');
      // A container starts after those lists; the event-driven cache would keep them a minute.
      fake.seed({ pods: 1, containersPerPod: 1, labels: (i) => podLabels(i + 1) });
      clock.advance(10_000);
      await kubelet.containerLogs.rotateLogs();
      assert.equal(fake.calls().ListContainers, 1, 'older than the interval: listed, though the cache would still answer for 50 s');
      const cached = await kubelet.runtimeCache.get(async () => assert.fail('the list just made is cached'));
      assert.equal(cached.containers.length, 2, 'the new container is in the lists rotation saw');
    } finally {
      await stopFake(f);
    }
  },
);

test("log rotation takes the running containers and their log paths from the PLEG's pod cache while it is current: no list, no ContainerStatus", async () => {
  const f = await startFake();
  const { fake, client } = f;
  const logs = mkdtempSync(join(tmpdir(), 'podctl-rotation-'));
  try {
    const clock = new FakeClock();
    const kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: logs,
      nodeName: 'unit',
      agent: 'watch',
      containerLogs: { maxSizeBytes: 100, monitorIntervalMs: 10_000 },
    });
    const pleg = createPleg(kubelet);
    const pod = parseManifestText(
      'apiVersion: v1\nkind: Pod\nmetadata: {name: chatty, namespace: default}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "9"]}\n',
      { kind: 'file', path: '/chatty.yaml' },
      { nodeName: 'unit' },
    ).pods[0]!.pod;
    kubelet.addOrUpdatePod(pod);
    await kubelet.workers.waitIdle();
    await pleg.relist();
    const path = pleg.cache.get(pod.metadata!.uid!)?.containers.find((c) => c.state === 'running')?.logPath;
    assert.ok(path, 'the pod cache knows the running container and its log path');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, 'x'.repeat(200));
    // The relist's lists are stale (3 s); an event stream has marked the pod cache current since.
    clock.advance(5000);
    pleg.markCacheCurrent(clock.now());
    fake.resetCalls();
    const rotated = await kubelet.containerLogs.rotateLogs();
    assert.deepEqual(rotated, [path]);
    assert.deepEqual(
      [fake.calls().ListContainers ?? 0, fake.calls().ContainerStatus ?? 0, fake.calls().ReopenContainerLog ?? 0],
      [0, 0, 1],
    );
    await kubelet.syncTerminatingPod(pod, 0);
    await kubelet.syncTerminatedPod(pod);
  } finally {
    rmSync(logs, { recursive: true, force: true });
    await stopFake(f);
  }
});
