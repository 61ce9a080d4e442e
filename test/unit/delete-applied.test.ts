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

test(
  'delete pod with a name or namespace that is no DNS-1123 name says it is invalid (exit 2) and removes no file, with no ' +
    'agent running',
  async () => {
    const fake = await FakeRuntime.start({});
    const root = mkdtempSync(join(tmpdir(), 'podctl-delete-'));
    try {
      const stateDir = join(root, 'a', 'b');
      mkdirSync(appliedDir(stateDir), { recursive: true });
      // Where a_../../canary.yaml and a_../../../canary.yaml lead from the applied dir.
      const canaries = [join(appliedDir(stateDir), 'canary.yaml'), join(stateDir, 'canary.yaml')];
      for (const c of canaries) writeFileSync(c, 'keep me');
      const runtime = ['--runtime-endpoint', fake.endpoint, '--root-dir', stateDir];
      for (const args of [
        ['delete', 'pod', '../../canary', '-n', 'a'],
        ['delete', 'pod', '../../../canary', '-n', 'a'],
        ['delete', 'pod/../../canary'],
        ['delete', 'pod', 'web', '-n', '../..'],
        ['delete', 'pods', '--all', '-n', '../..'],
      ]) {
        const r = await podctl([...args, ...runtime]);
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
        assert.equal(r.stdout, '');
        assert.match(r.stderr, /(pod name "(\.\.\/)+canary"|namespace "\.\.\/\.\.") is invalid: expected a DNS-1123/);
      }
      // Every name is checked before any pod is deleted.
      const both = await podctl(['delete', 'pod', 'web', 'Bad_Name', ...runtime]);
      assert.equal(both.code, 2);
      assert.match(both.stderr, /pod name "Bad_Name" is invalid/);
      assert.doesNotMatch(both.stderr, /web/);
      for (const c of canaries) assert.equal(existsSync(c), true, `${c} not removed`);
    } finally {
      await fake.stop();
      rmSync(root, { recursive: true, force: true });
    }
  },
);
