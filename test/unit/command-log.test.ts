import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');

/** What a command's log and logToStderr print for these calls, in a process of its own: podctl's, or oclif's own. */
function printed(which: 'podctl' | 'oclif', calls: unknown[][]): { stdout: string; stderr: string } {
  const base = pathToFileURL(join(ROOT, 'dist/src/cli/base.js')).href;
  const direct = pathToFileURL(join(ROOT, 'dist/src/cli/direct.js')).href;
  const script = `import { Command } from '@oclif/core';
import { PodctlCommand } from ${JSON.stringify(base)};
import { commandConfig } from ${JSON.stringify(direct)};
import { readFileSync } from 'node:fs';
const root = ${JSON.stringify(ROOT)};
const config = commandConfig(JSON.parse(readFileSync(root + '/package.json', 'utf8')), root, JSON.parse(readFileSync(root + '/oclif.manifest.json', 'utf8')));
class C extends PodctlCommand { async run() {} }
const cmd = new C([], config);
const log = ${JSON.stringify(which)} === 'podctl' ? cmd.log.bind(cmd) : Command.prototype.log.bind(cmd);
const err = ${JSON.stringify(which)} === 'podctl' ? cmd.logToStderr.bind(cmd) : Command.prototype.logToStderr.bind(cmd);
for (const args of ${JSON.stringify(calls)}) { log(...args); err(...args); }`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  assert.equal(r.status, 0, r.stderr);
  return { stdout: r.stdout, stderr: r.stderr };
}

test("a command's log and logToStderr print what oclif's print: a string as it is, format arguments applied, an object inspected", () => {
  const calls: unknown[][] = [[], ['plain'], ['100%% done, %s left'], ['%s of %d', 'one', 2], [{ a: 1, b: [1, 2] }], ['tab\there'], ['multi\nline']];
  const mine = printed('podctl', calls);
  assert.deepEqual(mine, printed('oclif', calls));
  assert.match(mine.stdout, /^\nplain\n100%% done, %s left\none of 2\n\{ a: 1, b: \[ 1, 2 \] \}\n/);
});
