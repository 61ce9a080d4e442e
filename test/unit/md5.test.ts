import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { md5Hex } from '../../src/core/util/md5.js';
import { canonicalJSON } from '../../src/core/util/canonical-json.js';
import { CONFIG_HASH_ANNOTATION, parseManifestDocuments, staticPodUID } from '../../src/core/pod/index.js';

/** node:crypto's MD5 of these strings, each an update(), computed here independently of md5Hex. */
const nodeMd5 = (...parts: string[]) => {
  const h = createHash('md5');
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

// Every UTF-8 length (1 to 4 bytes), unpaired surrogates, and emoji that are several code points.
const SAMPLES = [
  '',
  'a',
  'abc',
  'héllo wörld',
  'ñandú',
  '日本語のポッド',
  '👍🏽',
  '👨‍👩‍👧',
  '\u00ff\u0100\u07ff\u0800\uffff',
  '\ud83d',
  'x\udc4dy',
  '\udc4d\ud83d',
  '\u0000\n\t',
];

test("md5Hex is node:crypto's MD5 of the strings in UTF-8: known digests, block boundaries, any strings", () => {
  assert.equal(md5Hex(''), 'd41d8cd98f00b204e9800998ecf8427e');
  assert.equal(md5Hex('abc'), '900150983cd24fb0d6963f7d28e17f72');
  assert.equal(md5Hex('The quick brown fox jumps over the lazy dog'), '9e107d9d372bb6826bd81d3542a419d6');
  for (const s of SAMPLES) assert.equal(md5Hex(s), nodeMd5(s), JSON.stringify(s));
  assert.equal(md5Hex(...SAMPLES), nodeMd5(...SAMPLES));
  // Around MD5's 64-byte blocks and its 56-byte padding limit, with multi-byte characters across them.
  for (let n = 50; n <= 140; n++) {
    for (const fill of ['a', 'é', '語', '👍']) {
      const s = fill.repeat(n).slice(0, n);
      assert.equal(md5Hex(s), nodeMd5(s), `${n} × ${fill}`);
      // (Split inside a surrogate pair for 👍: each half is then unpaired, for node:crypto too.)
      assert.equal(md5Hex(s.slice(0, 7), s.slice(7)), nodeMd5(s.slice(0, 7), s.slice(7)), `${n} × ${fill}, split`);
    }
  }
  const big = 'spec: ünïcödé 日本 👍\n'.repeat(5000);
  assert.equal(md5Hex(big), nodeMd5(big));
  for (const unit of ['binary', 'grapheme'] as const) {
    fc.assert(
      fc.property(fc.array(fc.string({ unit, maxLength: 200 }), { maxLength: 4 }), (parts) => md5Hex(...parts) === nodeMd5(...parts)),
      { numRuns: 500 },
    );
  }
});

test('md5Hex gives what earlier podctl versions gave (js-md5), lone surrogates included: a changed hash would replace pods', () => {
  assert.equal(md5Hex('x\udc4dy', '\ud83d'), 'af96acb73fc932f256074eb5465f215f');
});

test("staticPodUID and the config hash are node:crypto's MD5, over non-ASCII names and fields too", () => {
  const uid = (node: string, ns: string, name: string) => nodeMd5(`host:${node}`, `pod:${ns}/${name}`);
  for (const [node, ns, name] of [
    ['node-a', 'default', 'web'],
    ['nœud-ü', 'default', 'déploiement-日本'],
    ['host', 'kube-system', 'ポッド'],
    ['', '', ''],
  ] as const) {
    assert.equal(staticPodUID(node, ns, name), uid(node, ns, name), name);
  }
  fc.assert(
    fc.property(
      fc.string({ unit: 'binary' }),
      fc.string(),
      (node, name) => staticPodUID(node, 'default', name) === uid(node, 'default', name),
    ),
    { numRuns: 300 },
  );
  const text = `apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations: {description: "Grüße aus 日本 👍", lone: "\\ud83d"}
  labels: {app: web}
spec:
  containers:
  - name: app
    image: busybox:1.36
    env: [{name: GREETING, value: "héllo wörld — ñandú"}]
`;
  const opts = { nodeName: 'node-a', now: () => new Date('2026-01-01T00:00:00Z') };
  const { parsed, docs } = parseManifestDocuments(text, { kind: 'file', path: '/m/pod.yaml' }, opts);
  assert.deepEqual(parsed.problems, []);
  const hash = parsed.pods[0]!.pod.metadata!.annotations![CONFIG_HASH_ANNOTATION];
  assert.equal(hash, nodeMd5(canonicalJSON(docs[0])));
  assert.ok(canonicalJSON(docs[0]).includes('日本'), 'the hashed text has the non-ASCII characters as they are');
});
