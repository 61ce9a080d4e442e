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
