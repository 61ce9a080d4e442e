import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IContainerStatus, IPod, IPodStatus } from 'kubernetes-models/v1';
import { awaitHandedOver } from '../../src/cli/detach.js';
import { realClock } from '../../src/core/clock.js';
import { PodctlError } from '../../src/core/errors.js';
import type { AgentClient } from '../../src/core/node/client.js';
import { waitForPods, type WaitFor } from '../../src/core/node/wait.js';

const ref = { namespace: 'default', name: 'job', uid: 'u1', generation: 1 };

const running = (name: string): IContainerStatus => ({
  name,
  image: 'busybox',
  imageID: '',
  ready: true,
  restartCount: 0,
  state: { running: { startedAt: '2026-11-24T00:00:00Z' } },
});
const exited = (name: string, exitCode: number, message?: string): IContainerStatus => ({
  name,
  image: 'busybox',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: {
    terminated: {
      exitCode,
      reason: exitCode === 0 ? 'Completed' : 'Error',
      ...(message ? { message } : {}),
      startedAt: '2026-11-24T00:00:00Z',
      finishedAt: '2026-11-24T00:00:01Z',
    },
  },
});
const creating = (name: string): IContainerStatus => ({
  name,
  image: 'busybox',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { waiting: { reason: 'ContainerCreating' } },
});

function pod(phase: IPodStatus['phase'], containers: IContainerStatus[], opts: { ready?: boolean } = {}): IPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'job', namespace: 'default', uid: 'u1' },
    spec: { restartPolicy: 'Never', containers: containers.map((c) => ({ name: c.name, image: 'busybox' })) },
    status: {
      phase,
      observedGeneration: 1,
      conditions: [{ type: 'Ready', status: opts.ready ? 'True' : 'False' }],
      containerStatuses: containers,
    } as IPodStatus,
  };
}

/** An agent whose watch publishes `statuses` in order, one per turn of the event loop. */
function fakeAgent(statuses: IPod[]): AgentClient {
  return {
    socket: '/nowhere/podctl.sock',
    watchPods: (listener: (e: { type: string; object?: IPod }) => void) => {
      let cancelled = false;
      (async () => {
        for (const object of statuses) {
          await new Promise((r) => setImmediate(r));
          if (cancelled) return;
          listener({ type: 'MODIFIED', object });
        }
      })();
      return { cancel: () => (cancelled = true) };
    },
    pods: async () => statuses.slice(-1),
    events: async () => [],
    info: async () => ({ pid: 42, rootDir: '/r', socket: '/r/podctl.sock', log: '/r/agent.log', since: '', pods: 1 }),
  } as unknown as AgentClient;
}

const wait = (statuses: IPod[], waitFor: WaitFor = 'running', timeoutMs = 10_000, settleMs?: number) =>
  waitForPods(fakeAgent(statuses), [ref], { waitFor, timeoutMs, clock: realClock, settleMs });

test('a pod whose first status read is already Succeeded is done, and completed', async () => {
  const [r] = await wait([pod('Succeeded', [exited('app', 0)])]);
  assert.deepEqual([r!.ok, r!.completed], [true, true]);
  const [ready] = await wait([pod('Succeeded', [exited('app', 0)])], 'ready');
  assert.deepEqual([ready!.ok, ready!.completed], [true, true]);
});

test("a pod that fails at once is Failed with its container's exit code and termination message", async () => {
  for (const waitFor of ['running', 'ready'] as const) {
    const [r] = await wait([pod('Pending', [creating('app')]), pod('Failed', [exited('app', 3, 'disk full\n')])], waitFor);
    assert.equal(r!.ok, false);
    assert.equal(r!.reason, 'Error');
    assert.equal(r!.message, 'app: exited with code 3 (Error): disk full');
  }
});

test("a Failed pod with a reason of its own (the active deadline) says the pod's reason", async () => {
  const failed = pod('Failed', [exited('app', 137)]);
  failed.status = {
    ...failed.status,
    reason: 'DeadlineExceeded',
    message: 'Pod was active on the node longer than the specified deadline',
  };
  const [r] = await wait([failed]);
  assert.deepEqual(
    [r!.ok, r!.reason, r!.message],
    [false, 'DeadlineExceeded', 'Pod was active on the node longer than the specified deadline'],
  );
});

test(
  'two containers, one of which has exited 0 and one runs: phase Running ends --wait=running; --wait=ready waits ' + 'for Ready',
  async () => {
    const oneRunning = pod('Running', [exited('writer', 0), running('server')]);
    const [r] = await wait([pod('Pending', [creating('writer'), creating('server')]), oneRunning]);
    assert.equal(r!.ok, true);
    assert.equal(r!.completed, undefined);
    assert.equal(r!.pod?.status?.phase, 'Running');

    // Running but not Ready (the exited container is not ready): --wait=ready goes on, and ends on Ready.
    const [notReady] = await wait([oneRunning], 'ready', 300);
    assert.equal(notReady!.ok, false);
    const [isReady] = await wait([oneRunning, pod('Running', [exited('writer', 0), running('server')], { ready: true })], 'ready');
    assert.equal(isReady!.ok, true);
  },
);

test('a pod still Pending (a container being created) is not running, whatever the others do', async () => {
  const [r] = await wait([pod('Pending', [running('a'), creating('b')])], 'running', 300);
  assert.equal(r!.ok, false);
  assert.equal(r!.reason, 'ContainerCreating');
});

/** The status of a container started just now, as the agent publishes it before the exit is known. */
const justStarted = (name: string): IContainerStatus => ({ ...running(name), state: { running: { startedAt: new Date().toISOString() } } });

test(
  'restartPolicy Never: a Running status of containers just started stands before it settles, so a container that exits at ' +
    'once is judged on its end',
  async () => {
    // Published running, then (containerd's exit seen) Succeeded or Failed: the end is the answer.
    const [done] = await wait([pod('Running', [justStarted('app')]), pod('Succeeded', [exited('app', 0)])], 'running', 10_000, 5_000);
    assert.deepEqual([done!.ok, done!.completed], [true, true]);
    const [failed] = await wait([pod('Running', [justStarted('app')]), pod('Failed', [exited('app', 3)])], 'running', 10_000, 5_000);
    assert.deepEqual([failed!.ok, failed!.message], [false, 'app: exited with code 3 (Error)']);
    // Nothing newer: once it has stood, Running is the answer.
    const [stood] = await wait([pod('Running', [justStarted('app')])], 'running', 10_000, 50);
    assert.deepEqual([stood!.ok, stood!.pod?.status?.phase], [true, 'Running']);
    // A status standing when the time is up is what the pod is.
    const [late] = await wait([pod('Running', [justStarted('app')])], 'running', 100, 60_000);
    assert.equal(late!.ok, true);
  },
);

test('restartPolicy Always: a Running status settles at once (an exit restarts the container; the phase stays Running)', async () => {
  const always = (p: IPod): IPod => ({ ...p, spec: { ...p.spec!, restartPolicy: 'Always' } });
  const [r] = await wait(
    [always(pod('Running', [justStarted('app')])), always(pod('Running', [exited('app', 1)]))],
    'running',
    10_000,
    60_000,
  );
  assert.equal(r!.ok, true);
  assert.equal(r!.pod?.status?.containerStatuses?.[0]?.state?.running !== undefined, true, 'the first Running status is the answer');
});

/** awaitHandedOver with stdout lines collected and stderr captured. */
async function detach(statuses: IPod[]): Promise<{ lines: string[]; stderr: string; error?: PodctlError }> {
  const lines: string[] = [];
  const writes: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((s: string) => (writes.push(String(s)), true)) as typeof process.stderr.write;
  try {
    await awaitHandedOver((l) => lines.push(l), fakeAgent(statuses), [ref], '', { 'root-dir': '/r' }, 'running', 10_000);
    return { lines, stderr: writes.join('') };
  } catch (err) {
    if (!(err instanceof PodctlError)) throw err;
    return { lines, stderr: writes.join(''), error: err };
  } finally {
    process.stderr.write = write;
  }
}

test('run --detach of a pod that completed says "completed" and succeeds', async () => {
  const r = await detach([pod('Succeeded', [exited('app', 0)])]);
  assert.equal(r.error, undefined);
  assert.ok(r.lines.includes('default/job completed'), r.lines.join('\n'));
});

test('run --detach of a pod that failed exits 1 naming the exit code', async () => {
  const r = await detach([pod('Failed', [exited('app', 3)])]);
  assert.equal(r.error?.exitCode, 1);
  assert.match(r.error!.message, /1 of 1 pod\(s\) failed \(Error\)/);
  assert.match(r.stderr, /default\/job: Error: app: exited with code 3 \(Error\)/);
  assert.ok(!r.lines.some((l) => l.endsWith('completed')));
});
