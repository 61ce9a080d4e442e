import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PodConfigMerger } from '../../src/core/config/index.js';
import type { PodUpdate } from '../../src/core/loop.js';
import { parseManifestText } from '../../src/core/pod/index.js';

const src = { kind: 'file' as const, path: '/m/a.yaml' };
const pod = (name: string, cmd = 'sleep', seen = '2026-01-01T00:00:00Z') =>
  parseManifestText(
    `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: c, image: busybox:1.36, command: [${cmd}]}\n`,
    { ...src, path: `/m/${name}.yaml` },
    {
      nodeName: 'n',
      now: () => new Date(seen),
    },
  ).pods[0]!.pod;

test('snapshots become ADD, UPDATE and REMOVE, per source; a re-read that only moves the seen time is no update', () => {
  const updates: string[] = [];
  const m = new PodConfigMerger((u: PodUpdate) => updates.push(`${u.op} ${u.source} ${u.pods.map((p) => p.metadata!.name).join(',')}`));
  const seen = (p: { metadata?: { annotations?: Record<string, string> } }) => p.metadata!.annotations!['kubernetes.io/config.seen'];
  m.merge('file', [pod('a'), pod('b')]);
  m.merge('file', [pod('a', 'echo', '2026-02-02T00:00:00Z'), pod('b', 'sleep', '2026-02-02T00:00:00Z')]);
  m.merge('file', [pod('b', 'sleep', '2026-03-03T00:00:00Z')]);
  m.merge('file', [pod('b', 'sleep', '2026-04-04T00:00:00Z')]);
  assert.deepEqual(updates, ['ADD file a,b', 'UPDATE file a', 'REMOVE file a']);
  assert.deepEqual(
    m.pods().map((p) => p.metadata!.name),
    ['b'],
  );
  assert.equal(seen(m.pods()[0]!), '2026-01-01T00:00:00.000Z', 'the first-seen time stays');
  m.merge('file', [pod('b', 'echo', '2026-05-05T00:00:00Z')]);
  assert.equal(updates.at(-1), 'UPDATE file b');
  assert.equal(seen(m.pods()[0]!), '2026-01-01T00:00:00.000Z', 'an update keeps the first-seen time too');
});

test('a change to the object that is not content (a local annotation aside) is a RECONCILE', () => {
  const ops: string[] = [];
  const m = new PodConfigMerger((u) => ops.push(u.op));
  const a = pod('a');
  m.merge('file', [a]);
  m.merge('file', [{ ...a, status: { phase: 'Running' } }]);
  assert.deepEqual(ops, ['ADD', 'RECONCILE']);
});

test('a name another source holds is refused; sources are ready once they reported, even empty', () => {
  const conflicts: string[] = [];
  const m = new PodConfigMerger(
    () => undefined,
    (source, p, owner) => conflicts.push(`${source}:${p.metadata!.name} held by ${owner}`),
  );
  assert.equal(m.allSourcesReady(['file', 'http']), false);
  m.merge('file', [pod('a')]);
  m.merge('http', [pod('a')]);
  assert.deepEqual(conflicts, ['http:a held by file']);
  assert.equal(m.allSourcesReady(['file', 'http']), true);
  m.merge('http', []);
  assert.equal(m.allSourcesReady(['file', 'http']), true);
});

test('a pod newly marked for deletion is a DELETE', () => {
  const ops: string[] = [];
  const m = new PodConfigMerger((u) => ops.push(u.op));
  const p = pod('a');
  m.merge('file', [p]);
  m.merge('file', [{ ...p, metadata: { ...p.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }]);
  assert.deepEqual(ops, ['ADD', 'DELETE']);
});
