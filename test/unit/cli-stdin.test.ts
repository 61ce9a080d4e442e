import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '../../fakecri/index.js';
import { COMMANDS } from '../../src/commands.js';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');

test("every podctl command's arguments ignore stdin: oclif would otherwise read a missing argument from a pipe", () => {
  const commands = Object.entries(COMMANDS);
  assert.ok(commands.length > 20);
  for (const [id, cls] of commands) {
    for (const [name, arg] of Object.entries(cls.args ?? {}))
      assert.equal(arg.ignoreStdin, true, `${id}: argument ${name} reads stdin when absent`);
  }
});

/** Runs the CLI with this text on its stdin (a pipe, as in a script), to its exit. */
function withStdin(
  args: string[],
  stdin: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/run.js'), ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

test('a piped stdin is never taken for a missing argument: get pods lists every pod, validate asks for its path', async () => {
  const fake = await FakeRuntime.start({});
  const dir = mkdtempSync(join(tmpdir(), 'podctl-stdin-'));
  try {
    const runtime = ['--runtime-endpoint', fake.endpoint, '--root-dir', join(dir, 'root')];
    const get = await withStdin(['get', 'pods', ...runtime], 'ghost\n');
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stderr, /No resources found in default namespace/);
    assert.doesNotMatch(get.stderr, /ghost/);

    const validate = await withStdin(['validate'], 'examples/hello.yaml\n');
    assert.notEqual(validate.code, 0);
    assert.match(validate.stderr, /Missing 1 required arg/);
  } finally {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
