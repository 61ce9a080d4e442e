import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { embeddedPaths } from '../../src/core/embedded/paths.js';
import { embeddedShims, hostProcTable, LostShimSweeper, reapLostShims, type ProcTable } from '../../src/core/embedded/shims.js';

const paths = embeddedPaths({ root: '/var/lib/podctl-test', runDir: '/run/podctl-test' });
const shim = (id: string, address = paths.socket, extra: string[] = []) => [
  '/usr/bin/containerd-shim-runc-v2',
  '-namespace',
  'k8s.io',
  '-id',
  id,
  '-address',
  address,
  ...extra,
];

/** A process table of our own: a SIGTERM ends a process unless it is in `stubborn`, a SIGKILL always. */
function table(procs: Record<number, { args: string[]; parent: number; start?: string }>, stubborn = new Set<number>()) {
  const live = new Map(Object.entries(procs).map(([pid, p]) => [Number(pid), p]));
  const signals: string[] = [];
  const procTable: ProcTable = {
    pids: () => [...live.keys()],
    cmdline: (pid) => live.get(pid)?.args,
    parent: (pid) => live.get(pid)?.parent,
    startTime: (pid) => live.get(pid)?.start ?? '1',
  };
  const kill = (pid: number, signal: NodeJS.Signals) => {
    if (!live.has(pid)) throw Object.assign(new Error('ESRCH'), { code: 'ESRCH' });
    signals.push(`${signal} ${pid}`);
    if (signal === 'SIGKILL' || !stubborn.has(pid)) live.delete(pid);
  };
  return { procTable, kill, signals, live };
}

test("a shim of the embedded containerd whose bundle is gone and that runs nothing is ended by its PID; one with a bundle, one still running a process, another containerd's and a launcher are left", async () => {
  const t = table({
    100: { args: shim('lost'), parent: 1 },
    101: { args: shim('kept'), parent: 1 },
    102: { args: shim('busy'), parent: 1 },
    103: { args: ['/pause'], parent: 102 },
    104: { args: shim('system', '/run/containerd/containerd.sock'), parent: 1 },
    105: { args: shim('starting', paths.socket, ['start']), parent: 1 },
  });
  const lines: string[] = [];
  const withBundle = new Set([join(paths.stateDir, 'io.containerd.runtime.v2.task', 'k8s.io', 'kept')]);
  const ended = await reapLostShims(paths, (l) => lines.push(l), {
    procs: t.procTable,
    kill: t.kill,
    bundleExists: (p) => withBundle.has(p),
    graceMs: 200,
  });
  assert.deepEqual(ended, [100]);
  assert.deepEqual(t.signals, ['SIGTERM 100']);
  assert.deepEqual([...t.live.keys()].sort(), [101, 102, 103, 104, 105]);
  assert.ok(
    lines.some((l) => /shim 102 .*runs process 103: left alone/.test(l)),
    lines.join('\n'),
  );
  assert.ok(lines.some((l) => /ended containerd's shim 100 /.test(l)));
});

test('a lost shim that outlives SIGTERM gets SIGKILL after the grace period', async () => {
  const t = table({ 200: { args: shim('stubborn'), parent: 1 } }, new Set([200]));
  const ended = await reapLostShims(paths, () => undefined, { procs: t.procTable, kill: t.kill, bundleExists: () => false, graceMs: 100 });
  assert.deepEqual(ended, [200]);
  assert.deepEqual(t.signals, ['SIGTERM 200', 'SIGKILL 200']);
  assert.equal(t.live.size, 0);
});

test(
  'the host process table: a process named as a shim of our socket is found with its child, and ended when its ' + 'bundle is gone',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podctl-shims-'));
    const own = embeddedPaths({ root: join(dir, 'root'), runDir: join(dir, 'run') });
    // A stand-in shim: argv[0] says containerd-shim-runc-v2 (bash's exec -a), the flags name our socket, and it has a child until the test
    // ends it.
    const code = "require('child_process').spawn('sleep', ['60'], { stdio: 'ignore' }); setInterval(() => {}, 1000)";
    const child = spawn(
      'bash',
      ['-c', `exec -a containerd-shim-runc-v2 "${process.execPath}" -e "${code}" -- -namespace k8s.io -id standin -address ${own.socket}`],
      { stdio: 'ignore' },
    );
    const grandchildren: number[] = [];
    try {
      let found: ReturnType<typeof embeddedShims> = [];
      // Until its child has exec'd sleep: between the fork and the exec, the child still reads as the stand-in (two found).
      const settled = () => found.length === 1 && found[0]!.children.length > 0;
      for (const deadline = Date.now() + 30_000; !settled() && Date.now() < deadline;) {
        found = embeddedShims(own, hostProcTable());
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.equal(found.length, 1, 'the stand-in is found by its socket');
      assert.equal(found[0]!.pid, child.pid);
      assert.equal(found[0]!.id, 'standin');
      assert.equal(found[0]!.children.length, 1, 'its sleep is its child');
      assert.match(hostProcTable().startTime(child.pid!) ?? '', /^\d+$/, 'its start time, from /proc/PID/stat');
      grandchildren.push(...found[0]!.children);
      // While it runs a process it is left alone, even with no bundle.
      assert.deepEqual(await reapLostShims(own, () => undefined, { graceMs: 500 }), []);
      assert.equal(child.exitCode, null);

      // With its bundle present it is not lost: kept even once its child is gone.
      process.kill(found[0]!.children[0]!, 'SIGKILL');
      const bundle = join(own.stateDir, 'io.containerd.runtime.v2.task', 'k8s.io', 'standin');
      mkdirSync(bundle, { recursive: true });
      for (const deadline = Date.now() + 30_000; embeddedShims(own, hostProcTable())[0]?.children.length && Date.now() < deadline;)
        await new Promise((r) => setTimeout(r, 25));
      assert.deepEqual(embeddedShims(own, hostProcTable())[0]?.children, [], 'its sleep has ended');
      assert.deepEqual(await reapLostShims(own, () => undefined, { graceMs: 500 }), []);

      // Without it, it is ended by its PID.
      rmSync(bundle, { recursive: true });
      const exited = new Promise((r) => child.once('exit', r));
      assert.deepEqual(await reapLostShims(own, () => undefined, { graceMs: 5000 }), [child.pid]);
      await exited;
      assert.deepEqual(embeddedShims(own, hostProcTable()), []);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      for (const pid of grandchildren) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already ended by the test.
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'while containerd runs, a shim without bundle is ended only once it was seen lost on sweeps a minute apart, as the ' + 'same process',
  async () => {
    const t = table({
      300: { args: shim('lost'), parent: 1, start: 'a' },
      301: { args: shim('exiting'), parent: 1, start: 'b' },
      302: { args: shim('busy'), parent: 1, start: 'c' },
      303: { args: ['/pause'], parent: 302 },
    });
    const sweeper = new LostShimSweeper(paths, () => undefined, {
      procs: t.procTable,
      kill: t.kill,
      bundleExists: () => false,
      graceMs: 100,
      confirmMs: 60_000,
    });
    assert.deepEqual(await sweeper.sweep(0), [], 'first seen: a shim is without its bundle for a moment on every removal');
    // 301 was on its way out, as after every pod removal; 300 stays.
    t.live.delete(301);
    assert.deepEqual(await sweeper.sweep(30_000), []);
    assert.deepEqual(await sweeper.sweep(60_000), [300]);
    assert.deepEqual(t.signals, ['SIGTERM 300']);
    assert.ok(t.live.has(302), 'a shim that runs a process is never ended');

    // A PID taken again by a new process between two sweeps starts its minute again.
    t.live.set(300, { args: shim('reused'), parent: 1, start: 'd' });
    const again = new LostShimSweeper(paths, () => undefined, {
      procs: t.procTable,
      kill: t.kill,
      bundleExists: () => false,
      graceMs: 100,
      confirmMs: 60_000,
    });
    assert.deepEqual(await again.sweep(0), []);
    t.live.set(300, { args: shim('reused'), parent: 1, start: 'e' });
    assert.deepEqual(await again.sweep(60_000), []);
    assert.deepEqual(await again.sweep(120_000), [300]);
  },
);
