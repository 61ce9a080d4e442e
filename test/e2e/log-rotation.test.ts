import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import {
  E2E_NAMESPACE,
  e2eClient,
  eventually,
  podctl,
  podctlAsync,
  removeE2EPods,
  scratchDir,
  startPodctl,
  type RunningPodctl,
} from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-logrotate');
const root = join(dir.dir, 'root');
const logs = join(dir.dir, 'logs');
const manifests = join(dir.dir, 'manifests');
const started: RunningPodctl[] = [];

// About 1 MB/s: 100 numbered lines of ~1 KB every 0.1 s.
const CHATTY = `i=0; pad=$(printf '%1000s' | tr ' ' x); while true; do for j in 1 2 3 4 5 6 7 8 9 10; do for k in 1 2 3 4 5 6 7 8 9 10; do i=$((i+1)); echo "n=$i $pad"; done; done; sleep 0.1; done`;

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  mkdirSync(manifests, { recursive: true });
});

after(async () => {
  for (const p of started) {
    p.kill('SIGKILL');
    await p.done;
  }
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

/** The counters of `n=<i>` lines, in the order printed. */
const counters = (out: string) => [...out.matchAll(/^n=(\d+) /gm)].map((m) => Number(m[1]));

test(
  'a chatty container: its log rotates at --container-log-max-size, at most max-files kept, older gzipped; logs -f ' + 'misses nothing',
  async () => {
    writeFileSync(
      join(manifests, 'chatty.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: chatty, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sh, -c, ${JSON.stringify(CHATTY)}]\n`,
    );
    const watch = startPodctl([
      'watch',
      manifests,
      '--root-dir',
      root,
      '--log-root',
      logs,
      '--container-log-max-size',
      '1Mi',
      '--container-log-max-files',
      '3',
      '--container-log-monitor-interval',
      '100ms',
    ]);
    started.push(watch);
    const logDir = await eventually(
      'the container writes its log',
      async () => {
        const [s] = await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: 'chatty', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
        const [c] = s ? await client.listContainers({ podSandboxId: s.id }) : [];
        const path = c ? (await client.containerStatus(c.id)).status?.logPath : undefined;
        return path && statSync(path, { throwIfNoEntry: false }) ? join(path, '..') : undefined;
      },
      60_000,
    );

    const follow = startPodctl(['logs', '-f', 'chatty', '-n', E2E_NAMESPACE, '--root-dir', root]);
    started.push(follow);
    // Rotations happen (at ~1 MB/s and 1 MiB, about one a second) while logs -f prints.
    const sizes: number[] = [];
    let rotations = 0;
    await eventually(
      '20 s of rotation',
      async () => {
        const names = readdirSync(logDir);
        assert.ok(names.length <= 3, `at most 3 files at any time: ${names.join(', ')}`);
        for (const n of names) sizes.push(statSync(join(logDir, n), { throwIfNoEntry: false })?.size ?? 0);
        rotations = Math.max(rotations, names.filter((n) => n.endsWith('.gz')).length);
        return counters(follow.stdout()).length > 0 && (counters(follow.stdout()).at(-1) ?? 0) > 20_000 ? true : undefined;
      },
      90_000,
    );
    // The state rotation keeps: the live 0.log and the older rotated files gzipped. A single listing can fall
    // between a rename and its gzip (a .gz.tmp) or before the runtime reopens 0.log: the state is awaited.
    const names = await eventually(
      'the live 0.log beside a gzipped older file',
      async () => {
        const now = readdirSync(logDir).sort();
        assert.ok(now.length <= 3, `at most 3 files at any time: ${now.join(', ')}`);
        return now.includes('0.log') && now.some((n) => /^0\.log\.\d{8}-\d{6}\.\d{3}\.gz$/.test(n)) ? now : undefined;
      },
      30_000,
    );
    assert.ok(names.length <= 3, names.join(', '));
    assert.ok(rotations >= 1);
    // The live file grows past 1 MiB by what is written until the next monitor pass (about 100 KB a
    // pass at 100 ms): bounded far below the 20 MB it would reach unrotated, with room for a loaded
    // machine's late passes. A rotated file was rotated for being over 1 MiB, never before.
    assert.ok(Math.max(...sizes) <= 8 * 1024 * 1024, `no file grows unbounded (largest ${Math.max(...sizes)} bytes)`);
    const rotatedBytes = await eventually(
      'a gzipped rotated file to read',
      async () => {
        const gz = readdirSync(logDir).find((n) => /^0\.log\.\d{8}-\d{6}\.\d{3}\.gz$/.test(n));
        try {
          return gz ? gunzipSync(readFileSync(join(logDir, gz))).length : undefined;
        } catch (err) {
          // Removed by the next rotation between the listing and the read: another one is taken.
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw err;
        }
      },
      30_000,
    );
    assert.ok(rotatedBytes >= 1024 * 1024, `a rotated file held at least the 1 MiB limit (${rotatedBytes} bytes)`);

    follow.interrupt();
    await follow.done;
    const seen = counters(follow.stdout());
    const first = seen[0]!;
    const wrong = seen.findIndex((n, i) => n !== first + i);
    assert.deepEqual(
      wrong,
      -1,
      `logs -f printed every counter once, in order, across the rotations: ${JSON.stringify(seen.slice(Math.max(0, wrong - 3), wrong + 3))} at ${wrong}`,
    );

    const tail = podctl(['logs', 'chatty', '-n', E2E_NAMESPACE, '--tail', '5', '--root-dir', root]);
    assert.equal(tail.code, 0, tail.stderr);
    const last = counters(tail.stdout);
    assert.equal(last.length, 5);
    assert.deepEqual(
      last,
      [0, 1, 2, 3, 4].map((i) => last[0]! + i),
    );

    // stats: the pod's logs are measured on disk, bounded by the rotation.
    const stats = podctl(['stats', '--pod', 'chatty', '-n', E2E_NAMESPACE, '--interval', '200', '-o', 'json']);
    assert.equal(stats.code, 0, stats.stderr);
    const disk = (
      JSON.parse(stats.stdout) as { pods: { name: string; logs: { bytes: number } }[]; imageFilesystem?: { usedBytes: number } }
    ).pods.find((p) => p.name === 'chatty');
    assert.ok(disk && disk.logs.bytes > 0 && disk.logs.bytes < 4 * 1024 * 1024, `logs of chatty on disk: ${disk?.logs.bytes}`);

    // SIGTERM leaves pods running; the after hook removes them.
    watch.kill('SIGTERM');
    await watch.done;
  },
);

test(
  'a container that printed 400,000 lines, its log rotated at the default 10Mi: logs --tail 2, logs -f and logs -f --tail 2 ' +
    'print them',
  async () => {
    // The chatty pod of the test before writes on with no agent to rotate its log: it goes first.
    await removeE2EPods(client);
    const bigManifests = join(dir.dir, 'manifests-big');
    const bigRoot = join(dir.dir, 'root-big');
    mkdirSync(bigManifests, { recursive: true });
    // About 19 MB of CRI log: over the 10Mi default, so at least one rotation. A pause between the two
    // halves lets a monitor pass rotate the file while the container still writes (or not: both must read).
    const print = (from: number, to: number) => `awk 'BEGIN { for (i = ${from}; i <= ${to}; i++) printf "n=%d \\n", i }'`;
    const script = `${print(1, 300_000)}; sleep 2; ${print(300_001, 400_000)}; exec sleep 3600`;
    writeFileSync(
      join(bigManifests, 'many.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: many, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sh, -c, ${JSON.stringify(script)}]\n`,
    );
    const watch = startPodctl([
      'watch',
      bigManifests,
      '--root-dir',
      bigRoot,
      '--log-root',
      logs,
      '--container-log-monitor-interval',
      '200ms',
    ]);
    started.push(watch);
    const logDir = await eventually(
      'the container writes its log',
      async () => {
        const [s] = await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: 'many', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
        const [c] = s ? await client.listContainers({ podSandboxId: s.id }) : [];
        const path = c ? (await client.containerStatus(c.id)).status?.logPath : undefined;
        return path && statSync(path, { throwIfNoEntry: false }) ? join(path, '..') : undefined;
      },
      60_000,
    );
    const args = ['many', '-n', E2E_NAMESPACE, '--root-dir', bigRoot];
    // Every line written and the log rotated: the last line shows in the tail, and a rotated file exists.
    await eventually(
      'the last line written and the log rotated',
      async () => {
        const t = await podctlAsync(['logs', ...args, '--tail', '1']);
        assert.equal(t.code, 0, t.stderr);
        return t.stdout === 'n=400000 \n' && readdirSync(logDir).some((n) => /^0\.log\.\d{8}-\d{6}\.\d{3}/.test(n)) ? true : undefined;
      },
      120_000,
    );

    const tail = await podctlAsync(['logs', ...args, '--tail', '2']);
    assert.equal(tail.code, 0, tail.stderr);
    assert.equal(tail.stdout, 'n=399999 \nn=400000 \n');

    for (const extra of [[], ['--tail', '2']]) {
      const follow = startPodctl(['logs', '-f', ...args, ...extra]);
      started.push(follow);
      await eventually(
        `logs -f ${extra.join(' ')} reaching the last line`,
        async () => (follow.stdout().endsWith('n=400000 \n') ? true : undefined),
        120_000,
      );
      follow.interrupt();
      const r = await follow.done;
      assert.equal(r.code, 0, r.stderr);
      const seen = counters(r.stdout);
      if (extra.length) assert.deepEqual(seen, [399_999, 400_000]);
      else {
        // Every line once, in order, across the rotated (and gzipped) files: as far back as the rotation keeps.
        assert.equal(seen.at(-1), 400_000);
        const wrong = seen.findIndex((n, i) => n !== seen[0]! + i);
        assert.equal(wrong, -1, `at ${wrong}: ${JSON.stringify(seen.slice(Math.max(0, wrong - 3), wrong + 3))}`);
        assert.equal(seen[0], 1, 'the default 5 files keep all of 19 MB');
      }
    }
    watch.kill('SIGTERM');
    await watch.done;
  },
);
