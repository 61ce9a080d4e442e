import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { acquireStateLock } from '../../src/core/lock.js';
import { PodctlError } from '../../src/core/errors.js';
import { scratchDir } from '../support/e2e.js';

test('one owner per state dir: a second owner is refused naming the first PID; release frees it', () => {
  const { dir, cleanup } = scratchDir('lock');
  try {
    const root = join(dir, 'root');
    const first = acquireStateLock(root);
    assert.equal(statSync(root).mode & 0o777, 0o700, 'the state dir is private');
    assert.equal(statSync(first.path).mode & 0o777, 0o600);
    assert.throws(
      () => acquireStateLock(root),
      (err: unknown) =>
        err instanceof PodctlError &&
        err.message.startsWith(`another podctl agent (pid ${process.pid},`) &&
        /another --root-dir/.test(err.describe()),
    );
    first.release();
    assert.equal(existsSync(first.path), false);
    const again = acquireStateLock(root);
    again.release();
  } finally {
    cleanup();
  }
});

test('a lock left by a process that is gone, or whose PID now runs something else, is taken over', () => {
  const { dir, cleanup } = scratchDir('lock-stale');
  try {
    const path = join(dir, 'watch.lock');
    writeFileSync(path, JSON.stringify({ pid: 2 ** 22 + 7, cmdline: 'node\0podctl\0watch', since: '2026-01-01T00:00:00Z' }));
    const a = acquireStateLock(dir);
    assert.equal((JSON.parse(readFileSync(path, 'utf8')) as { pid: number }).pid, process.pid);
    a.release();
    // PID 1 exists, but does not run what the lock recorded.
    writeFileSync(path, JSON.stringify({ pid: 1, cmdline: 'node\0podctl\0watch', since: '2026-01-01T00:00:00Z' }));
    const b = acquireStateLock(dir);
    b.release();
  } finally {
    cleanup();
  }
});
