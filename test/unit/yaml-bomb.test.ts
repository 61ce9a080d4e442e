import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseManifestText } from '../../src/core/pod/index.js';
import { MAX_OBJECT_BYTES } from '../../src/core/pod/load.js';
import { scratchDir } from '../support/e2e.js';

/** A Pod whose annotations hold an alias bomb of `levels` levels, nine aliases a level (the "billion laughs"). */
function bomb(levels: number): string {
  const lines = ['apiVersion: v1', 'kind: Pod', 'metadata:', '  name: bomb', '  annotations:', '    a0: &a0 "lol"'];
  for (let i = 1; i <= levels; i++) lines.push(`    a${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(', ')}]`);
  lines.push('spec:', '  containers:', '  - {name: app, image: busybox:1.36}', '');
  return lines.join('\n');
}

const LOAD = pathToFileURL(join(import.meta.dirname, '..', '..', 'src', 'core', 'pod', 'load.js')).href;
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

/** Parses in a child process with a 200 MB heap, reading the heap there. */
function parseBounded(text: string): { heapMB: number; problems: { file: string; message: string }[] } {
  const script = `
    const { parseManifestText } = await import(${JSON.stringify(LOAD)});
    const text = require('node:fs').readFileSync(0, 'utf8');
    const r = parseManifestText(text, { kind: 'file', path: '/m/bomb.yaml' }, { nodeName: 'unit' });
    process.stdout.write(JSON.stringify({ heapMB: process.memoryUsage().heapUsed / 2 ** 20, problems: r.problems }));
  `;
  const r = spawnSync(process.execPath, ['--max-old-space-size=200', '--input-type=commonjs', '-e', `(async () => { ${script} })()`], {
    input: text,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, `the parse ran out of its 200 MB heap or crashed: ${r.stderr.slice(0, 500)}`);
  return JSON.parse(r.stdout) as { heapMB: number; problems: { file: string; message: string }[] };
}

for (const levels of [8, 9]) {
  test(`a ${levels}-level YAML alias bomb is refused within a 200 MB heap, naming the file`, () => {
    const r = parseBounded(bomb(levels));
    assert.equal(r.problems.length, 1);
    assert.equal(r.problems[0]!.file, '/m/bomb.yaml');
    assert.match(r.problems[0]!.message, /expands to more than .* aliases/);
    // Refused at the alias cap, before expanding: the heap bound shows it (how long it takes is no test's to assert).
    assert.ok(r.heapMB < 200, `heap ${r.heapMB.toFixed(0)} MB`);
  });
}

test('a small alias use is fine and the document no longer shares nodes', () => {
  const text =
    'apiVersion: v1\nkind: Pod\nmetadata: {name: shared}\nspec:\n  containers:\n  - &c {name: app, image: busybox:1.36, env: [{name: A, value: "1"}]}\n';
  const r = parseManifestText(text, { kind: 'file', path: '/m/ok.yaml' }, { nodeName: 'unit' });
  assert.deepEqual(r.problems, []);
  assert.equal(r.pods.length, 1);
});

test('a manifest over the size limit is refused before it is parsed', () => {
  const r = parseManifestText(`# ${'x'.repeat(9 << 20)}\n`, { kind: 'file', path: '/m/huge.yaml' }, { nodeName: 'unit' });
  assert.equal(r.problems.length, 1);
  assert.match(r.problems[0]!.message, /at most 8388608 \(8 MiB\)/);
});

test('podctl validate refuses the bomb, naming the file, with exit 1', () => {
  const dir = scratchDir('unit-bomb');
  try {
    const file = join(dir.dir, 'bomb.yaml');
    writeFileSync(file, bomb(9));
    const r = spawnSync(process.execPath, ['--max-old-space-size=200', BIN, 'validate', file], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stdout + r.stderr, /bomb\.yaml: document 1.*alias/);
  } finally {
    dir.cleanup();
  }
});

test('an alias to a node that contains it (a recursive document) is refused, not walked for ever', () => {
  const r = parseManifestText(
    'apiVersion: v1\nkind: Pod\nmetadata: &m {name: r, labels: {x: *m}}\nspec: {containers: [{name: a, image: busybox}]}\n',
    { kind: 'file', path: '/m/r.yaml' },
    { nodeName: 'unit' },
  );
  assert.equal(r.problems.length, 1);
  assert.match(r.problems[0]!.message, /recursive document/);
});

/** A Pod of n labels, as the 4.3 MB manifest (n = 62,000). */
function labelled(n: number, name = 'labels'): string {
  const lines = ['apiVersion: v1', 'kind: Pod', 'metadata:', `  name: ${name}`, '  labels:'];
  for (let i = 0; i < n; i++) lines.push(`    k${i}.example.com/label-${i}: value-${i}-${'x'.repeat(20)}`);
  lines.push('spec:', '  containers:', '  - {name: app, image: busybox:1.36}', '');
  return lines.join('\n');
}

test(
  'a document larger than the API server stores of one object (1.5 MiB) is refused by its size before it is parsed, naming the ' +
    'file and document',
  () => {
    const big = labelled(62_000);
    assert.ok(Buffer.byteLength(big) > 4_000_000);
    // A YAML error past the size limit is never reached: the text was not parsed.
    const text = `# the small one first\n---\n${labelled(3, 'small')}---\n${big}  bad: [unclosed\n`;
    const r = parseManifestText(text, { kind: 'file', path: '/m/labels.yaml', display: 'labels.yaml' }, { nodeName: 'unit' });
    assert.deepEqual(r.pods, []);
    assert.equal(r.problems.length, 1, JSON.stringify(r.problems.map((p) => p.message)));
    assert.equal(r.problems[0]!.file, 'labels.yaml');
    assert.equal(r.problems[0]!.index, 1);
    assert.match(
      r.problems[0]!.message,
      new RegExp(
        `^the document is ${Buffer.byteLength(big) + 18} bytes; expected at most ${MAX_OBJECT_BYTES} bytes \\(1\\.5 MiB\\).*refused before it is parsed$`,
      ),
    );
    // Just under the limit, the same manifest is read and validated.
    const under = labelled(20_000);
    assert.ok(Buffer.byteLength(under) < MAX_OBJECT_BYTES);
    assert.deepEqual(parseManifestText(under, { kind: 'file', path: '/m/under.yaml' }, { nodeName: 'unit' }).problems, []);
  },
);

test(
  'a List larger than one object is read item by item (kubectl sends each alone); an item over the limit is refused by its ' +
    'size, before validation',
  () => {
    const cm = (i: number, bytes: number) =>
      `- {apiVersion: v1, kind: ConfigMap, metadata: {name: c${i}}, data: {k: "${'q'.repeat(bytes)}"}}`;
    const list = (items: string[]) => `apiVersion: v1\nkind: List\nitems:\n${items.join('\n')}\n`;
    const ok = parseManifestText(list([cm(0, 900_000), cm(1, 900_000)]), { kind: 'file', path: '/m/list.yaml' }, { nodeName: 'unit' });
    assert.deepEqual(ok.problems, []);
    assert.equal(ok.configMaps.length, 2);
    const bad = parseManifestText(list([cm(0, 10), cm(1, 1_600_000)]), { kind: 'file', path: '/m/list.yaml' }, { nodeName: 'unit' });
    assert.deepEqual(
      bad.problems.map((p) => [p.field, p.message.replace(/\d{7} bytes as JSON/, 'N bytes as JSON')]),
      [
        [
          'items[1]',
          "the object is N bytes as JSON (as kubectl sends it); expected at most 1572864 bytes (1.5 MiB), the most the API server stores of one object (etcd's request limit)",
        ],
      ],
      'one problem, by size: not also the ConfigMap data limit the validation would have found',
    );
  },
);

test('podctl validate refuses a 1 MB command argument, naming the file and field, with exit 1', () => {
  const dir = scratchDir('unit-argmax');
  try {
    const file = join(dir.dir, 'arg.yaml');
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Pod\nmetadata: {name: arg}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sh, -c, "${'x'.repeat(1 << 20)}"]}\n`,
    );
    const r = spawnSync(process.execPath, [BIN, 'validate', file], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stdout + r.stderr, /arg\.yaml: document 1.*spec\.containers\[0\]\.command\[2\].*MAX_ARG_STRLEN/);
  } finally {
    dir.cleanup();
  }
});
