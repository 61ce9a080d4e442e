import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet, createPleg } from '../../src/core/node/compose.js';
import { SyncLoop } from '../../src/core/loop.js';
import type { RuntimeContainerStatus } from '../../src/core/container/types.js';
import type { PodLifecycleEvent } from '../../src/core/pleg/generic.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { formatCalls, formatTraceEvent, Tracer, type TraceEvent } from '../../src/core/trace.js';
import { scratchDir } from '../support/e2e.js';

let fake: FakeRuntime;
const clock = new FakeClock();
const logs = scratchDir('trace-logs');

before(async () => {
  fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
});
after(async () => {
  await fake.stop();
  logs.cleanup();
});

function pod(name: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;
  return parseManifestText(text, { kind: 'file', path: `/trace/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
}

/**
 * Moves the clock in small steps, letting gRPC round trips finish between
 * moves, until cond holds, or fails after 30 s of real time. A loaded
 * machine makes a relist's round trip span more clock moves, never a
 * different order of events; so no step count bounds the wait.
 */
async function until(what: string, cond: () => boolean, stepMs = 100): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`never: ${what}`);
    clock.advance(stepMs);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const methods = (e: TraceEvent) => (e.type === 'worker' || e.type === 'housekeeping' ? e.calls.map((c) => c.method) : []);
const WRITES = new Set([
  'RunPodSandbox',
  'StopPodSandbox',
  'RemovePodSandbox',
  'CreateContainer',
  'StartContainer',
  'StopContainer',
  'RemoveContainer',
  'PullImage',
]);
const writes = (e: TraceEvent) => methods(e).filter((m) => WRITES.has(m));

test("trace: each branch of the loop, each worker's outcome, steps and its own CRI calls, in order", async () => {
  const events: TraceEvent[] = [];
  const exitCode = (e: PodLifecycleEvent): number | undefined =>
    pleg.cache.get(e.id)?.containers.find((c: RuntimeContainerStatus) => c.id === e.data)?.exitCode;
  const tracer = new Tracer({ clock, emit: (e) => events.push(e), quiet: true, exitCode });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000, observer: tracer.observeCall });
  const kubelet = newKubelet({
    runtime: client,
    images: client,
    clock,
    logRoot: logs.dir,
    nodeName: 'unit',
    agent: 'trace-unit',
    trace: tracer,
    removeOrphans: true,
  });
  tracer.attach(kubelet);
  const pleg = createPleg(kubelet);
  const loop = new SyncLoop({ kubelet, pleg, clock, trace: tracer });
  // A leftover of this agent that no source wants: housekeeping cleans it.
  const stale = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'trace-unit' });
  await stale.syncPod(pod('stale'), 'create');
  loop.start();
  try {
    const a = pod('a');
    const b = pod('b');
    loop.handleUpdate({ op: 'ADD', source: 'file', pods: [a, b] });
    await kubelet.workers.waitIdle();
    // Metadata only: quiet leaves it out, as it syncs nothing.
    loop.handleUpdate({ op: 'RECONCILE', source: 'file', pods: [b] });
    const traced = (type: string, pod: string, event?: string) => () =>
      events.some(
        (e) =>
          e.type === type &&
          (e.type !== 'pleg' || (e.event === event && e.pod.name === pod && e.container === 'app')) &&
          (e.type !== 'housekeeping' || e.removedPods.includes(`default/${pod}`)),
      );
    await until("the PLEG saw a's app start", traced('pleg', 'a', 'ContainerStarted'));
    await until('housekeeping removed the stale pod', traced('housekeeping', 'stale'));
    await kubelet.workers.waitIdle();
    const died = fake.containers().find((c) => c.state === 'CONTAINER_RUNNING' && c.labels['io.kubernetes.pod.name'] === 'a')!;
    fake.exitContainer(died.id, 137);
    await until("the PLEG saw a's app die", traced('pleg', 'a', 'ContainerDied'));
    await kubelet.workers.waitIdle();
    loop.handleUpdate({ op: 'REMOVE', source: 'file', pods: [a] });
    await kubelet.workers.waitIdle();

    const byType = (type: TraceEvent['type']) => events.filter((e) => e.type === type);
    const config = byType('config');
    assert.deepEqual(
      config.map((e) => e.type === 'config' && [e.op, e.source, e.pods.map((p) => p.name)]),
      [
        ['ADD', 'file', ['a', 'b']],
        ['REMOVE', 'file', ['a']],
      ],
    );

    const workers = events.filter((e): e is Extract<TraceEvent, { type: 'worker' }> => e.type === 'worker');
    const created = workers.filter((w) => w.update === 'create');
    assert.deepEqual(created.map((w) => w.pod.name).sort(), ['a', 'b']);
    for (const w of created) {
      assert.equal(w.outcome, 'ok');
      assert.deepEqual(
        w.steps.map((s) => `${s.action} ${s.target}`),
        [`KillPod ${w.pod.name}`, `CreatePodSandbox ${w.pod.name}`, 'StartContainer app'],
      );
      // Two lanes ran at once: each has exactly its own writes.
      assert.deepEqual(writes(w), ['RunPodSandbox', 'CreateContainer', 'StartContainer'], `${w.pod.name}: its own calls only`);
    }

    assert.deepEqual(
      byType('pleg').filter((e) => e.type === 'pleg' && e.pod.name === 'stale'),
      [],
      'PLEG events of pods this agent does not run are left out',
    );
    const hk = byType('housekeeping');
    assert.equal(hk.length, 1, 'only the pass that cleaned something is traced');
    assert.ok(hk[0]!.type === 'housekeeping' && hk[0]!.removedPods.includes('default/stale'));
    assert.ok(writes(hk[0]!).includes('RemovePodSandbox'));

    const diedAt = events.findIndex((e) => e.type === 'pleg' && e.event === 'ContainerDied' && e.pod.name === 'a');
    assert.ok(diedAt > 0, 'the PLEG ContainerDied is traced');
    const diedEvent = events[diedAt]!;
    assert.ok(diedEvent.type === 'pleg' && diedEvent.container === 'app' && diedEvent.dispatched);
    const restart = workers.find(
      (w, i) => w.pod.name === 'a' && w.update === 'sync' && events.indexOf(w) > diedAt && w.steps.length > 0 && i >= 0,
    )!;
    assert.deepEqual(
      restart.steps.map((s) => `${s.action} ${s.target}`),
      ['StartContainer app'],
    );
    assert.deepEqual(writes(restart), ['CreateContainer', 'StartContainer']);

    const removeAt = events.findIndex((e) => e.type === 'config' && e.op === 'REMOVE');
    assert.ok(removeAt > events.indexOf(restart), 'ADD, ContainerDied, restart, REMOVE, cleanup: in that order');
    const cleanup = workers.filter((w) => events.indexOf(w) > removeAt);
    assert.deepEqual(
      cleanup.map((w) => `${w.pod.name} ${w.work}(${w.update}) ${w.outcome}`),
      ['a terminating(kill) ok', 'a terminated(kill) ok'],
    );
    assert.deepEqual(writes(cleanup[0]!), ['StopContainer', 'StopPodSandbox']);
    assert.ok(writes(cleanup[1]!).includes('RemovePodSandbox'));

    // The human lines say the same.
    const lines = events.map(formatTraceEvent);
    assert.match(lines[0]!, /^\d\d:\d\d:\d\d\.\d{3} config ADD \(file\) → default\/a, default\/b$/);
    assert.match(lines[diedAt]!, /pleg ContainerDied default\/a app \(exit 137\) → sync default\/a$/);
    assert.match(
      formatTraceEvent(restart),
      /worker default\/a sync\(sync\) ok \d+ms: StartContainer app \| .*CreateContainer [\d.]+ms, StartContainer [\d.]+ms/,
    );
    for (const e of events) assert.deepEqual(JSON.parse(JSON.stringify(e)), e, 'every event is plain JSON');
  } finally {
    await loop.stop();
    await kubelet.workers.waitIdle();
    const b = pod('b');
    await kubelet.syncTerminatingPod(b, 0);
    await kubelet.syncTerminatedPod(b);
    client.close();
  }
});

test('the sync tick traces the pods due; a failed worker says why', async () => {
  const events: TraceEvent[] = [];
  const tracer = new Tracer({ clock, emit: (e) => events.push(e), quiet: true });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000, observer: tracer.observeCall });
  const kubelet = newKubelet({
    runtime: client,
    images: client,
    clock,
    logRoot: logs.dir,
    nodeName: 'unit',
    agent: 'trace-unit-2',
    trace: tracer,
    backOffPeriodMs: 3000,
  });
  tracer.attach(kubelet);
  const loop = new SyncLoop({ kubelet, pleg: createPleg(kubelet), clock, trace: tracer });
  loop.start();
  const p = pod('flaky');
  try {
    fake.failNext('RunPodSandbox', 14, 'sandbox trouble');
    loop.addPods([p]);
    await kubelet.workers.waitIdle();
    const failed = events.find((e) => e.type === 'worker');
    assert.ok(failed?.type === 'worker' && failed.outcome === 'error');
    assert.match(failed.error!, /sandbox trouble/);
    assert.deepEqual(writes(failed), ['RunPodSandbox']);
    assert.equal(failed.calls.find((c) => c.method === 'RunPodSandbox')?.error !== undefined, true);
    assert.match(formatTraceEvent(failed), /worker default\/flaky sync\(create\) error: .*sandbox trouble/);
    await until('the sync tick retried the pod', () => events.some((e) => e.type === 'worker' && e.outcome === 'ok'));
    await kubelet.workers.waitIdle();
    const tick = events.find((e) => e.type === 'sync');
    assert.ok(tick?.type === 'sync');
    assert.deepEqual(
      tick.due.map((d) => d.name),
      ['flaky'],
    );
    assert.match(formatTraceEvent(tick), /sync tick → default\/flaky$/);
    const retried = events.filter((e) => e.type === 'worker').at(-1)!;
    assert.ok(retried.type === 'worker' && retried.outcome === 'ok' && events.indexOf(retried) > events.indexOf(tick));
  } finally {
    await loop.stop();
    await kubelet.workers.waitIdle();
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
    client.close();
  }
});

test('probe results go through the same tracer (the hook the probe branch calls)', () => {
  const events: TraceEvent[] = [];
  const tracer = new Tracer({ clock, emit: (e) => events.push(e) });
  tracer.probeResult({ uid: 'u-1', container: 'app', probe: 'liveness', result: 'failure', dispatched: true });
  assert.equal(
    formatTraceEvent(events[0]!),
    `${new Date(clock.now()).toISOString().slice(11, 23)} probe liveness u-1 app: failure → sync u-1`,
  );
});

test('CRI calls are grouped by method in the order first made', () => {
  assert.equal(
    formatCalls([
      { method: 'ListContainers', durationMs: 2.25 },
      { method: 'RunPodSandbox', durationMs: 140 },
      { method: 'ListContainers', durationMs: 1.5 },
      { method: 'StartContainer', durationMs: 3, error: 'boom' },
    ]),
    'ListContainers×2 3.8ms, RunPodSandbox 140ms, StartContainer 3.0ms (1 failed)',
  );
});
