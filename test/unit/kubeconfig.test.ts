import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, lstatSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import yaml from 'js-yaml';
import { defaultKubeconfigPath, displayPath, kubeApiDir, mergeIntoKubeconfig, nodeKubeconfig } from '../../src/cli/kubeconfig.js';
import { ensureKubeCredentials, type KubeCredentials } from '../../src/core/kubeapi/certs.js';
import { kubeconfigFor, mergeKubeconfig, readKubeEndpoint } from '../../src/core/kubeapi/kubeconfig.js';

const URL = 'https://127.0.0.1:6443';
let root: string;
let rootDir: string;
let creds: KubeCredentials;

before(() => {
  root = mkdtempSync(join(tmpdir(), 'podctl-kubeconfig-'));
  rootDir = join(root, 'state');
  creds = ensureKubeCredentials(kubeApiDir(rootDir));
  writeFileSync(join(kubeApiDir(rootDir), 'endpoint.json'), JSON.stringify({ url: URL }));
});

after(() => rmSync(root, { recursive: true, force: true }));

const b64 = (s: string): string => Buffer.from(s).toString('base64');

test('kubeconfigFor: a v1 Config with the podctl cluster, the podctl-admin user and the podctl context', () => {
  assert.deepEqual(kubeconfigFor(creds, URL), {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    clusters: [{ name: 'podctl', cluster: { server: URL, 'certificate-authority-data': b64(creds.caCert) } }],
    users: [{ name: 'podctl-admin', user: { 'client-certificate-data': b64(creds.clientCert), 'client-key-data': b64(creds.clientKey) } }],
    contexts: [{ name: 'podctl', context: { cluster: 'podctl', user: 'podctl-admin', namespace: 'default' } }],
    'current-context': 'podctl',
  });
  const byPath = kubeconfigFor(creds, URL, { name: 'lab', embed: false }) as Record<string, Array<Record<string, unknown>>>;
  assert.deepEqual(byPath.clusters[0], { name: 'lab', cluster: { server: URL, 'certificate-authority': creds.paths.caCert } });
  assert.deepEqual(byPath.users[0], {
    name: 'lab-admin',
    user: { 'client-certificate': creds.paths.clientCert, 'client-key': creds.paths.clientKey },
  });
});

const theirs = {
  apiVersion: 'v1',
  kind: 'Config',
  preferences: { colors: true },
  extensions: [{ name: 'tool', extension: { a: 1 } }],
  clusters: [
    { name: 'prod', cluster: { server: 'https://prod.invalid' } },
    { name: 'podctl', cluster: { server: 'https://127.0.0.1:1' } },
  ],
  users: [{ name: 'me', user: { token: 'x' } }],
  contexts: [
    { name: 'prod', context: { cluster: 'prod', user: 'me' } },
    { name: 'podctl', context: { cluster: 'podctl', user: 'old' } },
  ],
  'current-context': 'prod',
};

test('mergeKubeconfig keeps every other entry and field, replaces ours in place, and leaves current-context set', () => {
  const ours = kubeconfigFor(creds, URL);
  const before = structuredClone(theirs);
  const merged = mergeKubeconfig(theirs, ours) as typeof theirs;
  assert.deepEqual(theirs, before, 'the existing object is not changed');
  assert.deepEqual(merged.preferences, theirs.preferences);
  assert.deepEqual(merged.extensions, theirs.extensions);
  assert.equal(merged['current-context'], 'prod');
  assert.deepEqual(
    merged.clusters.map((c) => c.name),
    ['prod', 'podctl'],
  );
  assert.equal(merged.clusters[1].cluster.server, URL);
  assert.deepEqual(
    merged.users.map((u) => u.name),
    ['me', 'podctl-admin'],
  );
  assert.deepEqual(merged.contexts[0], theirs.contexts[0]);
  assert.deepEqual(merged.contexts[1], { name: 'podctl', context: { cluster: 'podctl', user: 'podctl-admin', namespace: 'default' } });
});

test('mergeKubeconfig sets current-context only where none was, and refuses what is no kubeconfig', () => {
  const ours = kubeconfigFor(creds, URL);
  assert.equal(mergeKubeconfig({ ...theirs, 'current-context': '' }, ours)['current-context'], 'podctl');
  assert.deepEqual(mergeKubeconfig(undefined, ours), ours);
  assert.deepEqual(mergeKubeconfig({ clusters: null }, ours).clusters, ours.clusters);
  assert.throws(() => mergeKubeconfig(['a'], ours), /not a mapping/);
  assert.throws(() => mergeKubeconfig({ contexts: {} }, ours), /contexts is not a list/);
  assert.throws(() => mergeKubeconfig({ users: [{ user: {} }] }, ours), /users\[0\] has no name/);
});

test('podctl kubeconfig --merge: a new file (0600, in a 0700 directory) is added to, then updated', () => {
  const path = join(root, 'home-a', '.kube', 'config');
  assert.deepEqual(mergeIntoKubeconfig(rootDir, path), { path, action: 'added' });
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.equal(statSync(join(root, 'home-a', '.kube')).mode & 0o777, 0o700);
  assert.deepEqual(yaml.load(readFileSync(path, 'utf8')), nodeKubeconfig(rootDir));
  assert.deepEqual(mergeIntoKubeconfig(rootDir, path), { path, action: 'updated' });
  assert.deepEqual(yaml.load(readFileSync(path, 'utf8')), nodeKubeconfig(rootDir));
});

test('podctl kubeconfig --merge keeps the contexts already in the file, and writes through a symlink', () => {
  const dir = join(root, 'home-b');
  mkdirSync(dir);
  writeFileSync(join(dir, 'real'), yaml.dump(theirs));
  symlinkSync(join(dir, 'real'), join(dir, 'config'));
  assert.equal(mergeIntoKubeconfig(rootDir, join(dir, 'config')).action, 'updated');
  assert.ok(lstatSync(join(dir, 'config')).isSymbolicLink());
  const merged = yaml.load(readFileSync(join(dir, 'real'), 'utf8'));
  assert.deepEqual(merged, mergeKubeconfig(theirs, nodeKubeconfig(rootDir)));
});

test('an unparsable kubeconfig is refused, naming it, and left as it was', () => {
  const path = join(root, 'broken-config');
  for (const text of ['clusters: [\n  - {name: x\n', '- a list\n', 'contexts: 3\n']) {
    writeFileSync(path, text);
    assert.throws(
      () => mergeIntoKubeconfig(rootDir, path),
      (err: Error) => err.message.startsWith(`${path}: `) && err.message.endsWith('nothing written'),
    );
    assert.equal(readFileSync(path, 'utf8'), text);
  }
});

test('without an endpoint or credentials recorded, the agent is to be started first, and nothing is made', () => {
  const empty = join(root, 'no-agent');
  assert.throws(() => nodeKubeconfig(empty), {
    message: `no kube API endpoint recorded under ${join(empty, 'kubeapi')}: start the agent (podctl agent run) first`,
  });
  mkdirSync(join(empty, 'kubeapi'), { recursive: true });
  writeFileSync(join(empty, 'kubeapi', 'endpoint.json'), JSON.stringify({ url: URL }));
  assert.throws(() => nodeKubeconfig(empty), /no kube API credentials under .*: start the agent \(podctl agent run\) first/);
  writeFileSync(join(empty, 'kubeapi', 'endpoint.json'), '{"url": "http://127.0.0.1:6443"}');
  assert.throws(() => readKubeEndpoint(join(empty, 'kubeapi')), /endpoint.json: field url: expected an https:\/\/ URL/);
});

test("the default kubeconfig is $KUBECONFIG's first entry, else ~/.kube/config; the home shows as ~", () => {
  assert.equal(defaultKubeconfigPath({ KUBECONFIG: '/a/one:/a/two' }, '/home/u'), '/a/one');
  assert.equal(defaultKubeconfigPath({ KUBECONFIG: ':/a/two' }, '/home/u'), '/a/two');
  assert.equal(defaultKubeconfigPath({}, '/home/u'), '/home/u/.kube/config');
  assert.equal(displayPath('/home/u/.kube/config', '/home/u'), '~/.kube/config');
  assert.equal(displayPath('/home/user2/config', '/home/u'), '/home/user2/config');
});

test('the command prints the YAML, and --merge says what it did', async () => {
  const run = promisify(execFile);
  const bin = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');
  const printed = await run(process.execPath, [bin, 'kubeconfig', '--root-dir', rootDir]);
  assert.deepEqual(yaml.load(printed.stdout), nodeKubeconfig(rootDir));
  const home = join(root, 'home-c');
  const env = { ...process.env, HOME: home, KUBECONFIG: '' };
  const merged = await run(process.execPath, [bin, 'kubeconfig', '--merge', '--root-dir', rootDir], { env });
  assert.equal(merged.stdout, 'Context "podctl" added to ~/.kube/config\n');
  const again = await run(process.execPath, [bin, 'kubeconfig', '--merge', '--root-dir', rootDir], { env });
  assert.equal(again.stdout, 'Context "podctl" updated in ~/.kube/config\n');
});
