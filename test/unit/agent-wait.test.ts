import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { realClock } from '../../src/core/clock.js';
import { AgentClient } from '../../src/core/node/client.js';
import { waitForPods } from '../../src/core/node/wait.js';
import { scratchDir } from '../support/e2e.js';

const ref = { namespace: 'default', name: 'web', uid: 'u1', generation: 1 };

function pod(state: 'waiting' | 'running' | 'crash', generation = 1): IPod {
  const s =
    state === 'running'
      ? { running: { startedAt: '2026-11-24T00:00:00Z' } }
      : { waiting: { reason: state === 'crash' ? 'CrashLoopBackOff' : 'ContainerCreating' } };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    status: {
      phase: state === 'running' ? 'Running' : 'Pending',
      observedGeneration: generation,
      containerStatuses: [{ name: 'app', image: 'busybox', imageID: '', ready: false, restartCount: 0, state: s }],
    } as IPod['status'],
  };
}

/** A stand-in agent socket: the watch gets the lines `script` writes; /v1/pods lists `listed`. */
async function fakeAgent(
  dir: string,
  script: (res: ServerResponse) => void,
  opts: { watch?: boolean; listed?: IPod[]; events?: { type: string; reason: string; message: string; lastTimestamp: string }[] } = {},
): Promise<{ client: AgentClient; server: Server; polls: () => number }> {
  let polls = 0;
  const server = createServer((req, res) => {
    if (req.url === '/v1/events?uid=u1') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'EventList', items: opts.events ?? [] }));
      return;
    }
    if (req.url === '/v1/pods?watch=1') {
      if (opts.watch === false) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      script(res);
      return;
    }
    if (req.url?.startsWith('/v1/pods')) {
      polls++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'PodList', items: opts.listed ?? [] }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(join(dir, 'podctl.sock'), r));
  return { client: new AgentClient(dir), server, polls: () => polls };
}

const line = (type: string, object: IPod) => `${JSON.stringify({ type, object })}\n`;

test('waitForPods settles each pod on the first status the watch publishes that settles it, without polling', async () => {
  const dir = scratchDir('agent-wait');
  // Running for a moment, then crashing: the first settling status (Running) is the answer.
  const agent = await fakeAgent(dir.dir, (res) => {
    res.write(line('ADDED', pod('waiting')));
    setTimeout(() => res.write(line('MODIFIED', pod('running')) + line('MODIFIED', pod('crash'))), 20);
  });
  try {
    const [r] = await waitForPods(agent.client, [ref], { waitFor: 'running', timeoutMs: 10_000, clock: realClock });
    assert.equal(r!.ok, true);
    assert.equal(r!.pod?.status?.phase, 'Running');
    assert.equal(agent.polls(), 0);
  } finally {
    agent.server.closeAllConnections();
    agent.server.close();
    dir.cleanup();
  }
});

test('a status of an older generation settles nothing; a pod that cannot start fails at once with its reason', async () => {
  const dir = scratchDir('agent-wait');
  const agent = await fakeAgent(dir.dir, (res) => {
    res.write(line('ADDED', pod('running', 0)));
    setTimeout(() => res.write(line('MODIFIED', pod('crash'))), 20);
  });
  try {
    const [r] = await waitForPods(agent.client, [ref], { waitFor: 'running', timeoutMs: 10_000, clock: realClock });
    assert.deepEqual([r!.ok, r!.reason], [false, 'CrashLoopBackOff']);
  } finally {
    agent.server.closeAllConnections();
    agent.server.close();
    dir.cleanup();
  }
});

test('an agent without the watch is polled instead', async () => {
  const dir = scratchDir('agent-wait');
  const agent = await fakeAgent(dir.dir, () => undefined, { watch: false, listed: [pod('running')] });
  try {
    const [r] = await waitForPods(agent.client, [ref], { waitFor: 'running', timeoutMs: 10_000, clock: realClock, pollMs: 10 });
    assert.equal(r!.ok, true);
    assert.ok(agent.polls() >= 1);
  } finally {
    agent.server.closeAllConnections();
    agent.server.close();
    dir.cleanup();
  }
});

test('a watch that breaks mid-wait is followed by polling, and the pod is still judged', async () => {
  const dir = scratchDir('agent-wait');
  const agent = await fakeAgent(
    dir.dir,
    (res) => {
      res.write(line('ADDED', pod('waiting')));
      setTimeout(() => res.destroy(), 20);
    },
    { listed: [pod('running')] },
  );
  try {
    const [r] = await waitForPods(agent.client, [ref], { waitFor: 'running', timeoutMs: 10_000, clock: realClock, pollMs: 10 });
    assert.equal(r!.ok, true);
    assert.equal(r!.pod?.status?.phase, 'Running');
    assert.ok(agent.polls() >= 1, 'polled after the break');
  } finally {
    agent.server.closeAllConnections();
    agent.server.close();
    dir.cleanup();
  }
});

test("a pod still not running when the time is up is reported with the kubelet's last warning about it", async () => {
  const dir = scratchDir('agent-wait');
  const events = [
    { type: 'Normal', reason: 'Scheduled', message: 'ok', lastTimestamp: '2026-11-24T00:00:01Z' },
    {
      type: 'Warning',
      reason: 'FailedCreatePodSandBox',
      message: 'Failed to create pod sandbox: no runtime for "kata" is configured',
      lastTimestamp: '2026-11-24T00:00:02Z',
    },
  ];
  const agent = await fakeAgent(dir.dir, (res) => res.write(line('ADDED', pod('waiting'))), { events });
  try {
    const [r] = await waitForPods(agent.client, [ref], { waitFor: 'running', timeoutMs: 200, clock: realClock });
    assert.equal(r!.ok, false);
    assert.equal(r!.reason, 'ContainerCreating');
    assert.match(r!.message!, /last warning: FailedCreatePodSandBox: Failed to create pod sandbox: no runtime for "kata" is configured$/);
  } finally {
    agent.server.closeAllConnections();
    agent.server.close();
    dir.cleanup();
  }
});

test('run --detach asks the agent for its pid and log while the pods start, not after they run', async () => {
  const { detachPods } = await import('../../src/cli/run-detach.js');
  const calls: string[] = [];
  let emit: ((e: { type: string; object?: IPod }) => void) | undefined;
  const agent = {
    socket: '/nowhere/podctl.sock',
    running: async () => true,
    apply: async () => (calls.push('apply'), [ref]),
    watchPods: (listener: (e: { type: string; object?: IPod }) => void) => {
      calls.push('watch');
      emit = listener;
      return { cancel: () => undefined };
    },
    info: async () => {
      calls.push('info');
      return { pid: 42, rootDir: '/r', socket: '/r/podctl.sock', log: '/r/agent.log', since: '', pods: 1 };
    },
  } as unknown as AgentClient;
  const lines: string[] = [];
  const writes: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((s: string) => (writes.push(String(s)), true)) as typeof process.stderr.write;
  try {
    const done = detachPods((l) => lines.push(l), agent, [{ file: 'pod.yaml', text: '' }], { 'root-dir': '/r' }, 'running', 10_000, []);
    await new Promise((r) => setImmediate(r));
    // The pod is not running yet, and the agent was already asked.
    assert.deepEqual(calls, ['apply', 'info', 'watch']);
    emit!({ type: 'MODIFIED', object: pod('running') });
    await done;
  } finally {
    process.stderr.write = write;
  }
  assert.equal(lines.length, 1);
  assert.match(writes.join(''), /agent pid 42, log \/r\/agent\.log/);
});
