import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '../../fakecri/index.js';
import { appliedDir, appliedFileName } from '../../src/core/node/paths.js';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

function podctl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('delete with no agent running removes the pod from what the agent keeps, so that its next start does not bring it back', async () => {
  const fake = await FakeRuntime.start({});
  const root = mkdtempSync(join(tmpdir(), 'podctl-delete-'));
  try {
    mkdirSync(appliedDir(root), { recursive: true });
    const kept = join(appliedDir(root), appliedFileName('default', 'web'));
    const other = join(appliedDir(root), appliedFileName('default', 'db'));
    for (const f of [kept, other]) writeFileSync(f, 'apiVersion: v1\nkind: Pod\n');
    const runtime = ['--runtime-endpoint', fake.endpoint, '--root-dir', root];
    // Handed over, not on the runtime now (the agent stopped, the runtime restarted): deleted all the same.
    const r = await podctl(['delete', 'pod', 'web', ...runtime]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'pod "web" deleted\n');
    assert.equal(existsSync(kept), false, 'the applied file is gone');
    assert.equal(existsSync(other), true, 'and only its own');
    // Neither kept nor on the runtime: not found, as before.
    const again = await podctl(['delete', 'pod', 'web', ...runtime]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /pod "web" not found in namespace default/);
  } finally {
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
