import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { deleteThroughAgent, watchForRemoval } from '../../src/cli/delete.js';
import { AgentRequestError } from '../../src/core/node/client.js';

type Event = { type: string; object: IPod };

/** An agent keeping pods by namespace/name: its list, its watch, and deletes that end when `remove` says so. */
function fakeAgent(pods: IPod[], opts: { deleteStatus?: number; watchBreaks?: boolean; onRead?: (reads: number) => void } = {}) {
  let kept = [...pods];
  const watchers = new Set<(e: Event) => void>();
  const calls = { pods: 0, delete: 0, watches: 0, cancelled: 0 };
  return {
    calls,
    async pods() {
      calls.pods++;
      const answer = kept;
      opts.onRead?.(calls.pods);
      return answer;
    },
    async delete(): Promise<{ uid?: string }> {
      calls.delete++;
      if (opts.deleteStatus) throw new AgentRequestError(opts.deleteStatus, 'refused');
      return {};
    },
    watchPods(onEvent: (e: Event) => void, onEnd: (err?: Error) => void) {
      calls.watches++;
      if (opts.watchBreaks) setImmediate(() => onEnd(new Error('GET /v1/pods?watch=1: HTTP 404')));
      else watchers.add(onEvent);
      return { cancel: () => (calls.cancelled++, watchers.delete(onEvent)) };
    },
    /** The agent has terminated and removed the pod: gone from the list, DELETED on the watch, in the same tick. */
    remove(name: string) {
      const pod = kept.find((p) => p.metadata?.name === name)!;
      kept = kept.filter((p) => p !== pod);
      for (const w of watchers) w({ type: 'DELETED', object: pod });
    },
  };
}

const pod = (name: string, uid: string): IPod =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', uid }, spec: { containers: [] } }) as IPod;

test('delete through the agent returns as the watch reports the pod removed, not at the next read of the list', async () => {
  const agent = fakeAgent([pod('web', 'u1'), pod('db', 'u2')]);
  // Polls an hour apart: only the watch can end the wait within the test's time.
  const done = deleteThroughAgent(agent, 'default', 'web', 5, { pollMs: 3_600_000 });
  await new Promise((r) => setImmediate(r));
  assert.equal(agent.calls.delete, 1);
  const readsBefore = agent.calls.pods;
  // Another pod's end is not this one's.
  agent.remove('db');
  let settled = false;
  void done.then(() => (settled = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(settled, false);
  agent.remove('web');
  assert.equal(await done, true);
  assert.equal(agent.calls.pods, readsBefore, 'no list read after the DELETED');
  assert.equal(agent.calls.cancelled, 1, 'the watch is closed');
});

test('delete through the agent still ends when the watch is not there: the list is read until the pod is gone', async () => {
  // The agent removes the pod as it answers its fourth read (the one before the delete, then three while it terminates).
  const agent = fakeAgent([pod('web', 'u1')], { watchBreaks: true, onRead: (n) => n === 4 && agent.remove('web') });
  assert.equal(await deleteThroughAgent(agent, 'default', 'web', 5, { pollMs: 1 }), true);
  assert.equal(agent.calls.pods, 5, 'the list was read until it no longer named the pod');
});

test('delete through the agent: a pod the agent does not keep (404) or keeps from its watch source (409) is not waited for', async () => {
  for (const status of [404, 409]) {
    const agent = fakeAgent([pod('web', 'u1')], { deleteStatus: status });
    assert.equal(await deleteThroughAgent(agent, 'default', 'web', 5, { pollMs: 3_600_000 }), false);
    assert.equal(agent.calls.cancelled, 1, 'the watch is closed');
  }
});

test("watching for several pods' removal (a foreground run handing its pods back): done once every one has gone, by the watch", async () => {
  const agent = fakeAgent([pod('web', 'u1'), pod('db', 'u2'), pod('other', 'u3')]);
  const removal = watchForRemoval(
    agent,
    [
      { namespace: 'default', name: 'web', uid: 'u1' },
      { namespace: 'default', name: 'db', uid: 'u2' },
    ],
    { pollMs: 3_600_000 },
  );
  let settled = false;
  const done = removal.untilGone().then(() => (settled = true));
  await new Promise((r) => setImmediate(r));
  const reads = agent.calls.pods;
  agent.remove('web');
  agent.remove('other');
  await new Promise((r) => setImmediate(r));
  assert.equal(settled, false, 'db is still there');
  agent.remove('db');
  await done;
  removal.cancel();
  assert.ok(
    agent.calls.pods <= reads + 2,
    `the list was read once a removal woke the wait, not polled (${agent.calls.pods - reads} reads)`,
  );
  assert.equal(agent.calls.cancelled, 1);
});
