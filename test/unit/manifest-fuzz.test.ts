import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import yaml from 'js-yaml';
import { parseManifestText } from '../../src/core/pod/index.js';
import { oversizedDocuments } from '../../src/core/pod/load.js';

const src = { kind: 'file' as const, path: '/fuzz/pods.yaml', display: 'pods.yaml' };
const opts = { nodeName: 'fuzz', now: () => new Date('2026-01-01T00:00:00Z') };

/** A realistic manifest set: what people write, with probes, hooks, volumes, env and a ConfigMap. */
const SEED = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {mode: fast}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  restartPolicy: Always
  securityContext: {runAsUser: 1000, fsGroup: 2000}
  initContainers:
  - {name: setup, image: busybox:1.36, command: [sh, -c, "true"]}
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "httpd -f -p 8080"]
    ports: [{name: http, containerPort: 8080, hostPort: 18080}]
    env:
    - {name: MODE, valueFrom: {configMapKeyRef: {name: cfg, key: mode}}}
    readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 2}
    lifecycle: {preStop: {exec: {command: [sleep, "1"]}}}
    resources: {limits: {memory: 64Mi, cpu: 250m}}
    volumeMounts: [{name: data, mountPath: /data, subPath: web}]
  volumes:
  - {name: data, emptyDir: {sizeLimit: 16Mi}}
`;

/**
 * The promise every input must keep: a result (never a throw), every problem
 * said with its file, and no pod from a document that has an error (the
 * sources and loadManifests then refuse the whole set, so nothing runs).
 */
function check(text: string): void {
  const r = parseManifestText(text, src, opts);
  for (const p of r.problems) {
    assert.ok(p.message.length > 0, 'every problem says what is wrong');
    assert.ok(p.file === 'pods.yaml', 'every problem names the file');
  }
  const broken = new Set(r.problems.filter((p) => p.severity === 'error').map((p) => p.index));
  for (const lp of r.pods) assert.ok(!broken.has(lp.source.index), `no pod from document ${lp.source.index + 1}, which has an error`);
  for (const lp of r.pods) {
    assert.ok(lp.pod.metadata?.uid, 'a pod that is returned is complete');
    assert.ok((lp.pod.spec?.containers ?? []).length > 0);
  }
}

test(
  'fuzz: 1,000 random edits of a real manifest (bytes inserted, deleted, replaced, lines swapped) end in problems or pods, ' +
    'never a throw',
  () => {
    const edit = fc.oneof(
      fc.record({
        op: fc.constant('insert' as const),
        at: fc.nat(),
        text: fc.oneof(
          fc.string({ maxLength: 6 }),
          fc.constantFrom(
            ':',
            '- ',
            '{',
            '}',
            '[',
            ']',
            '"',
            "'",
            '\n',
            '  ',
            '\t',
            '&a',
            '*a',
            '!!binary',
            '---',
            '#',
            '0400',
            '1e400',
            '~',
            '\u0000',
            '\uFFFF',
          ),
        ),
      }),
      fc.record({ op: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 12 }) }),
      fc.record({ op: fc.constant('swap' as const), a: fc.nat(), b: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 6 }), (edits) => {
        let text = SEED;
        for (const e of edits) {
          if (e.op === 'insert') {
            const at = e.at % (text.length + 1);
            text = text.slice(0, at) + e.text + text.slice(at);
          } else if (e.op === 'delete') {
            const at = e.at % (text.length + 1);
            text = text.slice(0, at) + text.slice(at + e.len);
          } else {
            const lines = text.split('\n');
            const a = e.a % lines.length;
            const b = e.b % lines.length;
            [lines[a], lines[b]] = [lines[b]!, lines[a]!];
            text = lines.join('\n');
          }
        }
        check(text);
      }),
      { numRuns: 1000 },
    );
  },
);

test('fuzz: wrong types, invalid names and ports, huge values in real fields', () => {
  const field = fc.constantFrom(
    'metadata.name',
    'spec.containers.0.name',
    'spec.containers.0.ports.0.containerPort',
    'spec.containers.0.image',
    'spec.restartPolicy',
    'spec.containers.0.readinessProbe.periodSeconds',
    'spec.volumes.0.emptyDir',
    'spec.containers.0.env.0.name',
    'spec.terminationGracePeriodSeconds',
  );
  const value = fc.oneof(
    fc.integer(),
    fc.double(),
    fc.string({ maxLength: 300 }),
    fc.constantFrom(-1, 0, 65536, 2 ** 53, Number.MAX_VALUE, 'UPPER', 'a'.repeat(300), '../../etc', '', null, true, [], {}),
  );
  fc.assert(
    fc.property(field, value, (path, v) => {
      const doc = JSON.parse(JSON.stringify(parseManifestText(SEED, src, opts).pods[0]!.pod)) as Record<string, unknown>;
      delete (doc.metadata as Record<string, unknown>).uid;
      let node: Record<string, unknown> = doc;
      const keys = path.split('.');
      for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
      node[keys.at(-1)!] = v;
      check(JSON.stringify(doc));
    }),
    { numRuns: 1000 },
  );
});

test('deep nesting, very large documents and alias bombs are refused with a problem, not a crash or a hang', () => {
  /** check() plus: a problem was reported, an error, naming what is wrong; no pod came out. */
  const refused = (text: string, what: RegExp) => {
    check(text);
    const r = parseManifestText(text, src, opts);
    const errors = r.problems.filter((p) => p.severity === 'error');
    assert.ok(errors.length > 0, 'an error problem is reported');
    assert.ok(
      errors.some((p) => what.test(p.message) || what.test(p.field)),
      `a problem says ${what}: ${errors
        .map((p) => `${p.field}: ${p.message}`)
        .join(' | ')
        .slice(0, 300)}`,
    );
    assert.equal(r.pods.length, 0);
  };
  refused(`${'['.repeat(5000)}${']'.repeat(5000)}`, /expected a Kubernetes object|invalid YAML/);
  refused(
    `apiVersion: v1\nkind: Pod\nmetadata: {name: deep}\nspec: ${'{a: '.repeat(2000)}1${'}'.repeat(2000)}\n`,
    /unknown field|invalid YAML|expected/,
  );
  // Past what the API server stores of one object, refused by its size before it is parsed; under it, by the annotations' limit.
  refused(
    `apiVersion: v1\nkind: Pod\nmetadata: {name: big, annotations: {x: "${'y'.repeat(2_000_000)}"}}\nspec:\n  containers:\n  - {name: c, image: busybox:1.36}\n`,
    /expected at most 1572864 bytes \(1\.5 MiB\)/,
  );
  refused(
    `apiVersion: v1\nkind: Pod\nmetadata: {name: big, annotations: {x: "${'y'.repeat(300_000)}"}}\nspec:\n  containers:\n  - {name: c, image: busybox:1.36}\n`,
    /256 KiB/,
  );
  // Alias bombs expand exponentially in a naive loader.
  const bomb = [
    'a: &a ["x","x","x","x","x","x","x","x","x"]',
    ...Array.from(
      { length: 9 },
      (_, i) =>
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
    ),
  ].join('\n');
  refused(bomb, /alias/);
});

test(
  'fuzz: the documents the size check measures before parsing are numbered as js-yaml numbers them (markers, comments, ' +
    'directives, empty documents)',
  () => {
    const piece = fc.constantFrom(
      '---\n',
      '--- # marker\n',
      '---\r\n',
      '# comment\n',
      '\n',
      '   \n',
      'a: 1\n',
      'b: [1, 2]\n',
      'c: |\n  text\n',
      '"q": "x"\n',
      '%YAML 1.2\n',
      'd: "---"\n',
      'e:\n  ---x: 1\n',
    );
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 12 }), (pieces) => {
        const text = pieces.join('');
        let docs: unknown[];
        try {
          docs = yaml.loadAll(text);
        } catch {
          return;
        }
        // With no room at all, every document with text is measured and named.
        const named = new Set(oversizedDocuments(text, 0).map((d) => d.index));
        docs.forEach((doc, i) => {
          if (doc !== null && doc !== undefined) assert.ok(named.has(i), `document ${i + 1} of ${JSON.stringify(text)} is measured`);
        });
        for (const i of named)
          assert.ok(i < docs.length, `document ${i + 1} of ${JSON.stringify(text)} is one js-yaml reads (${docs.length})`);
      }),
      { numRuns: 1000 },
    );
  },
);
