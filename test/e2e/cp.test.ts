import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { parseManifestText } from '../../src/core/pod/index.js';
import { E2E_ENDPOINT, E2E_NAMESPACE, podctlAsync, scratchDir, startE2ENode, waitForStatus, type E2ENode } from '../support/e2e.js';

/**
 * cp against a busybox pod an in-process kubelet keeps: a 200 MB file both ways within a
 * bounded RSS, and what comes out of a container's archive (permission bits only, the
 * copier's ownership, no device nodes or FIFOs).
 */
let node: E2ENode;
const logRoot = scratchDir('e2e-cp-logs');
const rootDir = scratchDir('e2e-cp-root');
const nodeRoot = scratchDir('e2e-cp-node-root');
const work = scratchDir('e2e-cp-work');
const NS = E2E_NAMESPACE;
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

const withFlags = (args: string[]) => [args[0]!, '-n', NS, '--root-dir', rootDir.dir, ...args.slice(1)];
const cli = (args: string[]) => podctlAsync(withFlags(args));
const running = (s: IPodStatus) => s.phase === 'Running' && (s.containerStatuses ?? []).every((c) => c.state?.running);

function busybox(name: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${NS}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/e2e/${name}.yaml` }, { nodeName: 'e2e' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

/**
 * podctl with these arguments, and its peak resident set (Node's own maxRSS, written by a preload as the process exits:
 * the preload runs in cp's worker too, which exits first and says nothing).
 */
function podctlPeak(args: string[]): Promise<{ code: number; stderr: string; peakKiB: number }> {
  const preload =
    "data:text/javascript,import { isMainThread } from 'node:worker_threads'; if (isMainThread) process.on('exit', () => " +
    "process.stderr.write('\\nmaxRSS=' + process.resourceUsage().maxRSS + '\\n'))";
  const child = spawn(process.execPath, ['--import', preload, BIN, ...withFlags(args)], {
    env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => {
    child.on('close', (code) => {
      const m = /\nmaxRSS=(\d+)\n/.exec(stderr);
      resolve({ code: code ?? -1, stderr, peakKiB: m ? Number(m[1]) : NaN });
    });
  });
}

async function sha256(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

before(async () => {
  node = await startE2ENode({ logRoot: logRoot.dir, rootDir: nodeRoot.dir, agent: 'cp-e2e' });
});

after(async () => {
  await node.stop();
  logRoot.cleanup();
  rootDir.cleanup();
  nodeRoot.cleanup();
  work.cleanup();
});

// The 100 MB both ways. To the pod, podctl holds a file's data in two reused frames (86-89 MB measured, some 70 MB of
// it a start that loads oclif and the CRI client). From the pod, the archive is received in a worker with a small young
// generation (see copyFromPod): 92-97 MB measured, where the same copy in the main thread peaked at 116-121 MB.
const PEAK_BOUND_KIB = 100 * 1024;

test('cp of a 200 MB file to the pod and back keeps its sha256, streamed both ways: podctl stays under 100 MiB both ways', async (t) => {
  const box = busybox('cpbig');
  node.loop.addPods([box]);
  await waitForStatus(node.kubelet, box, running, 60_000);
  const src = join(work.dir, 'big.bin');
  const out = createWriteStream(src);
  for (let i = 0; i < 200; i++) if (!out.write(randomBytes(1024 * 1024))) await once(out, 'drain');
  out.end();
  await once(out, 'finish');

  const up = await podctlPeak(['cp', src, 'cpbig:/tmp/in/big.bin']);
  assert.equal(up.code, 0, up.stderr);
  assert.ok(up.peakKiB < PEAK_BOUND_KIB, `to the pod: peak RSS ${up.peakKiB} KiB`);
  const back = join(work.dir, 'back.bin');
  const down = await podctlPeak(['cp', 'cpbig:/tmp/in/big.bin', back]);
  assert.equal(down.code, 0, down.stderr);
  assert.ok(down.peakKiB < PEAK_BOUND_KIB, `from the pod: peak RSS ${down.peakKiB} KiB`);
  t.diagnostic(`peak RSS: ${up.peakKiB} KiB to the pod, ${down.peakKiB} KiB from it`);
  assert.equal(statSync(back).size, 200 * 1024 * 1024);
  assert.equal(await sha256(back), await sha256(src));
  assert.deepEqual(readdirSync(work.dir).sort(), ['back.bin', 'big.bin'], 'no staging directory left');
  await node.remove(box);
});

test(
  'cp from a pod drops setuid, setgid and sticky bits and gives the files to the user who ran it; a device node or FIFO in the ' +
    'archive is refused and nothing is written',
  async () => {
    const box = busybox('cpmodes');
    node.loop.addPods([box]);
    await waitForStatus(node.kubelet, box, running, 60_000);
    const tool = join(work.dir, 'tool');
    writeFileSync(tool, '#!/bin/sh\nid\n', { mode: 0o755 });
    const push = await cli(['cp', tool, 'cpmodes:/d/bash']);
    assert.equal(push.code, 0, push.stderr);
    const arm = await cli([
      'exec',
      'cpmodes',
      '--',
      'sh',
      '-c',
      'mkdir /d/shared /d/tmp && chown -R 1234:1234 /d && chmod 4755 /d/bash && chmod 2775 /d/shared && chmod 1777 /d/tmp && ls -ln /d',
    ]);
    assert.equal(arm.code, 0, arm.stderr);
    assert.match(arm.stdout, /-rwsr-xr-x\s+1 1234\s+1234/);

    const outDir = join(work.dir, 'out');
    mkdirSync(outDir);
    const r = await cli(['cp', 'cpmodes:/d', outDir]);
    assert.equal(r.code, 0, r.stderr);
    const bash = statSync(join(outDir, 'd', 'bash'));
    const umask = process.umask();
    assert.equal(bash.mode & 0o7777, 0o755 & ~umask, `mode ${(bash.mode & 0o7777).toString(8)}`);
    assert.equal(bash.uid, process.getuid!());
    assert.equal(bash.gid, process.getgid!());
    assert.equal(readFileSync(join(outDir, 'd', 'bash'), 'utf8'), '#!/bin/sh\nid\n');
    for (const d of ['shared', 'tmp']) {
      const st = statSync(join(outDir, 'd', d));
      assert.equal(st.mode & 0o7000, 0, `${d}: mode ${(st.mode & 0o7777).toString(8)}`);
      assert.equal(st.uid, process.getuid!());
    }

    // A FIFO is something any container can make; a device node needs CAP_MKNOD, which the default set has.
    const fifo = await cli(['exec', 'cpmodes', '--', 'sh', '-c', 'mkdir -p /f/sub && echo ok > /f/sub/ok && mkfifo /f/sub/pipe']);
    assert.equal(fifo.code, 0, fifo.stderr);
    const dev = await cli(['exec', 'cpmodes', '--', 'sh', '-c', 'mkdir -p /v && echo ok > /v/ok && mknod /v/null c 1 3']);
    assert.equal(dev.code, 0, `mknod in the container: ${dev.stderr}`);
    for (const [remote, pattern] of [
      ['cpmodes:/f', /cp: archive entry "f\/sub\/pipe" is a FIFO, which podctl cp does not copy/],
      ['cpmodes:/v', /cp: archive entry "v\/null" is a character device, which podctl cp does not copy/],
    ] as const) {
      const dest = join(work.dir, `refused-${remote.slice(-1)}`);
      mkdirSync(dest);
      const refused = await cli(['cp', remote, dest]);
      assert.equal(refused.code, 1, refused.stdout);
      assert.match(refused.stderr, pattern);
      assert.deepEqual(readdirSync(dest), [], `nothing written for ${remote}`);
    }
    await node.remove(box);
  },
);
