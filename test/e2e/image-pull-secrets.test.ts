import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { embeddedPaths, registryPort } from '../../src/core/embedded/paths.js';
import { hostsToml } from '../../src/core/embedded/config.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';

/*
 * A registry of the test's own on a second loopback port, with htpasswd auth, holding a copy of
 * busybox under a private name. containerd resolves 127.0.0.1:PORT through a hosts.toml the test
 * writes beside runtime up's (loopback only, as every other one) and removes at the end.
 */
const USER = 'alice';
const PASSWORD = 's3cret-pw';
let client: CriClient;
let registry: ChildProcess | undefined;
let port = 0;
let hostsDir = '';
const dir = scratchDir('e2e-pull-secrets');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  port = await freePort();
  writeFileSync(join(dir.dir, 'htpasswd'), `${USER}:${bcrypt.hashSync(PASSWORD, 10)}\n`);
  writeFileSync(
    join(dir.dir, 'registry.yml'),
    `version: 0.1\nlog: {level: warn}\nstorage: {filesystem: {rootdirectory: ${join(dir.dir, 'data')}}}\nhttp: {addr: "127.0.0.1:${port}"}\nauth:\n  htpasswd: {realm: podctl-e2e, path: ${join(dir.dir, 'htpasswd')}}\n`,
  );
  registry = spawn('docker-registry', ['serve', join(dir.dir, 'registry.yml')], { stdio: 'ignore' });
  await eventually('the auth registry to answer 401', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v2/`).catch(() => undefined);
    return res?.status === 401 ? true : undefined;
  });
  const copy = spawnSync(
    'skopeo',
    [
      'copy',
      '--quiet',
      '--src-tls-verify=false',
      '--dest-tls-verify=false',
      '--dest-creds',
      `${USER}:${PASSWORD}`,
      `docker://127.0.0.1:${registryPort()}/library/busybox:1.36`,
      `docker://127.0.0.1:${port}/private/busybox:1`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(copy.status, 0, copy.stderr);
  hostsDir = join(embeddedPaths().certsDir, `127.0.0.1:${port}`);
  mkdirSync(hostsDir, { recursive: true });
  writeFileSync(join(hostsDir, 'hosts.toml'), hostsToml(`http://127.0.0.1:${port}`));
});

after(async () => {
  if (registry?.pid) process.kill(registry.pid, 'SIGTERM');
  if (hostsDir) rmSync(hostsDir, { recursive: true, force: true });
  await removeE2EPods(client);
  await client.removeImage(`127.0.0.1:${port}/private/busybox:1`).catch(() => undefined);
  client.close();
  dir.cleanup();
});

const dockerConfig = (password: string) =>
  JSON.stringify({ auths: { [`127.0.0.1:${port}`]: { auth: Buffer.from(`${USER}:${password}`).toString('base64') } } });

function manifest(name: string, secret?: { name: string; password: string }): string {
  const file = join(dir.dir, `${name}.yaml`);
  const pod = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n${secret ? `  imagePullSecrets: [{name: ${secret.name}}]\n` : ''}  containers:\n  - name: app\n    image: 127.0.0.1:${port}/private/busybox:1\n    imagePullPolicy: Always\n    command: [sleep, "3600"]\n`;
  const secretDoc = secret
    ? `---\napiVersion: v1\nkind: Secret\nmetadata: {name: ${secret.name}, namespace: ${E2E_NAMESPACE}}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '${dockerConfig(secret.password)}'\n`
    : '';
  writeFileSync(file, pod + secretDoc);
  return file;
}

/** sync-once -o json prints one pod, or a List of them. */
function pods(stdout: string): IPod[] {
  const out = JSON.parse(stdout) as IPod | { items: IPod[] };
  return 'items' in out ? out.items : [out];
}

const syncOnce = (file: string, rootDir: string) =>
  podctl([
    'sync-once',
    file,
    '--root-dir',
    rootDir,
    '--log-root',
    join(dir.dir, 'logs'),
    '--max-retries',
    '1',
    '--retry-delay',
    '200ms',
    '--timeout',
    '90s',
    '-o',
    'json',
  ]);

test('a private image is pulled with the imagePullSecret of the set, and fails with 401 without it or with a wrong password', async () => {
  const rootDir = join(dir.dir, 'root-secret');
  const ok = syncOnce(manifest('private-ok', { name: 'regcred', password: PASSWORD }), rootDir);
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  assert.equal(pods(ok.stdout)[0]?.status?.containerStatuses?.[0]?.state?.running !== undefined, true, ok.stdout);

  for (const [name, secret] of [
    ['private-none', undefined],
    ['private-wrong', { name: 'regcred', password: 'wrong' }],
  ] as const) {
    const r = syncOnce(manifest(name, secret), rootDir);
    assert.equal(r.code, 1, `${name}: ${r.stdout}${r.stderr}`);
    const waiting = pods(r.stdout)[0]?.status?.containerStatuses?.[0]?.state?.waiting;
    assert.match(waiting?.reason ?? '', /^(ErrImagePull|ImagePullBackOff)$/, `${name}: ${r.stdout}`);
    assert.match(r.stdout + r.stderr, /401 Unauthorized/, name);
  }
  await removeE2EPods(client);
});

test("the node's config.json in the root dir supplies credentials to a pod that names no pull secret", async () => {
  const rootDir = join(dir.dir, 'root-node');
  mkdirSync(rootDir, { recursive: true });
  writeFileSync(join(rootDir, 'config.json'), dockerConfig(PASSWORD));
  const r = syncOnce(manifest('private-node'), rootDir);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  await removeE2EPods(client);
});

test(
  'run --detach hands the pod to the agent with its image pull Secret: the agent pulls the private image with it and ' + 'the pod runs',
  async () => {
    // run --detach starts an agent on this root dir of its own, stopped by its PID at the end.
    const rootDir = join(dir.dir, 'root-detach');
    try {
      const r = podctl([
        'run',
        '--detach',
        manifest('private-detach', { name: 'regcred', password: PASSWORD }),
        '--root-dir',
        rootDir,
        '--log-root',
        join(dir.dir, 'logs'),
        '--timeout',
        '90s',
      ]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /private-detach\s+Running/);
      const events = podctl(['events', '-n', E2E_NAMESPACE, '--for', 'pod/private-detach', '--root-dir', rootDir]);
      assert.equal(events.code, 0, events.stderr);
      assert.doesNotMatch(events.stdout, /FailedToRetrieveImagePullSecret|ErrImagePull/, events.stdout);
    } finally {
      assert.equal(podctl(['agent', 'stop', '--root-dir', rootDir]).code, 0);
      await removeE2EPods(client);
    }
  },
);
