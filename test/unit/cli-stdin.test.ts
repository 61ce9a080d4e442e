import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from '@oclif/core';
import { FakeRuntime } from '../../fakecri/index.js';
import { COMMANDS } from '../../src/commands.js';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');

/** The command class a stand-in of the index runs: what its module exports, by the stand-in's loader. */
async function realCommand(id: string): Promise<Command.Class> {
  const source = COMMANDS[id]!.run.toString();
  assert.ok(source.includes('load()'), `${id}: the index no longer wraps commands as expected`);
  // The stand-ins import by the same paths: the command's own module gives the class whose args oclif parses.
  const file = id.replace(/:/g, '/');
  for (const candidate of [`../../src/commands/${file}.js`, `../../src/commands/${file}/index.js`]) {
    try {
      const mod = (await import(candidate)) as Record<string, unknown>;
      const cls = Object.values(mod).find((v): v is Command.Class => typeof v === 'function' && 'args' in v && 'flags' in v);
      if (cls) return cls;
    } catch {
      // Not this path.
    }
  }
  throw new Error(`${id}: no command module`);
}

test("every podctl command's arguments ignore stdin: oclif would otherwise read a missing argument from a pipe", async () => {
  const ids = Object.keys(COMMANDS).filter((id) => !/^(help|autocomplete)/.test(id));
  assert.ok(ids.length > 20);
  for (const id of ids) {
    const cls = await realCommand(id);
    for (const [name, arg] of Object.entries(cls.args ?? {})) assert.equal(arg.ignoreStdin, true, `${id}: argument ${name} reads stdin when absent`);
  }
});

/** Runs the CLI with this text on its stdin (a pipe, as in a script), to its exit. */
function withStdin(args: string[], stdin: string, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
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

test('a piped stdin is never taken for a missing argument: get pods lists every pod, validate asks for its path, help shows the CLI', async () => {
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

    const help = await withStdin(['help'], 'validate\n');
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^COMMANDS$/m, 'the CLI help, not validate');
  } finally {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
