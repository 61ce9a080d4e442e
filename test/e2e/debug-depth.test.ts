import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { parseManifestText } from '../../src/core/pod/index.js';
import { writeTar } from '../../src/core/exec/tar.js';
import { E2E_NAMESPACE, podctlAsync, scratchDir, startE2ENode, startPodctl, waitForStatus, type E2ENode } from '../support/e2e.js';

/**
 * cp and port-forward against pods an in-process kubelet keeps (agent
 * debug-depth-e2e); the commands read the runtime by podctl's labels.
 */
let node: E2ENode;
const logRoot = scratchDir('e2e-depth-logs');
const rootDir = scratchDir('e2e-depth-root');
const work = scratchDir('e2e-depth-work');
const NS = E2E_NAMESPACE;

// Flags go first: everything after -- belongs to the container's command.
const cli = (args: string[], timeoutMs?: number) => podctlAsync([args[0]!, '-n', NS, '--root-dir', rootDir.dir, ...args.slice(1)], { timeoutMs });
const start = (args: string[]) => startPodctl([args[0]!, '-n', NS, '--root-dir', rootDir.dir, ...args.slice(1)]);

function pod(name: string, containers: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${NS}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n${containers}`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/e2e/${name}.yaml` }, { nodeName: 'e2e' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

const running = (s: IPodStatus) => s.phase === 'Running' && (s.containerStatuses ?? []).every((c) => c.state?.running);
const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

before(async () => {
  node = await startE2ENode({ logRoot: logRoot.dir, agent: 'debug-depth-e2e' });
});

after(async () => {
  await node.stop();
  logRoot.cleanup();
  rootDir.cleanup();
  work.cleanup();
});

test('cp: a 5 MB file to the pod and back keeps its sha256; a directory comes back into an existing directory', async () => {
  const box = pod('cpbox', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
  node.loop.addPods([box]);
  await waitForStatus(node.kubelet, box, running, 60_000);
  const src = join(work.dir, 'big.bin');
  writeFileSync(src, randomBytes(5 * 1024 * 1024));

  const up = await cli(['cp', src, 'cpbox:/tmp/in/big.bin']);
  assert.equal(up.code, 0, up.stderr);
  const back = join(work.dir, 'back.bin');
  const down = await cli(['cp', 'cpbox:/tmp/in/big.bin', back]);
  assert.equal(down.code, 0, down.stderr);
  assert.equal(sha256(back), sha256(src));

  const into = join(work.dir, 'into');
  mkdirSync(into);
  const dir = await cli(['cp', 'cpbox:/tmp/in', into]);
  assert.equal(dir.code, 0, dir.stderr);
  assert.equal(sha256(join(into, 'in', 'big.bin')), sha256(src));

  const missing = await cli(['cp', 'cpbox:/no/such', join(work.dir, 'none')]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /tar in the container exited 1: .*'\/no'/);
  await node.remove(box);
});

test('cp: a hostile container whose tar sends "../x" is refused, and nothing is written outside (or inside) the destination', async () => {
  // The container's PATH finds /evil/tar first, which prints a crafted archive instead of packing anything.
  const evil = pod(
    'cpevil',
    '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    env: [{name: PATH, value: "/evil:/usr/sbin:/usr/bin:/sbin:/bin"}]\n',
  );
  node.loop.addPods([evil]);
  await waitForStatus(node.kubelet, evil, running, 60_000);
  const crafted = join(work.dir, 'crafted.tar');
  writeFileSync(crafted, writeTar([{ name: 'ok.txt', type: 'file', mode: 0o644, data: Buffer.from('fine') }, { name: '../x', type: 'file', mode: 0o644, data: Buffer.from('escaped') }]));
  const push = await cli(['cp', crafted, 'cpevil:/evil/archive.tar']);
  assert.equal(push.code, 0, push.stderr);
  const arm = await cli(['exec', 'cpevil', '--', 'sh', '-c', 'printf "#!/bin/sh\\ncat /evil/archive.tar\\n" > /evil/tar && chmod +x /evil/tar']);
  assert.equal(arm.code, 0, arm.stderr);

  const base = join(work.dir, 'hostile');
  const dest = join(base, 'dest');
  mkdirSync(dest, { recursive: true });
  const r = await cli(['cp', 'cpevil:/etc/hostname', dest]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /refusing archive entry "\.\.\/x": it would be written outside/);
  assert.deepEqual(readdirSync(dest), []);
  assert.deepEqual(readdirSync(base), ['dest']);
  assert.equal(existsSync(join(work.dir, 'x')), false);
  await node.remove(evil);
});

function get(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.setTimeout(30_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

test('port-forward pod/web: busybox httpd answers on 127.0.0.1, 20 parallel requests all succeed; the pod stopping ends it with a message', async () => {
  const token = `served-${randomBytes(6).toString('hex')}`;
  const web = pod('web', `  - {name: app, image: busybox:1.36, command: [sh, -c, "mkdir -p /www && echo ${token} > /www/index.html && exec httpd -f -p 8080 -h /www"]}\n`);
  node.loop.addPods([web]);
  await waitForStatus(node.kubelet, web, running, 60_000);

  const pf = start(['port-forward', 'pod/web', '0:8080']);
  try {
    const line = await pf.waitFor(/Forwarding from 127\.0\.0\.1:\d+ -> 8080/, 60_000);
    const port = Number(/:(\d+) ->/.exec(line)![1]);
    // httpd may still be binding right after the container started: the first request is retried.
    let first: { status: number; body: string } | undefined;
    for (let i = 0; i < 50 && first?.status !== 200; i++) {
      first = await get(port).catch(() => undefined);
      if (first?.status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(first?.body.trim(), token);
    const all = await Promise.all(Array.from({ length: 20 }, () => get(port)));
    assert.deepEqual(
      all.map((r) => [r.status, r.body.trim()]),
      Array.from({ length: 20 }, () => [200, token]),
    );

    await node.remove(web);
    const done = await pf.done;
    assert.equal(done.code, 1);
    assert.match(done.stderr, /port-forward: pod "web" (stopped|is gone)/);
  } finally {
    pf.kill('SIGKILL');
  }
});

test('port-forward: --address beyond loopback warns; a bad port spec is a usage error (exit 2)', async () => {
  const bad = await cli(['port-forward', 'pod/nothing', 'http']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /http: expected \[LOCAL:\]REMOTE/);
  const missing = await cli(['port-forward', 'pod/nothing', '8080', '--address', '0.0.0.0']);
  assert.match(missing.stderr, /Warning: listening on 0\.0\.0\.0/);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /pod "nothing" not found/);
});
