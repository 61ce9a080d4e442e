import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import {
  containerdEventFilters,
  loadContainerdEvents,
  toContainerdEvent,
  type ContainerdEvent,
  type ContainerdEventHandlers,
  type ContainerdEventSource,
} from '../../src/core/cri/containerd-events.js';
import { CriError } from '../../src/core/cri/errors.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { choosePleg, newKubelet } from '../../src/core/node/compose.js';
import { EVENTED_RELIST_PERIOD_MS, GLOBAL_CACHE_UPDATE_PERIOD_MS, MAX_STREAM_FAILURES } from '../../src/core/pleg/evented.js';
import {
  AFTER_DELETE_READ_MS,
  OPEN_GRACE_MS,
  RECONNECT_INITIAL_MS,
  REREAD_DELAYS_MS,
  TASK_DELETE_WAIT_MS,
} from '../../src/core/pleg/containerd.js';
import type { PodLifecycleEvent } from '../../src/core/pleg/generic.js';
import type { Pleg } from '../../src/core/pleg/evented.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RuntimeService } from '../../src/core/cri/client.js';
import { PodStatusReader } from '../../src/core/kuberuntime/pod-status.js';
import protobuf from 'protobufjs';
import { packageRoot } from '../../src/core/paths.js';

const logs = scratchDir('containerd-pleg');
after(() => logs.cleanup());

const pod = parseManifestText(
  'apiVersion: v1\nkind: Pod\nmetadata: {name: cd, namespace: default}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "9"]}\n',
  { kind: 'file', path: '/cd.yaml' },
  { nodeName: 'n' },
).pods[0]!.pod;
const uid = pod.metadata!.uid!;

/** A containerd event service the test drives: each subscription is kept, events and breaks are sent by hand. */
class FakeEvents implements ContainerdEventSource {
  readonly endpoint = 'unix:///fake/containerd.sock';
  readonly subscriptions: { handlers: ContainerdEventHandlers; cancelled: boolean }[] = [];
  subscribe(handlers: ContainerdEventHandlers): { cancel(): void } {
    const s = { handlers, cancelled: false };
    this.subscriptions.push(s);
    return { cancel: () => (s.cancelled = true) };
  }
  private get live() {
    return this.subscriptions.filter((s) => !s.cancelled);
  }
  send(e: Omit<ContainerdEvent, 'namespace' | 'timestamp'>): void {
    for (const s of this.live) s.handlers.onEvent({ namespace: 'k8s.io', timestamp: 0, ...e });
  }
  fail(code = GrpcStatus.UNAVAILABLE): void {
    const err = new CriError('stream broke', { code, method: 'Subscribe', endpoint: this.endpoint, details: 'stream broke' });
    for (const s of this.live) s.handlers.onError(err);
  }
  close(): void {}
}

/** Lets the in-process gRPC calls and promise chains run: event-loop turns, never wall-time sleeps. */
async function until<T>(what: string, fn: () => T | undefined): Promise<T> {
  for (let i = 0; i < 5000; i++) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never: ${what}`);
}
async function turns(n = 200): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

async function setup(opts: { implementEvents?: boolean; kind?: 'containerd' | 'auto' } = {}) {
  const clock = new FakeClock();
  const fake = await FakeRuntime.start({
    clock,
    implementEvents: opts.implementEvents ?? false,
    images: ['docker.io/library/busybox:1.36'],
  });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'n', runtimeName: 'containerd' });
  const events = new FakeEvents();
  const fallbacks: string[] = [];
  const pleg: Pleg = choosePleg(kubelet, opts.kind ?? 'containerd', {
    relistPeriodMs: 1000,
    onFallback: (r) => fallbacks.push(r),
    containerdEvents: () => events,
  });
  const seen: PodLifecycleEvent[] = [];
  pleg.watch((e) => seen.push(e));
  const cleanup = async () => {
    pleg.stop();
    await kubelet.syncTerminatingPod(pod, 0).catch(() => undefined);
    await kubelet.syncTerminatedPod(pod).catch(() => undefined);
    client.close();
    await fake.stop();
  };
  return { clock, fake, client, kubelet, events, fallbacks, pleg, seen, cleanup };
}

/** Starts the PLEG, lets its first relist run and the subscription count as open, then creates the pod. */
async function startWithPod(t: Awaited<ReturnType<typeof setup>>): Promise<{ app: string; sandbox: string }> {
  t.pleg.start();
  t.clock.advance(0);
  await until('the first relist', () => t.events.subscriptions.length === 1);
  t.clock.advance(OPEN_GRACE_MS);
  await t.kubelet.syncPod(pod, 'create');
  const app = t.fake.containers()[0]!.id;
  const sandbox = (await t.client.listPodSandbox())[0]!.id;
  return { app, sandbox };
}

const count = (seen: PodLifecycleEvent[], type: string, id: string) => seen.filter((e) => e.type === type && e.data === id).length;

test('Subscribe filters: the mapped topics in the k8s.io namespace; an envelope maps by topic, an exec exit keeps its exec ID', () => {
  assert.deepEqual(containerdEventFilters(), [
    'namespace=="k8s.io",topic=="/tasks/start"',
    'namespace=="k8s.io",topic=="/tasks/exit"',
    'namespace=="k8s.io",topic=="/tasks/oom"',
    'namespace=="k8s.io",topic=="/tasks/delete"',
    'namespace=="k8s.io",topic=="/containers/create"',
    'namespace=="k8s.io",topic=="/containers/delete"',
  ]);
  const ts = { seconds: 1_700_000_000, nanos: 5_000_000 };
  assert.deepEqual(
    toContainerdEvent({
      topic: '/tasks/exit',
      namespace: 'k8s.io',
      timestamp: ts,
      event: { '@type': 'containerd.events.TaskExit', containerId: 'c1', id: 'c1', exitStatus: 137 },
    }),
    {
      topic: '/tasks/exit',
      namespace: 'k8s.io',
      timestamp: 1_700_000_000_005,
      containerId: 'c1',
      exitStatus: 137,
    },
  );
  assert.equal(toContainerdEvent({ topic: '/tasks/exit', event: { containerId: 'c1', id: 'exec-1' } })?.execId, 'exec-1');
  assert.equal(toContainerdEvent({ topic: '/containers/delete', event: { id: 'c2' } })?.containerId, 'c2');
  assert.equal(toContainerdEvent({ topic: '/snapshot/prepare', event: {} }), undefined);
});

test("Subscribe's codec: the request's filters and an Envelope's payload as containerd's source .proto reads them, by its type URL", async () => {
  const codec = await loadContainerdEvents();
  // The reference: protobufjs's reflection of the hand-written proto (what the static module is generated from).
  const source = protobuf.loadSync(join(packageRoot(), 'proto', 'containerd', 'events-service.proto'));
  const Request = source.lookupType('containerd.services.events.v1.SubscribeRequest');
  const filters = containerdEventFilters();
  assert.deepEqual(Request.toObject(Request.decode(codec.encode({ filters }))), { filters });
  const Envelope = source.lookupType('containerd.services.events.v1.Envelope');
  const Any = source.lookupType('google.protobuf.Any');
  const TaskExit = source.lookupType('containerd.events.TaskExit');
  const exit = TaskExit.encode(
    TaskExit.fromObject({
      containerId: 'c1',
      id: 'exec-1',
      pid: 42,
      exitStatus: 137,
      exitedAt: { seconds: 1_700_000_001, nanos: 7_000_000 },
    }),
  ).finish();
  const envelope = (typeUrl: string, value: Uint8Array) =>
    Buffer.from(
      Envelope.encode(
        Envelope.fromObject({
          timestamp: { seconds: 1_700_000_002 },
          namespace: 'k8s.io',
          topic: '/tasks/exit',
          event: Any.fromObject({ type_url: typeUrl, value }),
        }),
      ).finish(),
    );
  for (const typeUrl of ['containerd.events.TaskExit', 'type.googleapis.com/containerd.events.TaskExit']) {
    const decoded = codec.decode(envelope(typeUrl, exit));
    assert.equal(decoded.event?.['@type'], 'containerd.events.TaskExit');
    assert.deepEqual(toContainerdEvent(decoded), {
      topic: '/tasks/exit',
      namespace: 'k8s.io',
      timestamp: 1_700_000_002_000,
      containerId: 'c1',
      execId: 'exec-1',
      exitStatus: 137,
      exitedAt: 1_700_000_001_007,
    });
  }
  // A payload of a type podctl does not declare keeps only its type.
  assert.deepEqual(codec.decode(envelope('containerd.events.SnapshotPrepare', Buffer.from([10, 1, 120]))).event, {
    '@type': 'containerd.events.SnapshotPrepare',
  });
});

test(
  'an OOM kill: after TaskOOM, the exit is reported once the CRI records OOMKilled, so the first status of the death has ' + 'its reason',
  async () => {
    const t = await setup();
    try {
      const { app } = await startWithPod(t);
      t.events.send({ topic: '/tasks/start', containerId: app });
      await until('ContainerStarted', () => count(t.seen, 'ContainerStarted', app) === 1);
      t.events.send({ topic: '/tasks/oom', containerId: app });
      // The exit lands in the CRI as Error first; its TaskOOM handler relabels it a moment later.
      t.fake.exitContainer(app, 137, { reason: 'Error' });
      t.events.send({ topic: '/tasks/exit', containerId: app, exitStatus: 137 });
      await turns();
      assert.equal(count(t.seen, 'ContainerDied', app), 0, 'not reported while the CRI still says Error');
      t.fake.relabelExit(app, 'OOMKilled');
      t.clock.advance(REREAD_DELAYS_MS[0]!);
      await until('ContainerDied', () => count(t.seen, 'ContainerDied', app) === 1);
      assert.equal(t.pleg.cache.get(uid)?.containers[0]?.reason, 'OOMKilled');
    } finally {
      await t.cleanup();
    }
  },
);

test(
  'containerd-events PLEG: a task exit refreshes its pod and gives one ContainerDied, without a relist; the next relist does ' +
    'not repeat it',
  async () => {
    const t = await setup();
    try {
      const { app } = await startWithPod(t);
      t.events.send({ topic: '/tasks/start', containerId: app });
      await until('ContainerStarted', () => count(t.seen, 'ContainerStarted', app) === 1);
      t.fake.resetCalls();
      t.fake.exitContainer(app, 2);
      t.events.send({ topic: '/tasks/exit', containerId: app, exitStatus: 2 });
      const died = await until('ContainerDied', () => t.seen.find((e) => e.type === 'ContainerDied' && e.data === app));
      assert.equal(died.containerName, 'app');
      assert.equal(died.id, uid);
      assert.equal(t.pleg.cache.get(uid)?.containers[0]?.exitCode, 2);
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 0, 'reported from the event, before any read');
      await turns();
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 0, 'no read before the task is deleted (the CRI records the exit then)');
      t.events.send({ topic: '/tasks/delete', containerId: app, exitStatus: 2 });
      await turns();
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 0, 'the CRI writes its record after TaskDelete: the read waits a little');
      t.clock.advance(AFTER_DELETE_READ_MS);
      await until('the pod read once', () => (t.fake.calls().ListPodSandbox ?? 0) === 1);
      await turns();
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 1, 'one pod status read (the CRI had recorded it), no relist');
      t.events.send({ topic: '/tasks/delete', containerId: app, exitStatus: 2 });
      await turns();
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 1, 'a second TaskDelete of a settled exit reads nothing');
      assert.equal(t.pleg.source, 'containerd-events');
      // The safety-net relist (300 s) finds the same state: nothing twice.
      t.fake.resetCalls();
      t.clock.advance(EVENTED_RELIST_PERIOD_MS);
      await until('the safety-net relist', () => (t.fake.calls().ListContainers ?? 0) >= 1);
      await turns();
      assert.equal(count(t.seen, 'ContainerDied', app), 1);
      assert.equal(count(t.seen, 'ContainerStarted', app), 1);
      assert.deepEqual(t.fallbacks, []);
      // Quiet for 4 minutes: healthy (the threshold is 10 minutes beside a 300 s relist, not the generic 3).
      t.clock.advance(4 * 60_000);
      assert.equal(t.pleg.healthy().ok, true, t.pleg.healthy().message);
    } finally {
      await t.cleanup();
    }
  },
);

test(
  'containerd-events PLEG: while its stream is up and no event is being handled, the pod cache is marked current every 5 s ' +
    '(updateGlobalCache), so a resync reads no runtime',
  async () => {
    const t = await setup();
    try {
      const { app } = await startWithPod(t);
      t.events.send({ topic: '/tasks/start', containerId: app });
      await until('ContainerStarted', () => count(t.seen, 'ContainerStarted', app) === 1);
      await until('the running container cached', () => t.pleg.cache.get(uid)?.containers.find((c) => c.state === 'running'));
      await turns();
      // The pod synced after its last refresh: without a newer cache its next sync reads the runtime.
      t.clock.advance(1000);
      await t.kubelet.syncPod(pod, 'sync');
      const syncedAt = t.clock.now();
      t.clock.advance(GLOBAL_CACHE_UPDATE_PERIOD_MS);
      assert.ok(t.pleg.cache.freshness(uid)! > syncedAt, 'marked current by a tick after the sync');
      t.fake.resetCalls();
      await t.kubelet.syncPod(pod, 'sync');
      assert.deepEqual(t.fake.calls(), {}, 'the resync used the cache');
      // An event still being handled (a container new to the PLEG, looked up in the CRI): its pod may not be
      // in the cache yet, so no tick marks the cache current until that handling is over.
      t.fake.hang('ContainerStatus');
      t.events.send({ topic: '/tasks/start', containerId: 'new-container' });
      await turns();
      const before = t.pleg.cache.freshness(uid)!;
      t.clock.advance(GLOBAL_CACHE_UPDATE_PERIOD_MS);
      assert.equal(t.pleg.cache.freshness(uid), before, 'not marked while an event is being handled');
      t.fake.unhang('ContainerStatus');
      await turns();
      t.clock.advance(GLOBAL_CACHE_UPDATE_PERIOD_MS);
      assert.ok(t.pleg.cache.freshness(uid)! > before, 'marked again once it is handled');
    } finally {
      await t.cleanup();
    }
  },
);

test("containerd-events PLEG: TaskExit is reported at once with the event's code and time while the CRI lags, read again until the CRI records it, never twice; an exec exit is ignored", async () => {
  const t = await setup();
  try {
    const { app } = await startWithPod(t);
    t.events.send({ topic: '/tasks/start', containerId: app });
    await until('ContainerStarted', () => count(t.seen, 'ContainerStarted', app) === 1);
    t.fake.resetCalls();
    t.events.send({ topic: '/tasks/exit', containerId: app, execId: 'probe-exec', exitStatus: 0 });
    await turns();
    assert.equal(t.fake.calls().ListPodSandbox ?? 0, 0, 'an exec exit reads nothing');
    // containerd says exited; the CRI still says running.
    const exitedAt = t.clock.now() - 3;
    t.events.send({ topic: '/tasks/exit', containerId: app, exitStatus: 1, exitedAt });
    await until('ContainerDied from the event', () => count(t.seen, 'ContainerDied', app) === 1);
    assert.equal((await t.client.containerStatus(app)).status?.state, 'CONTAINER_RUNNING', 'the CRI has not recorded it');
    const cached = t.pleg.cache.get(uid)!.containers.find((c) => c.id === app)!;
    assert.deepEqual([cached.state, cached.exitCode, cached.finishedAt, cached.reason], ['exited', 1, exitedAt, 'Error']);
    // SyncPod's own read and a relist in the lag see the exit too: no restart is missed, no start reported.
    const read = await t.kubelet.runtimeManager.getPodStatus(uid, 'cd', 'default');
    assert.equal(read.containers.find((c) => c.id === app)?.state, 'exited');
    await t.pleg.relist();
    assert.equal(count(t.seen, 'ContainerStarted', app), 1);
    // The CRI deletes the task, containerd says so, and only then records the exit: the first read lags.
    t.fake.resetCalls();
    t.events.send({ topic: '/tasks/delete', containerId: app, exitStatus: 1 });
    await turns();
    t.clock.advance(AFTER_DELETE_READ_MS);
    await until('a read on TaskDelete', () => (t.fake.calls().ListPodSandbox ?? 0) === 1);
    await turns();
    t.fake.exitContainer(app, 1);
    for (const d of REREAD_DELAYS_MS.slice(0, 3)) {
      t.clock.advance(d);
      await turns();
    }
    assert.equal(t.kubelet.runtimeManager.statusReader.earlyExits.size, 0, 'the CRI agrees: nothing left ahead of it');
    assert.equal(t.fake.calls().ListPodSandbox ?? 0, 2, 'read again after the first delay, then settled');
    t.clock.advance(EVENTED_RELIST_PERIOD_MS);
    await turns();
    assert.equal(count(t.seen, 'ContainerDied', app), 1);
    assert.equal(t.seen.filter((e) => e.type === 'PodSync').length, 0, 'the CRI recorded what the event said');
  } finally {
    await t.cleanup();
  }
});

test('containerd-events PLEG: when the CRI records more than TaskExit said (a message), the pod gets a PodSync', async () => {
  const t = await setup();
  try {
    const { app } = await startWithPod(t);
    t.events.send({ topic: '/tasks/start', containerId: app });
    await until('ContainerStarted', () => count(t.seen, 'ContainerStarted', app) === 1);
    t.events.send({ topic: '/tasks/exit', containerId: app, exitStatus: 2, exitedAt: t.clock.now() });
    await until('ContainerDied from the event', () => count(t.seen, 'ContainerDied', app) === 1);
    t.fake.exitContainer(app, 2, { message: 'disk full' });
    t.events.send({ topic: '/tasks/delete', containerId: app, exitStatus: 2 });
    await turns();
    t.clock.advance(AFTER_DELETE_READ_MS);
    const sync = await until('PodSync', () => t.seen.find((e) => e.type === 'PodSync'));
    assert.equal(sync.id, uid);
    assert.equal(t.pleg.cache.get(uid)!.containers.find((c) => c.id === app)?.message, 'disk full');
    assert.equal(count(t.seen, 'ContainerDied', app), 1);
  } finally {
    await t.cleanup();
  }
});

test(
  'containerd-events PLEG: with no TaskDelete the exit is settled after TASK_DELETE_WAIT_MS; a sandbox exit is read once at ' +
    'once, the rest waits for its TaskDelete',
  async () => {
    const t = await setup();
    try {
      const { app, sandbox } = await startWithPod(t);
      t.events.send({ topic: '/tasks/start', containerId: app });
      await until('ContainerStarted', () => count(t.seen, 'ContainerStarted', app) === 1);
      t.fake.resetCalls();
      t.events.send({ topic: '/tasks/exit', containerId: app, exitStatus: 0, exitedAt: t.clock.now() });
      await until('ContainerDied from the event', () => count(t.seen, 'ContainerDied', app) === 1);
      t.fake.exitContainer(app, 0);
      t.clock.advance(TASK_DELETE_WAIT_MS - 1);
      await turns();
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 0, 'waiting for TaskDelete');
      t.clock.advance(1);
      await until('read after the wait', () => t.kubelet.runtimeManager.statusReader.earlyExits.size === 0);
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 1);
      // The sandbox: no early exit, so one read at once; the CRI still says ready.
      t.fake.resetCalls();
      t.events.send({ topic: '/tasks/exit', containerId: sandbox, exitStatus: 137, exitedAt: t.clock.now() });
      await until('one read', () => (t.fake.calls().ListPodSandbox ?? 0) === 1);
      for (const d of REREAD_DELAYS_MS.slice(0, 4)) {
        t.clock.advance(d);
        await turns();
      }
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 1, 'no polling while the task is not deleted');
      assert.equal(count(t.seen, 'ContainerDied', sandbox), 0);
      await t.client.stopPodSandbox(sandbox);
      t.events.send({ topic: '/tasks/delete', containerId: sandbox, exitStatus: 137 });
      await turns();
      t.clock.advance(AFTER_DELETE_READ_MS);
      await until('the sandbox death', () => count(t.seen, 'ContainerDied', sandbox) === 1);
      t.clock.advance(TASK_DELETE_WAIT_MS);
      await turns();
      assert.equal(count(t.seen, 'ContainerDied', sandbox), 1);
      assert.equal(t.fake.calls().ListPodSandbox ?? 0, 2, 'the wait was cancelled by TaskDelete');
    } finally {
      await t.cleanup();
    }
  },
);

test("containerd-events PLEG: a container new since the last relist is found through the CRI; another client's is ignored", async () => {
  const t = await setup();
  try {
    const { app } = await startWithPod(t);
    // The relist never saw app: the event alone finds its pod.
    t.events.send({ topic: '/tasks/start', containerId: app });
    const started = await until('ContainerStarted', () => t.seen.find((e) => e.type === 'ContainerStarted' && e.data === app));
    assert.equal(started.id, uid);
    t.fake.seed({
      pods: 1,
      containersPerPod: 1,
      labels: () => ({ 'io.kubernetes.pod.uid': 'other', 'io.kubernetes.pod.name': 'other', 'io.kubernetes.pod.namespace': 'x' }),
    });
    const other = t.fake.containers().find((c) => c.id !== app)!.id;
    t.events.send({ topic: '/tasks/start', containerId: other });
    t.events.send({ topic: '/tasks/start', containerId: other });
    await turns();
    assert.ok(!t.seen.some((e) => e.data === other));
  } finally {
    await t.cleanup();
  }
});

test('containerd-events PLEG: a stream that cannot be opened hands over to the generic PLEG at once, said once', async () => {
  const t = await setup();
  try {
    t.pleg.start();
    t.clock.advance(0);
    await until('subscribed', () => t.events.subscriptions.length === 1);
    t.events.fail();
    t.events.fail();
    assert.equal(t.fallbacks.length, 1);
    assert.match(t.fallbacks[0]!, /containerd's event stream cannot be opened .*: using the generic PLEG \(relist every 1 s\)/);
    assert.equal(t.pleg.source, 'relist');
    t.fake.resetCalls();
    t.clock.advance(1000);
    await until('relisting every second', () => (t.fake.calls().ListContainers ?? 0) >= 1);
    assert.equal(t.events.subscriptions.length, 1, 'not reopened');
  } finally {
    await t.cleanup();
  }
});

test(
  'containerd-events PLEG: a broken stream reconnects with backoff and relists once reopened (a death while it was down is ' +
    'seen once); 5 breaks in a row fall back',
  async () => {
    const t = await setup();
    try {
      const { app } = await startWithPod(t);
      t.events.send({ topic: '/tasks/start', containerId: app });
      await until('ContainerStarted', () => count(t.seen, 'ContainerStarted', app) === 1);
      t.events.fail();
      // The container dies while no stream is open: no event will tell.
      t.fake.exitContainer(app, 137);
      t.clock.advance(RECONNECT_INITIAL_MS - 1);
      assert.equal(t.events.subscriptions.length, 1, 'no reconnect before the backoff');
      t.clock.advance(1);
      assert.equal(t.events.subscriptions.length, 2, 'reconnected after 1 s');
      t.clock.advance(OPEN_GRACE_MS);
      await until('ContainerDied from the relist after the reconnect', () => count(t.seen, 'ContainerDied', app) === 1);
      // The same exit's event arriving late changes nothing.
      t.events.send({ topic: '/tasks/exit', containerId: app, exitStatus: 137 });
      await turns();
      assert.equal(count(t.seen, 'ContainerDied', app), 1);
      assert.equal(t.pleg.source, 'containerd-events');
      // Breaks right after each reopen: backoff 2 s, 4 s, 8 s, then the fifth in a row falls back.
      let delay = 2 * RECONNECT_INITIAL_MS;
      for (let i = 2; i <= MAX_STREAM_FAILURES; i++) {
        t.events.fail();
        if (i === MAX_STREAM_FAILURES) break;
        const before: number = t.events.subscriptions.length;
        t.clock.advance(delay - 1);
        assert.equal(t.events.subscriptions.length, before);
        t.clock.advance(1);
        assert.equal(t.events.subscriptions.length, before + 1);
        delay *= 2;
      }
      assert.equal(t.fallbacks.length, 1);
      assert.match(t.fallbacks[0]!, /broke 5 times/);
      assert.equal(t.pleg.source, 'relist');
    } finally {
      await t.cleanup();
    }
  },
);

test("--pleg auto on containerd: CRI GetContainerEvents UNIMPLEMENTED hands over to containerd's events, said once", async () => {
  const t = await setup({ kind: 'auto', implementEvents: false });
  try {
    t.pleg.start();
    t.clock.advance(0);
    await until('the handover', () => t.events.subscriptions.length === 1);
    assert.equal(t.pleg.source, 'containerd-events');
    assert.deepEqual(t.fallbacks, ["the runtime does not implement GetContainerEvents: using containerd's event service"]);
    t.clock.advance(OPEN_GRACE_MS);
    await t.kubelet.syncPod(pod, 'create');
    const app = t.fake.containers()[0]!.id;
    t.events.send({ topic: '/tasks/start', containerId: app });
    await until("ContainerStarted through the evented PLEG's listeners", () => count(t.seen, 'ContainerStarted', app) === 1);
  } finally {
    await t.cleanup();
  }
});

test("an early exit's status: the event's code, time and reason, the termination message the container wrote, else why podctl killed it", () => {
  const reader = new PodStatusReader({ runtime: {} as RuntimeService, clock: new FakeClock() });
  const file = join(logs.dir, 'termination-log');
  writeFileSync(file, 'bye');
  const c = {
    id: 'c1',
    name: 'app',
    state: 'running',
    createdAt: 1,
    image: 'busybox',
    imageRef: '',
    imageId: '',
    hash: '',
    restartCount: 0,
    kind: 'app',
    terminationMessageFile: file,
  } as const;
  const exit = { exitCode: 3, finishedAt: 1234, reason: 'Error' };
  assert.deepEqual(reader.exitedStatus(c, exit), { ...c, state: 'exited', exitCode: 3, finishedAt: 1234, reason: 'Error', message: 'bye' });
  reader.noteKillMessage('c2', 'Container app failed liveness probe, will be restarted');
  assert.equal(
    reader.exitedStatus({ ...c, id: 'c2', terminationMessageFile: join(logs.dir, 'absent') }, exit).message,
    'Container app failed liveness probe, will be restarted',
  );
});
