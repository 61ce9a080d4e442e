import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet, createEventedPleg } from '../../src/core/node/compose.js';
import type { PodLifecycleEvent } from '../../src/core/pleg/generic.js';
import { EVENTED_RELIST_PERIOD_MS, GLOBAL_CACHE_UPDATE_PERIOD_MS } from '../../src/core/pleg/evented.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';

const logs = scratchDir('evented');
after(() => logs.cleanup());

const pod = parseManifestText(
  'apiVersion: v1\nkind: Pod\nmetadata: {name: ev}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "9"]}\n',
  { kind: 'file', path: '/ev.yaml' },
  { nodeName: 'n' },
).pods[0]!.pod;

/** Polls fn in real time (the fake clock is not moved) until it gives a value, or fails after 30 s. */
async function until<T>(fn: () => T | undefined, what = 'the condition'): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The fake counts GetContainerEvents in the same turn as it takes the subscription: once counted, every
 * later change reaches the stream. (A fixed sleep did not say so; an event missed while the clock stands
 * still is never relisted.)
 */
const subscribed = (fake: FakeRuntime) =>
  until(() => (fake.calls().GetContainerEvents === 1 ? true : undefined), 'the fake to take the event stream');

test('evented PLEG: a container exit reaches the listeners from the event stream, without a relist', async () => {
  const clock = new FakeClock();
  const fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  try {
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'n' });
    const fallbacks: string[] = [];
    let relists = 0;
    const pleg = createEventedPleg(kubelet, { onFallback: (r) => fallbacks.push(r), onRelist: () => relists++ });
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    pleg.start();
    await subscribed(fake);
    await kubelet.syncPod(pod, 'create');
    const id = fake.containers()[0]!.id;
    await until(() => events.find((e) => e.type === 'ContainerStarted' && e.data === id), 'ContainerStarted');
    const relistsBefore = relists;
    fake.exitContainer(id, 2);
    const died = await until(() => events.find((e) => e.type === 'ContainerDied' && e.data === id), 'ContainerDied');
    assert.equal(died.containerName, 'app');
    assert.equal(died.id, pod.metadata!.uid);
    // The clock never moves, so only a stream break or a bug could relist.
    assert.equal(relists, relistsBefore, 'the death came from the event stream, no relist');
    assert.equal(pleg.cache.get(pod.metadata!.uid!)?.containers[0]?.exitCode, 2);
    assert.deepEqual(fallbacks, []);
    assert.equal(pleg.mode, 'evented');
    pleg.stop();
    await kubelet.syncTerminatingPod(pod, 0);
    await kubelet.syncTerminatedPod(pod);
  } finally {
    client.close();
    await fake.stop();
  }
});

test('evented PLEG falls back to the generic one, once, when the runtime answers UNIMPLEMENTED', async () => {
  const clock = new FakeClock();
  const fake = await FakeRuntime.start({ clock, implementEvents: false, images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  try {
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'n' });
    const fallbacks: string[] = [];
    const pleg = createEventedPleg(kubelet, { relistPeriodMs: 1000, onFallback: (r) => fallbacks.push(r) });
    pleg.start();
    await until(() => (fallbacks.length ? true : undefined));
    assert.deepEqual(fallbacks, ['the runtime does not implement GetContainerEvents: using the generic PLEG (relist every 1 s)']);
    assert.equal(pleg.mode, 'generic');
    // The generic PLEG now relists every second.
    fake.resetCalls();
    clock.advance(1000);
    await until(() => ((fake.calls().ListContainers ?? 0) >= 1 ? true : undefined));
    pleg.stop();
  } finally {
    client.close();
    await fake.stop();
  }
});

test('evented PLEG: a death from the stream is not reported again by the safety-net relist (each event once)', async () => {
  const clock = new FakeClock();
  const fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  try {
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'n' });
    let relists = 0;
    const pleg = createEventedPleg(kubelet, { onRelist: () => relists++ });
    const events: PodLifecycleEvent[] = [];
    pleg.watch((e) => events.push(e));
    pleg.start();
    clock.advance(0);
    // The first relist done, so the relist awaited below is the safety net's, not this one finishing late.
    await until(() => (relists >= 1 ? true : undefined), 'the first relist');
    await subscribed(fake);
    await kubelet.syncPod(pod, 'create');
    const id = fake.containers()[0]!.id;
    await until(() => events.find((e) => e.type === 'ContainerStarted' && e.data === id), 'ContainerStarted');
    fake.exitContainer(id, 2);
    await until(() => events.find((e) => e.type === 'ContainerDied' && e.data === id), 'ContainerDied');
    const relistsBefore = relists;
    clock.advance(EVENTED_RELIST_PERIOD_MS);
    await until(() => (relists > relistsBefore ? true : undefined));
    assert.equal(events.filter((e) => e.type === 'ContainerDied' && e.data === id).length, 1);
    assert.equal(events.filter((e) => e.type === 'ContainerStarted' && e.data === id).length, 1);
    pleg.stop();
    await kubelet.syncTerminatingPod(pod, 0);
    await kubelet.syncTerminatedPod(pod);
  } finally {
    client.close();
    await fake.stop();
  }
});

test(
  'evented PLEG: while the stream is up the pod cache is marked current every 5 s (updateGlobalCache), so a resync reads ' + 'no runtime',
  async () => {
    const clock = new FakeClock();
    const fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
    const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
    try {
      const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'n' });
      let relists = 0;
      const pleg = createEventedPleg(kubelet, { onRelist: () => relists++ });
      const events: PodLifecycleEvent[] = [];
      pleg.watch((e) => events.push(e));
      pleg.start();
      await subscribed(fake);
      await kubelet.syncPod(pod, 'create');
      const uid = pod.metadata!.uid!;
      await until(() => events.find((e) => e.type === 'ContainerStarted'));
      await until(() => pleg.cache.get(uid)?.containers.find((c) => c.state === 'running'));
      // The pod synced after its last refresh: without a newer cache its next sync reads the runtime.
      clock.advance(1000);
      // That move fired the PLEG's first relist: done before the calls are counted below, none of its calls counts.
      await until(() => (relists >= 1 ? true : undefined), 'the first relist');
      await kubelet.syncPod(pod, 'sync');
      const syncedAt = clock.now();
      clock.advance(GLOBAL_CACHE_UPDATE_PERIOD_MS);
      assert.ok(pleg.cache.freshness(uid)! > syncedAt, 'marked current by a tick after the sync');
      fake.resetCalls();
      await kubelet.syncPod(pod, 'sync');
      assert.deepEqual(fake.calls(), {}, 'the resync used the cache');
      pleg.stop();
      await kubelet.syncTerminatingPod(pod, 0);
      await kubelet.syncTerminatedPod(pod);
    } finally {
      client.close();
      await fake.stop();
    }
  },
);
