import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseManifestText } from '../../src/core/pod/index.js';
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
  const r = spawnSync(process.execPath, ['--max-old-space-size=200', '--input-type=commonjs', '-e', `(async () => { ${script} })()`], { input: text, encoding: 'utf8', timeout: 60_000 });
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
  const text = 'apiVersion: v1\nkind: Pod\nmetadata: {name: shared}\nspec:\n  containers:\n  - &c {name: app, image: busybox:1.36, env: [{name: A, value: "1"}]}\n';
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
  const r = parseManifestText('apiVersion: v1\nkind: Pod\nmetadata: &m {name: r, labels: {x: *m}}\nspec: {containers: [{name: a, image: busybox}]}\n', { kind: 'file', path: '/m/r.yaml' }, { nodeName: 'unit' });
  assert.equal(r.problems.length, 1);
  assert.match(r.problems[0]!.message, /recursive document/);
});
