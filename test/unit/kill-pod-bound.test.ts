import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import type { ImageService, RuntimeService } from '../../src/core/cri/client.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../../src/core/container/types.js';
import { eachBounded, MAX_KILLS_IN_FLIGHT_PER_POD } from '../../src/core/kuberuntime/bounded.js';
import { MINIMUM_GRACE_PERIOD_SECONDS } from '../../src/core/kuberuntime/containers.js';
import { RuntimeManager } from '../../src/core/kuberuntime/manager.js';

/** A runtime whose StopContainer calls wait until the test lets them end: what is in flight can be counted. */
function heldRuntime() {
  const pending: { id: string; timeout: number; release: () => void }[] = [];
  const calls: { id: string; timeout: number }[] = [];
  const stoppedSandboxes: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const runtime = {
    stopContainer(id: string, timeout: number): Promise<void> {
      calls.push({ id, timeout });
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      return new Promise<void>((resolve) =>
        pending.push({
          id,
          timeout,
          release: () => {
            inFlight--;
            resolve();
          },
        }),
      );
    },
    stopPodSandbox(id: string): Promise<void> {
      stoppedSandboxes.push(id);
      return Promise.resolve();
    },
  };
  return {
    runtime: runtime as unknown as RuntimeService,
    pending,
    calls,
    stoppedSandboxes,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
  };
}

function container(i: number, kind: RuntimeContainerStatus['kind'] = 'app'): RuntimeContainerStatus {
  return {
    id: `c${i}`,
    name: `c${i}`,
    state: 'running',
    createdAt: i,
    image: 'busybox',
    imageRef: 'busybox',
    imageId: 'busybox',
    hash: '',
    restartCount: 0,
    kind,
  };
}

function podOf(n: number, sidecars: number, grace: number): { pod: IPod; status: RuntimePodStatus } {
  const containers = [
    ...Array.from({ length: n }, (_, i) => container(i)),
    ...Array.from({ length: sidecars }, (_, i) => container(n + i, 'sidecar')),
  ];
  const pod = {
    metadata: { name: 'many', namespace: 'default', uid: 'u-many' },
    spec: { terminationGracePeriodSeconds: grace, containers: containers.map((c) => ({ name: c.name, image: 'busybox' })) },
  } as IPod;
  const status: RuntimePodStatus = {
    uid: 'u-many',
    name: 'many',
    namespace: 'default',
    ips: [],
    sandboxes: [{ id: 's1', state: 'ready' } as RuntimePodStatus['sandboxes'][number]],
    containers,
    timestamp: 0,
  };
  return { pod, status };
}

/** Lets the event loop run until `pending` holds n calls (or nothing more happens). */
async function untilPending(pending: unknown[], n: number): Promise<void> {
  for (let i = 0; i < 1000 && pending.length < n; i++) await new Promise((r) => setImmediate(r));
  assert.equal(pending.length, n, `expected ${n} StopContainer calls in flight`);
}

test("killPod keeps at most MAX_KILLS_IN_FLIGHT_PER_POD stops in flight; a container that waits for a slot gets what is left of the pod's grace, at least the minimum", async () => {
  assert.ok(MAX_KILLS_IN_FLIGHT_PER_POD >= 8 && MAX_KILLS_IN_FLIGHT_PER_POD <= 16);
  const clock = new FakeClock();
  const r = heldRuntime();
  const manager = new RuntimeManager({ runtime: r.runtime, images: {} as ImageService, clock, logRoot: '' });
  const apps = MAX_KILLS_IN_FLIGHT_PER_POD * 2 + 8;
  const { pod, status } = podOf(apps, 2, 30);
  const done = manager.killPod(pod, status);

  // The first batch: the whole grace period, and no more than the bound at once.
  await untilPending(r.pending, MAX_KILLS_IN_FLIGHT_PER_POD);
  assert.deepEqual(new Set(r.pending.map((p) => p.timeout)), new Set([30]));
  // 10 s on, the batch ends: the next one is given the 20 s left.
  clock.advance(10_000);
  for (const p of r.pending.splice(0)) p.release();
  await untilPending(r.pending, MAX_KILLS_IN_FLIGHT_PER_POD);
  assert.deepEqual(new Set(r.pending.map((p) => p.timeout)), new Set([20]));
  // Past the pod's deadline, what is left still gets the kubelet's minimum grace, not a multiple of the grace.
  clock.advance(25_000);
  for (const p of r.pending.splice(0)) p.release();
  await untilPending(r.pending, 8);
  assert.deepEqual(new Set(r.pending.map((p) => p.timeout)), new Set([MINIMUM_GRACE_PERIOD_SECONDS]));
  assert.ok(
    r.pending.every((p) => !p.id.startsWith(`c${apps}`) && p.id !== `c${apps + 1}`),
    'sidecars wait for the app containers',
  );
  for (const p of r.pending.splice(0)) p.release();
  // Then the sidecars, with the minimum too (the pod's grace has run out).
  await untilPending(r.pending, 2);
  assert.deepEqual(
    r.pending.map((p) => [p.id, p.timeout]),
    [
      [`c${apps}`, MINIMUM_GRACE_PERIOD_SECONDS],
      [`c${apps + 1}`, MINIMUM_GRACE_PERIOD_SECONDS],
    ],
  );
  assert.deepEqual(r.stoppedSandboxes, [], 'the sandbox is stopped after its containers');
  for (const p of r.pending.splice(0)) p.release();
  await done;

  assert.equal(r.maxInFlight, MAX_KILLS_IN_FLIGHT_PER_POD);
  assert.equal(r.calls.length, apps + 2);
  assert.equal(new Set(r.calls.map((c) => c.id)).size, apps + 2, 'each container stopped once');
  assert.deepEqual(r.stoppedSandboxes, ['s1']);
});

test('a pod of no more containers than the bound is killed all at once, each with the whole grace period (as the kubelet)', async () => {
  const clock = new FakeClock();
  const r = heldRuntime();
  const manager = new RuntimeManager({ runtime: r.runtime, images: {} as ImageService, clock, logRoot: '' });
  const { pod, status } = podOf(5, 0, 45);
  const done = manager.killPod(pod, status);
  await untilPending(r.pending, 5);
  assert.deepEqual(
    r.pending.map((p) => p.timeout),
    [45, 45, 45, 45, 45],
  );
  for (const p of r.pending.splice(0)) p.release();
  await done;
});

test('eachBounded: every item runs to its end when one fails, and the first failure is thrown after', async () => {
  const seen: number[] = [];
  let inFlight = 0;
  let max = 0;
  await assert.rejects(
    eachBounded([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      inFlight++;
      max = Math.max(max, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      seen.push(n);
      if (n === 2 || n === 5) throw new Error(`item ${n}`);
    }),
    /item 2/,
  );
  assert.deepEqual(seen.sort(), [1, 2, 3, 4, 5, 6, 7]);
  assert.equal(max, 3);
  await eachBounded([], 3, async () => assert.fail('no items'));
});
