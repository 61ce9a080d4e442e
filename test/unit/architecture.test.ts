import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The source tree (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

const importsOf = (file: string) =>
  [...readFileSync(join(ROOT, file), 'utf8').matchAll(/(?:from|import\()\s*'([^']+)'/g)].map((m) => m[1]!);

test('commands only parse, call the core or the agent, and hand the result to a renderer: at most 120 lines each', () => {
  const long = tsFiles('src/commands')
    .map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length - 1 }))
    .filter((x) => x.lines > 120);
  assert.deepEqual(long, []);
});

test("no command imports another command's file, and no test imports from src/commands", () => {
  const fromCommands = tsFiles('src/commands').filter((f) =>
    importsOf(f).some((i) => i.startsWith('./') || /^\.\.\/(?!cli\/|core\/|\.\.\/cli\/|\.\.\/core\/)/.test(i)),
  );
  assert.deepEqual(fromCommands, [], 'commands import only src/cli, src/core and packages');
  const fromTests = [...tsFiles('test'), ...tsFiles('bench')].filter((f) => importsOf(f).some((i) => i.includes('src/commands/')));
  assert.deepEqual(fromTests, []);
});

test('src is only what runs in production: nothing in it imports the fake CRI (fakecri/) or node:assert', () => {
  const offenders = tsFiles('src').filter((f) =>
    importsOf(f).some((i) => i.includes('fakecri/') || i === 'node:assert' || i === 'node:assert/strict'),
  );
  assert.deepEqual(offenders, []);
});

test("what only reads the runtime uses the status reader (the kubelet's GetPodStatus), never a RuntimeManager", () => {
  const readers = ['src/core/plan.ts', 'src/cli/plan.ts', 'src/commands/pleg-events.ts', 'src/core/podview/index.ts'];
  assert.deepEqual(
    // The RuntimeManager and the parts it carries out SyncPod with.
    readers.filter((f) =>
      importsOf(f).some((i) =>
        /kuberuntime\/(manager|context|sandbox|containers|container-gc|pod-files|lifecycle|run-options)\.js$/.test(i),
      ),
    ),
    [],
  );
});

/** Relative modules a file imports: static imports, re-exports and dynamic import()s, each once. */
const internalImportsOf = (file: string) => new Set(importsOf(file).filter((i) => i.startsWith('.')));

test('one home per idea: no hand-written file in src/core over 450 lines, none importing more than 15 of our modules', () => {
  const core = tsFiles('src/core');
  const long = core.map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length - 1 })).filter((x) => x.lines > 450);
  assert.deepEqual(long, []);
  const hubs = [...core, ...tsFiles('src/cli')].map((f) => ({ f, imports: internalImportsOf(f).size })).filter((x) => x.imports > 15);
  assert.deepEqual(hubs, []);
});

test('the sync loop calls the SyncHandler interface, never the concrete Kubelet; one pod cache', () => {
  const loop = readFileSync(join(ROOT, 'src/core/loop.ts'), 'utf8');
  assert.doesNotMatch(loop, /from '\.\/kubelet\.js'/);
  const second = tsFiles('src').filter((f) => /runtimeStatuses/.test(readFileSync(join(ROOT, f), 'utf8')));
  assert.deepEqual(second, []);
});
