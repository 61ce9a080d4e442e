import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { getHeapSnapshot } from 'node:v8';
import { execFileSync } from 'node:child_process';
import { StringPool, internDeep, strings } from '../../src/core/util/intern.js';
import { applyPodDefaults } from '../../src/core/pod/defaults.js';

/**
 * How many strings with this value the heap holds (a snapshot collects garbage first). The value is
 * given as bytes, so that the test's own copy is made only after the snapshot.
 */
async function copiesInHeap(bytes: Buffer): Promise<number> {
  const chunks: Buffer[] = [];
  for await (const chunk of getHeapSnapshot()) chunks.push(chunk as Buffer);
  const value = bytes.toString();
  const snap = JSON.parse(Buffer.concat(chunks).toString()) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  let n = 0;
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    if (types[snap.nodes[i + typeAt]!] === 'string' && snap.strings[snap.nodes[i + nameAt]!] === value) n++;
  }
  return n;
}

/** A fresh copy of the string, as a decoder makes one. */
const decoded = (s: string | Buffer) => Buffer.from(s).toString();

test('strings pooled: a thousand decoded copies of a value are one string in the heap', async () => {
  const bytes = Buffer.from(`podctl-intern-${randomUUID()}`);
  const pool = new StringPool();
  const pooled = Array.from({ length: 1000 }, () => pool.intern(decoded(bytes)));
  const unpooled = Array.from({ length: 1000 }, () => decoded(bytes));
  // The pool's copy is the one every pooled entry holds; each unpooled one is its own.
  assert.equal(await copiesInHeap(bytes), 1 + unpooled.length);
  unpooled.length = 0;
  assert.equal(await copiesInHeap(bytes), 1);
  assert.ok(pooled.every((s) => s === bytes.toString()));
});

test('the pool keeps at most two generations: what is not asked for again is forgotten', () => {
  const pool = new StringPool(2);
  for (const s of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) pool.intern(decoded(s));
  assert.ok(pool.size <= 4, `size ${pool.size}`);
  // Asked again while in the older generation: kept on into the next.
  const kept = new StringPool(2);
  kept.intern('keep');
  kept.intern('x');
  kept.intern('y'); // 'keep' and 'x' move to the older generation
  kept.intern('keep'); // back in the current one
  kept.intern('z'); // the current one is full: 'x' goes with the older generation
  assert.equal(kept.size, 3); // y, keep, z
});

test('empty and long strings are returned as they are, not pooled', () => {
  const pool = new StringPool(100, 8);
  assert.equal(pool.intern(''), '');
  assert.equal(pool.intern(undefined), undefined);
  assert.equal(pool.intern('0123456789'), '0123456789');
  assert.equal(pool.size, 0);
  pool.intern('short');
  assert.equal(pool.size, 1);
});

test('internDeep pools every string of a tree and leaves its shape and values', () => {
  const before = strings.size;
  const marker = randomUUID();
  const tree = { a: decoded(marker), list: [decoded(marker), 1, null, { b: decoded(`${marker}-b`) }], n: 3, t: true };
  const copy = structuredClone(tree);
  assert.equal(internDeep(tree), tree);
  assert.deepEqual(tree, copy);
  assert.equal(strings.size - before, 2);
});

test('pod defaults set probes only when given: no property is added and deleted', () => {
  const pod = applyPodDefaults({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', uid: 'u' },
    spec: {
      containers: [
        { name: 'a', image: 'busybox:1.36' },
        { name: 'b', image: 'busybox', livenessProbe: { exec: { command: ['true'] } } },
      ],
    },
  });
  const [a, b] = pod.spec!.containers;
  assert.deepEqual(Object.keys(a!).sort(), ['image', 'imagePullPolicy', 'name', 'terminationMessagePath', 'terminationMessagePolicy']);
  assert.equal(b!.livenessProbe?.periodSeconds, 10);
  assert.equal(b!.imagePullPolicy, 'Always');
  assert.equal('readinessProbe' in b!, false);
});

test('defaulted container specs keep V8 fast properties (a deleted property would make them dictionaries)', () => {
  // %HasFastProperties needs V8's natives syntax: asked in a child node with the flag.
  const defaults = new URL('../../src/core/pod/defaults.js', import.meta.url).href;
  const code = `
    const { applyPodDefaults } = await import(${JSON.stringify(defaults)});
    const pod = applyPodDefaults({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default', uid: 'u' },
      spec: { containers: [{ name: 'a', image: 'busybox:1.36' }, { name: 'b', image: 'busybox:1.36', readinessProbe: { exec: { command: ['true'] } } }] } });
    process.stdout.write(JSON.stringify(pod.spec.containers.map((c) => %HasFastProperties(c))));`;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', code], { encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out), [true, true]);
});
