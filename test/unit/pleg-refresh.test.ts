import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FakeClock } from '../../src/core/clock.js';
import type { ContainerEventHandlers, RuntimeService } from '../../src/core/cri/client.js';
import type * as T from '../../src/core/cri/types.js';
import type { ContainerSummary, PodSandboxSummary } from '../../src/core/cri/types.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../../src/core/container/types.js';
import { EventedPleg } from '../../src/core/pleg/evented.js';
import { GenericPleg } from '../../src/core/pleg/generic.js';
import { PodCache } from '../../src/core/pleg/cache.js';

function status(uid: string, state: RuntimeContainerStatus['state']): RuntimePodStatus {
  const c: RuntimeContainerStatus = {
    id: `c-${uid}`,
    name: 'app',
    state,
    createdAt: 1,
    image: 'busybox',
    imageRef: 'busybox',
    imageId: 'sha256:1',
    hash: 'h',
    restartCount: 0,
    kind: 'app',
  };
  return {
    uid,
    name: uid,
    namespace: 'default',
    ips: [],
    sandboxes: [{ id: `s-${uid}`, state: 'ready', createdAt: 1, attempt: 0, additionalIps: [], hostNetwork: false }],
    containers: [c],
    timestamp: 0,
  };
}

test(
  'refreshPod: requests for a pod whose refresh has not begun join it (one read), different pods are read at once; a request ' +
    'once it has begun reads again',
  async () => {
    // A relist held on its lists keeps every refresh waiting for its turn.
    let releaseLists!: () => void;
    const lists = new Promise<void>((r) => (releaseLists = r));
    const runtime = {
      listPodSandboxSummaries: async (): Promise<PodSandboxSummary[]> => (await lists, []),
      listContainerSummaries: async (): Promise<ContainerSummary[]> => (await lists, []),
    } as unknown as RuntimeService;
    const reads: string[] = [];
    let state: RuntimeContainerStatus['state'] = 'running';
    let onRead: (() => void) | undefined;
    let inFlight = 0;
    let peak = 0;
    const pleg = new GenericPleg({
      runtime,
      clock: new FakeClock(),
      inspect: async (uid) => {
        reads.push(uid);
        onRead?.();
        peak = Math.max(peak, ++inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
        return status(uid, state);
      },
    });
    const relist = pleg.relist();
    const a1 = pleg.refreshPod('a', 'a', 'default');
    const b = pleg.refreshPod('b', 'b', 'default');
    const a2 = pleg.refreshPod('a', 'a', 'default');
    const a3 = pleg.refreshPod('a', 'a', 'default');
    assert.equal(a2, a1, 'the waiting refresh is joined');
    releaseLists();
    await relist;
    const [e1, , e2, e3] = await Promise.all([a1, b, a2, a3]);
    assert.deepEqual(reads, ['a', 'b'], 'one read per pod');
    assert.equal(peak, 2, 'the two pods were read at the same time');
    assert.deepEqual(
      e1.map((e) => e.type),
      ['ContainerStarted', 'ContainerStarted'],
    );
    assert.equal(e2, e1);
    assert.equal(e3, e1);

    // A change while a's read is under way needs a read after it: not joined.
    state = 'exited';
    let during: Promise<unknown> | undefined;
    onRead = () => {
      onRead = undefined;
      during = pleg.refreshPod('a', 'a', 'default');
    };
    const first = await pleg.refreshPod('a', 'a', 'default');
    const second = (await during) as Awaited<typeof first>;
    assert.deepEqual(reads, ['a', 'b', 'a', 'a']);
    assert.deepEqual(
      first.map((e) => e.type),
      ['ContainerDied'],
    );
    assert.deepEqual(second, []);
  },
);

test('markCacheCurrent: refused before a first relist, and while a pod refresh waits or runs, then moves the cache time', async () => {
  let releaseRead!: () => void;
  const read = new Promise<void>((r) => (releaseRead = r));
  const runtime = { listPodSandboxSummaries: async () => [], listContainerSummaries: async () => [] } as unknown as RuntimeService;
  const pleg = new GenericPleg({
    runtime,
    clock: new FakeClock(),
    inspect: async (uid) => (await read, status(uid, 'running')),
  });
  assert.equal(pleg.markCacheCurrent(50), false, 'no relist has read the runtime yet');
  assert.equal(pleg.cache.currentAsOf(), 0);
  await pleg.relist();
  const refresh = pleg.refreshPod('a', 'a', 'default');
  assert.equal(pleg.markCacheCurrent(100), false, 'a refresh waits');
  await new Promise((r) => setImmediate(r));
  assert.equal(pleg.markCacheCurrent(100), false, 'a refresh is under way');
  releaseRead();
  await refresh;
  await new Promise((r) => setImmediate(r));
  const modified = pleg.cache.freshness('a')!;
  assert.equal(pleg.markCacheCurrent(modified + 5000), true);
  assert.equal(pleg.cache.freshness('a'), modified + 5000);
});

test('holdsNothingOf: only after a first relist, and never for a pod the PLEG has seen or failed to inspect', async () => {
  const labels = { 'io.kubernetes.pod.uid': 'a', 'io.podctl.managed-by': 'podctl' };
  const runtime = {
    listPodSandboxSummaries: async () => [
      {
        id: 's-a',
        metadata: { name: 'a', uid: 'a', namespace: 'default', attempt: 0 },
        state: 'SANDBOX_READY',
        createdAt: 1,
        labels,
        runtimeHandler: '',
      },
    ],
    listContainerSummaries: async () => [],
  } as unknown as RuntimeService;
  const clock = new FakeClock();
  clock.advance(1000);
  let fail = true;
  const pleg = new GenericPleg({
    runtime,
    clock,
    inspect: async (uid) => {
      if (fail) throw new Error('transient');
      return status(uid, 'running');
    },
    onError: () => undefined,
  });
  assert.equal(pleg.holdsNothingOf('new'), false, 'before any relist nothing is known');
  await pleg.relist();
  assert.equal(pleg.holdsNothingOf('new'), true, 'a pod no relist saw');
  // An event names a pod the relist did not see: until its read has run, the pod may exist.
  const read = pleg.refreshPod('late', 'late', 'default');
  assert.equal(pleg.holdsNothingOf('late'), false, 'a pod whose read is waiting is not taken for absent');
  await read.catch(() => undefined);
  assert.equal(pleg.cache.get('a'), undefined, 'its inspection failed');
  assert.equal(pleg.holdsNothingOf('a'), false, 'a listed pod whose inspection failed is not taken for absent');
  fail = false;
  clock.advance(1000);
  await pleg.relist();
  assert.ok(pleg.cache.get('a'));
  assert.equal(pleg.holdsNothingOf('a'), false, 'a pod the cache holds');
});

test(
  'evented PLEG: an event whose sandbox and container states the PLEG already knows, or knows past, reads nothing; one that ' +
    'says something new reads the pod',
  async () => {
    const labels = { 'io.kubernetes.pod.uid': 'a', 'io.podctl.managed-by': 'podctl' };
    const runtime = {
      listPodSandboxSummaries: async () => [
        {
          id: 's-a',
          metadata: { name: 'a', uid: 'a', namespace: 'default', attempt: 0 },
          state: 'SANDBOX_READY',
          createdAt: 1,
          labels,
          runtimeHandler: '',
        },
      ],
      listContainerSummaries: async () => [
        {
          id: 'c-a',
          podSandboxId: 's-a',
          metadata: { name: 'app', attempt: 0 },
          imageRef: '',
          state: 'CONTAINER_RUNNING',
          createdAt: 1,
          labels: { ...labels, 'io.kubernetes.container.name': 'app' },
          imageId: '',
        },
      ],
      getContainerEvents: (h: ContainerEventHandlers) => ((handlers = h), { cancel: () => undefined }),
    } as unknown as RuntimeService;
    let handlers: ContainerEventHandlers | undefined;
    const reads: string[] = [];
    const clock = new FakeClock();
    const generic = new GenericPleg({ runtime, clock, inspect: async (uid) => (reads.push(uid), status(uid, 'running')) });
    await generic.relist();
    assert.deepEqual(reads, ['a']);
    const pleg = new EventedPleg({ runtime, clock, generic });
    pleg.start();
    const event = (state: T.ContainerState): T.ContainerEventResponse =>
      ({
        containerId: 'c-a',
        containerEventType: 'CONTAINER_STARTED_EVENT',
        createdAt: 1,
        podSandboxStatus: { id: 's-a', state: 'SANDBOX_READY', labels, metadata: { name: 'a', uid: 'a', namespace: 'default' } },
        containersStatuses: [{ id: 'c-a', state }],
      }) as unknown as T.ContainerEventResponse;
    handlers!.onEvent(event('CONTAINER_RUNNING'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(reads, ['a'], 'a late event that says nothing new: no read');
    handlers!.onEvent(event('CONTAINER_CREATED'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(reads, ['a'], 'an event overtaken (created, the container known running): no read');
    handlers!.onEvent(event('CONTAINER_EXITED'));
    for (let i = 0; i < 5 && reads.length < 2; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(reads, ['a', 'a'], 'the exit is read');
    pleg.stop();
  },
);

test('refreshPod: a refresh whose news the PLEG has learnt by its turn (a relist read the pod first) reads nothing', async () => {
  let releaseLists!: () => void;
  const lists = new Promise<void>((r) => (releaseLists = r));
  const labels = { 'io.kubernetes.pod.uid': 'a', 'io.podctl.managed-by': 'podctl' };
  const runtime = {
    listPodSandboxSummaries: async () => (
      await lists,
      [
        {
          id: 's-a',
          metadata: { name: 'a', uid: 'a', namespace: 'default', attempt: 0 },
          state: 'SANDBOX_READY',
          createdAt: 1,
          labels,
          runtimeHandler: '',
        },
      ]
    ),
    listContainerSummaries: async () => (
      await lists,
      [
        {
          id: 'c-a',
          podSandboxId: 's-a',
          metadata: { name: 'app', attempt: 0 },
          imageRef: '',
          state: 'CONTAINER_RUNNING',
          createdAt: 1,
          labels,
          imageId: '',
        },
      ]
    ),
  } as unknown as RuntimeService;
  const reads: string[] = [];
  const pleg = new GenericPleg({ runtime, clock: new FakeClock(), inspect: async (uid) => (reads.push(uid), status(uid, 'running')) });
  const relist = pleg.relist();
  const refresh = pleg.refreshPod('a', 'a', 'default', [
    { id: 's-a', state: 'running' },
    { id: 'c-a', state: 'unknown' },
  ]);
  releaseLists();
  await relist;
  assert.deepEqual(await refresh, []);
  assert.deepEqual(reads, ['a'], "the relist's read only");
  // News it does not know (an exit) is read.
  await pleg.refreshPod('a', 'a', 'default', [{ id: 'c-a', state: 'exited' }]);
  assert.deepEqual(reads, ['a', 'a']);
});

test('evented PLEG: an event is not kept while the refresh it asked for waits (only its news is)', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  let releaseLists!: () => void;
  const lists = new Promise<void>((r) => (releaseLists = r));
  let handlers: ContainerEventHandlers | undefined;
  const runtime = {
    listPodSandboxSummaries: async () => (await lists, []),
    listContainerSummaries: async () => (await lists, []),
    getContainerEvents: (h: ContainerEventHandlers) => ((handlers = h), { cancel: () => undefined }),
  } as unknown as RuntimeService;
  const clock = new FakeClock();
  const generic = new GenericPleg({ runtime, clock, inspect: async (uid) => status(uid, 'running') });
  const pleg = new EventedPleg({ runtime, clock, generic });
  pleg.start();
  // A relist holds the turn, so the event's refresh waits.
  const relist = generic.relist();
  const labels = { 'io.kubernetes.pod.uid': 'a', 'io.podctl.managed-by': 'podctl' };
  let ref: WeakRef<object> | undefined;
  (() => {
    const event = {
      containerId: 'c-a',
      containerEventType: 'CONTAINER_STARTED_EVENT',
      createdAt: 1,
      podSandboxStatus: { id: 's-a', state: 'SANDBOX_READY', labels, metadata: { name: 'a', uid: 'a', namespace: 'default' } },
      containersStatuses: [{ id: 'c-a', state: 'CONTAINER_RUNNING' }],
    };
    ref = new WeakRef(event);
    handlers!.onEvent(event as unknown as T.ContainerEventResponse);
  })();
  await new Promise((r) => setImmediate(r));
  gc();
  assert.equal(ref!.deref(), undefined, 'the event was collected while its refresh waited');
  releaseLists();
  await relist;
  pleg.stop();
});

test("relist: a pod whose only news is starts takes the kubelet's newer read when it shows what the lists show; otherwise, and on an exit, the pod is read", async () => {
  let containerState: T.ContainerState = 'CONTAINER_RUNNING';
  const labels = (uid: string) => ({
    'io.kubernetes.pod.uid': uid,
    'io.kubernetes.pod.name': uid,
    'io.kubernetes.pod.namespace': 'default',
    'io.podctl.managed-by': 'podctl',
  });
  const runtime = {
    listPodSandboxSummaries: async (): Promise<PodSandboxSummary[]> =>
      ['a', 'b'].map((uid) => ({
        id: `s-${uid}`,
        metadata: { name: uid, uid, namespace: 'default', attempt: 0 },
        state: 'SANDBOX_READY',
        createdAt: 1,
        labels: labels(uid),
        runtimeHandler: '',
      })),
    listContainerSummaries: async (): Promise<ContainerSummary[]> =>
      ['a', 'b'].map((uid) => ({
        id: `c-${uid}`,
        podSandboxId: `s-${uid}`,
        metadata: { name: 'app', attempt: 0 },
        imageRef: 'busybox',
        state: containerState,
        createdAt: 1,
        labels: { ...labels(uid), 'io.kubernetes.container.name': 'app' },
        imageId: 'sha256:1',
      })),
  } as unknown as RuntimeService;
  const clock = new FakeClock();
  const reads: string[] = [];
  // The kubelet read a after its sync's steps (running, as listed); its read of b is from before the start.
  const latest = new Map<string, RuntimePodStatus>([
    ['a', { ...status('a', 'running'), timestamp: clock.now() }],
    ['b', { ...status('b', 'created'), timestamp: clock.now() }],
  ]);
  const cache = new PodCache();
  for (const [uid, st] of latest) cache.set(uid, st, clock.now());
  const pleg = new GenericPleg({
    runtime,
    clock,
    inspect: async (uid) => (reads.push(uid), status(uid, containerState === 'CONTAINER_RUNNING' ? 'running' : 'exited')),
    cache,
  });
  const started = await pleg.relist();
  assert.deepEqual(started.map((e) => `${e.type} ${e.data}`).sort(), [
    'ContainerStarted c-a',
    'ContainerStarted c-b',
    'ContainerStarted s-a',
    'ContainerStarted s-b',
  ]);
  assert.deepEqual(reads, ['b'], "a is taken from the kubelet's read; b's read shows the container not yet running");
  assert.equal(pleg.cache.get('a'), latest.get('a'));
  assert.equal(pleg.cache.get('b')?.containers[0]?.state, 'running');

  // Both exit; the kubelet's reads now show the exits too, but an exit is always read.
  containerState = 'CONTAINER_EXITED';
  clock.advance(1000);
  for (const uid of ['a', 'b']) cache.set(uid, { ...status(uid, 'exited'), timestamp: clock.now() }, clock.now());
  const died = await pleg.relist();
  assert.deepEqual(died.map((e) => `${e.type} ${e.data}`).sort(), ['ContainerDied c-a', 'ContainerDied c-b']);
  assert.deepEqual(reads.slice(1).sort(), ['a', 'b']);
});

test("relist: the kubelet's read is not taken when it is older than the cache's entry of the pod", async () => {
  const runtime = {
    listPodSandboxSummaries: async (): Promise<PodSandboxSummary[]> => [],
    listContainerSummaries: async (): Promise<ContainerSummary[]> => [
      {
        id: 'c-a',
        podSandboxId: 's-a',
        metadata: { name: 'app', attempt: 0 },
        imageRef: 'busybox',
        state: 'CONTAINER_RUNNING',
        createdAt: 1,
        labels: {
          'io.kubernetes.pod.uid': 'a',
          'io.kubernetes.pod.name': 'a',
          'io.kubernetes.pod.namespace': 'default',
          'io.kubernetes.container.name': 'app',
        },
        imageId: 'sha256:1',
      },
    ],
  } as unknown as RuntimeService;
  const clock = new FakeClock();
  const reads: string[] = [];
  // The kubelet's read (running) was made before an event's refresh, which found the container created.
  const kubeletRead: RuntimePodStatus = { ...status('a', 'running'), sandboxes: [], timestamp: clock.now() };
  let state: RuntimeContainerStatus['state'] = 'created';
  const cache = new PodCache();
  cache.set('a', kubeletRead, clock.now());
  const pleg = new GenericPleg({
    runtime,
    clock,
    inspect: async (uid) => (reads.push(uid), { ...status(uid, state), sandboxes: [], timestamp: clock.now() }),
    cache,
  });
  clock.advance(1000);
  await pleg.refreshPod('a', 'a', 'default');
  state = 'running';
  clock.advance(1000);
  const events = await pleg.relist();
  assert.deepEqual(
    events.map((e) => e.type),
    ['ContainerStarted'],
  );
  assert.deepEqual(reads, ['a', 'a'], "read again: the kubelet's read is older than the entry");
  assert.notEqual(pleg.cache.get('a'), kubeletRead);
  assert.equal(pleg.cache.get('a')?.containers[0]?.state, 'running');
});

test("relist: a pod read by the relist is as fresh as the moment its read began, not the relist's start", async () => {
  const clock = new FakeClock();
  let releaseLists!: () => void;
  const lists = new Promise<void>((r) => (releaseLists = r));
  const runtime = {
    listPodSandboxSummaries: async (): Promise<PodSandboxSummary[]> => (await lists, []),
    listContainerSummaries: async (): Promise<ContainerSummary[]> => (
      await lists,
      [
        {
          id: 'c-a',
          podSandboxId: 's-a',
          metadata: { name: 'app', attempt: 0 },
          imageRef: 'busybox',
          state: 'CONTAINER_RUNNING',
          createdAt: 1,
          labels: {
            'io.kubernetes.pod.uid': 'a',
            'io.kubernetes.pod.name': 'a',
            'io.kubernetes.pod.namespace': 'default',
            'io.kubernetes.container.name': 'app',
          },
          imageId: 'sha256:1',
        },
      ]
    ),
  } as unknown as RuntimeService;
  const pleg = new GenericPleg({ runtime, clock, inspect: async (uid) => ({ ...status(uid, 'running'), sandboxes: [] }) });
  const start = clock.now();
  const relist = pleg.relist();
  // A sync of the pod ends while the lists are under way.
  clock.advance(400);
  const syncEnded = clock.now();
  releaseLists();
  await relist;
  assert.equal(pleg.cache.modifiedAt('a'), syncEnded, 'the read began after the sync ended');
  assert.ok(pleg.cache.freshness('a')! > start);
});
