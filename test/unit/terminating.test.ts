import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { followPods } from '../../src/cli/pod-lister.js';
import { podRow } from '../../src/cli/table.js';
import type { ViewedPod } from '../../src/core/podview/index.js';

const pod = (phase: string, deletionTimestamp?: string, waiting?: string): IPod =>
  ({
    metadata: { name: 'web', namespace: 'default', uid: 'u1', ...(deletionTimestamp ? { deletionTimestamp } : {}) },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    status: {
      phase,
      containerStatuses: [
        {
          name: 'app',
          ready: false,
          restartCount: 0,
          image: 'busybox',
          imageID: '',
          state: waiting ? { waiting: { reason: waiting } } : { running: {} },
        },
      ],
    },
  }) as unknown as IPod;

const status = (p: IPod) => podRow(p, { now: 0 })[2];

test('get pods: a pod with a deletionTimestamp that has not finished is Terminating, whatever its containers say (as kubectl)', () => {
  assert.equal(status(pod('Running')), 'Running');
  assert.equal(status(pod('Running', '2026-01-01T00:00:30Z')), 'Terminating');
  assert.equal(status(pod('Pending', '2026-01-01T00:00:30Z', 'CrashLoopBackOff')), 'Terminating');
  // A pod that has finished says how: Succeeded or Failed, not Terminating.
  assert.equal(status(pod('Succeeded', '2026-01-01T00:00:30Z')), 'Succeeded');
  assert.equal(status(pod('Failed', '2026-01-01T00:00:30Z')), 'Failed');
});

test('get pods -w: a terminating pod is printed as Terminating, then, once gone, as Deleted', async () => {
  const ending = pod('Running', '2026-01-01T00:00:30Z');
  const lists: ViewedPod[][] = [[{ pod: ending, source: 'watch', readinessUnknown: [] }], []];
  const lines: string[] = [];
  const abort = new AbortController();
  await followPods(
    async () => {
      const next = lists.shift();
      if (lists.length === 0) setImmediate(() => abort.abort());
      return next ?? [];
    },
    [{ pod: pod('Running'), source: 'watch', readinessUnknown: [] }],
    'table',
    { now: 0, noHeaders: true },
    (text) => lines.push(text),
    { pollMs: 1, signal: abort.signal },
  );
  assert.deepEqual(
    lines.map((l) => l.split(/\s+/)[2]),
    ['Terminating', 'Deleted'],
  );
});
