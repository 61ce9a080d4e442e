import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IPod, ISecret } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import {
  DockerKeyring,
  imageRepository,
  keyringFromSecrets,
  nodeDockerConfigPaths,
  nodeKeyring,
  parseDockerConfig,
} from '../../src/core/credentials/keyring.js';
import { goDuration, ImagePuller, StartContainerError } from '../../src/core/kuberuntime/images.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { container, makePod } from '../support/builders.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

function pullSecret(name: string, auths: Record<string, { username: string; password: string } | { auth: string }>): ISecret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'default' },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) },
  };
}

test('imageRepository: the repository a pull asks for, fully qualified, without tag or digest', () => {
  assert.equal(imageRepository('busybox'), 'docker.io/library/busybox');
  assert.equal(imageRepository('busybox:1.36'), 'docker.io/library/busybox');
  assert.equal(imageRepository('team/app:v1'), 'docker.io/team/app');
  assert.equal(imageRepository('127.0.0.1:5055/private/busybox:1'), '127.0.0.1:5055/private/busybox');
  assert.equal(imageRepository('localhost/app@sha256:abc'), 'localhost/app');
  assert.equal(imageRepository('registry.example.com/a/b'), 'registry.example.com/a/b');
});

test('DockerKeyring: most specific key first, globbed hosts, ports must match, Docker Hub under index.docker.io', () => {
  const k = new DockerKeyring().add(
    parseDockerConfig(
      JSON.stringify({
        auths: {
          'registry.example.com': { username: 'host', password: 'p1' },
          'https://registry.example.com/v2/team': { username: 'team', password: 'p2' },
          '*.corp.example': { auth: b64('glob:p3') },
          '127.0.0.1:5055': { username: 'port', password: 'p4' },
          'https://index.docker.io/v1/': { username: 'hub', password: 'p5' },
        },
      }),
    ),
  );
  assert.deepEqual(
    k.lookup('registry.example.com/team/app:1').map((a) => a.username),
    ['team', 'host'],
  );
  assert.deepEqual(
    k.lookup('registry.example.com/other/app').map((a) => a.username),
    ['host'],
  );
  assert.deepEqual(
    k.lookup('registry.example.com/teamwork/app').map((a) => a.username),
    ['host'],
    'a path key matches whole path segments',
  );
  const glob = k.lookup('eu.corp.example/app');
  assert.deepEqual(
    glob.map((a) => [a.username, a.password, a.auth]),
    [['glob', 'p3', b64('glob:p3')]],
    'auth alone gives the pair too',
  );
  assert.deepEqual(k.lookup('a.b.corp.example/app'), [], 'one label per *');
  assert.deepEqual(
    k.lookup('127.0.0.1:5055/private/busybox:1').map((a) => [a.username, a.serverAddress]),
    [['port', undefined]],
  );
  assert.deepEqual(k.lookup('127.0.0.1:5000/private/busybox:1'), [], 'another port is another registry');
  assert.deepEqual(
    k.lookup('busybox:1.36').map((a) => a.username),
    ['hub'],
  );
  assert.deepEqual(
    k.lookup('docker.io/team/app').map((a) => a.username),
    ['hub'],
  );
  assert.deepEqual(k.lookup('quay.io/team/app'), []);
});

test('pull secrets: dockerconfigjson and dockercfg Secrets give credentials; other types and bad data give none', () => {
  const secrets: ISecret[] = [
    pullSecret('json', { 'reg.example': { username: 'a', password: 'b' } }),
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'legacy' },
      type: 'kubernetes.io/dockercfg',
      data: { '.dockercfg': b64(JSON.stringify({ 'old.example': { auth: b64('c:d') } })) },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'opaque' },
      type: 'Opaque',
      data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'x.example': { username: 'no', password: 'no' } } })) },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bad' },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': b64('{not json') },
    },
  ];
  const k = keyringFromSecrets(secrets);
  assert.equal(k.size, 2);
  assert.deepEqual(
    k.lookup('reg.example/app').map((a) => a.username),
    ['a'],
  );
  assert.deepEqual(
    k.lookup('old.example/app').map((a) => a.username),
    ['c'],
  );
  assert.deepEqual(k.lookup('x.example/app'), []);
});

test("the node's docker config: the kubelet's search order, the first file found wins, a broken one is skipped", () => {
  const paths = nodeDockerConfigPaths('/var/lib/podctl', '/srv/app', '/root');
  assert.deepEqual(paths, [
    '/var/lib/podctl/config.json',
    '/srv/app/config.json',
    '/root/.docker/config.json',
    '/.docker/config.json',
    '/var/lib/podctl/.dockercfg',
    '/srv/app/.dockercfg',
    '/root/.dockercfg',
    '/.dockercfg',
  ]);
  const files: Record<string, string> = {
    '/srv/app/config.json': '{broken',
    '/root/.docker/config.json': JSON.stringify({ auths: { 'reg.example': { username: 'home', password: 'x' } } }),
    '/.dockercfg': JSON.stringify({ 'reg.example': { username: 'legacy', password: 'y' } }),
  };
  const read = (p: string) => {
    if (!(p in files)) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    return files[p]!;
  };
  assert.deepEqual(
    nodeKeyring(paths, read)
      .lookup('reg.example/app')
      .map((a) => a.username),
    ['home'],
  );
});

test('a dockerconfigjson Secret without .dockerconfigjson, or with text that is not JSON, is refused at load naming the key', () => {
  const src = { kind: 'file' as const, path: 'secret.yaml' };
  const opts = { nodeName: 'node-a', now: () => new Date('2026-01-01T00:00:00Z') };
  const missing = parseManifestText(
    'apiVersion: v1\nkind: Secret\nmetadata: {name: regcred}\ntype: kubernetes.io/dockerconfigjson\ndata: {other: eA==}\n',
    src,
    opts,
  );
  assert.deepEqual(
    missing.problems.map((p) => [p.severity, p.field]),
    [['error', 'data[".dockerconfigjson"]']],
  );
  assert.match(missing.problems[0]!.message, /Required value/);
  const bad = parseManifestText(
    'apiVersion: v1\nkind: Secret\nmetadata: {name: regcred}\ntype: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: "{nope"}\n',
    src,
    opts,
  );
  assert.deepEqual(
    bad.problems.map((p) => [p.severity, p.field]),
    [['error', 'data[".dockerconfigjson"]']],
  );
  assert.match(bad.problems[0]!.message, /<secret contents redacted>/);
  assert.doesNotMatch(bad.problems[0]!.message, /nope/, 'the secret text is never printed');
});

async function withAuthRegistry(
  fn: (
    puller: (secrets: ISecret[], nodeFiles?: Record<string, string>) => { puller: ImagePuller; missing: string[][] },
    fake: FakeRuntime,
  ) => Promise<void>,
): Promise<void> {
  const fake = await FakeRuntime.start({
    images: [],
    registry: ['127.0.0.1:5055/private/busybox:1', 'busybox:1.36'],
    registryAuth: { '127.0.0.1:5055': { username: 'alice', password: 's3cret' } },
  });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 2000, pullTimeoutMs: 2000 });
  const dir = mkdtempSync(join(tmpdir(), 'podctl-creds-'));
  try {
    await fn((secrets, nodeFiles = {}) => {
      for (const [name, text] of Object.entries(nodeFiles)) writeFileSync(join(dir, name), text);
      const missing: string[][] = [];
      const puller = new ImagePuller(client, new FakeClock(0), undefined, {
        secret: (ns, name) => secrets.find((s) => s.metadata?.name === name && ns === 'default'),
        nodeConfigPaths: [join(dir, 'config.json')],
        onMissingPullSecrets: (_pod, names) => missing.push(names),
      });
      return { puller, missing };
    }, fake);
  } finally {
    client.close();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const privatePod = (secrets: string[]): IPod => {
  const pod = makePod({ containers: [container('app', { image: '127.0.0.1:5055/private/busybox:1', imagePullPolicy: 'Always' })] });
  pod.spec!.imagePullSecrets = secrets.map((name) => ({ name }));
  return pod;
};

test('ImagePuller: the pull secret supplies the AuthConfig; without it the pull fails 401 (ErrImagePull)', () =>
  withAuthRegistry(async (make) => {
    const good = pullSecret('regcred', { '127.0.0.1:5055': { username: 'alice', password: 's3cret' } });
    const withSecret = make([good]);
    const pod = privatePod(['regcred']);
    assert.match(await withSecret.puller.ensureImageExists(pod, pod.spec!.containers[0]!, {}, 0), /^sha256:/);

    const without = make([]);
    const bare = privatePod([]);
    await assert.rejects(without.puller.ensureImageExists(bare, bare.spec!.containers[0]!, {}, 0), (err: StartContainerError) => {
      assert.equal(err.reason, 'ErrImagePull');
      assert.match(err.message, /^failed to pull image "127\.0\.0\.1:5055\/private\/busybox:1": .*401 Unauthorized/);
      return true;
    });
  }));

test('ImagePuller: each matching credential is tried in turn; a missing pull secret is reported and the pull goes on', () =>
  withAuthRegistry(async (make) => {
    const wrong = pullSecret('old', { '127.0.0.1:5055/private': { username: 'alice', password: 'rotated' } });
    const right = pullSecret('new', { '127.0.0.1:5055': { username: 'alice', password: 's3cret' } });
    const { puller, missing } = make([wrong, right]);
    const pod = privatePod(['gone', 'old', 'new']);
    assert.match(await puller.ensureImageExists(pod, pod.spec!.containers[0]!, {}, 0), /^sha256:/);
    assert.deepEqual(missing, [['gone']]);

    const onlyWrong = make([wrong]);
    const p2 = privatePod(['old']);
    await assert.rejects(onlyWrong.puller.ensureImageExists(p2, p2.spec!.containers[0]!, {}, 0), /401 Unauthorized/);
  }));

test("ImagePuller: the node's config.json supplies credentials when the pod names none; public images pull without any", () =>
  withAuthRegistry(async (make) => {
    const { puller } = make([], { 'config.json': JSON.stringify({ auths: { '127.0.0.1:5055': { auth: b64('alice:s3cret') } } }) });
    const pod = privatePod([]);
    assert.match(await puller.ensureImageExists(pod, pod.spec!.containers[0]!, {}, 0), /^sha256:/);
    const open = makePod({ containers: [container('app', { image: 'busybox:1.36' })] });
    assert.deepEqual(puller.credentialsFor(open, 'busybox:1.36'), []);
    assert.match(await puller.ensureImageExists(open, open.spec!.containers[0]!, {}, 0), /^sha256:/);
  }));

test("ImagePuller records the image manager's events: Pulled when present, Pulling then Pulled when pulled, Pulling alone when the pull fails, nothing in back-off", async () => {
  const fake = await FakeRuntime.start({ images: ['busybox:1.36'], registry: ['busybox:1.37'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 2000, pullTimeoutMs: 2000 });
  try {
    const events: string[] = [];
    const puller = new ImagePuller(client, new FakeClock(0), (_pod, c, type, reason, message) =>
      events.push(`${c.name} ${type} ${reason}: ${message}`),
    );
    const pod = makePod({
      containers: [
        container('present', { image: 'busybox:1.36' }),
        container('pulled', { image: 'busybox:1.37' }),
        container('missing', { image: 'busybox:9.99' }),
      ],
    });
    const [present, pulled, missing] = pod.spec!.containers;
    await puller.ensureImageExists(pod, present!, {}, 0);
    assert.deepEqual(events.splice(0), ['present Normal Pulled: Container image "busybox:1.36" already present on machine']);
    await puller.ensureImageExists(pod, pulled!, {}, 0);
    assert.equal(events.length, 2);
    assert.equal(events[0], 'pulled Normal Pulling: Pulling image "busybox:1.37"');
    assert.match(events[1]!, /^pulled Normal Pulled: Successfully pulled image "busybox:1\.37" in \d+(ms|\.\d+s|s)$/);
    events.length = 0;
    await assert.rejects(
      puller.ensureImageExists(pod, missing!, {}, 0),
      (err: unknown) => err instanceof StartContainerError && err.reason === 'ErrImagePull',
    );
    assert.deepEqual(
      events.splice(0),
      ['missing Normal Pulling: Pulling image "busybox:9.99"'],
      "the failure itself is the caller's Warning",
    );
    await assert.rejects(
      puller.ensureImageExists(pod, missing!, {}, 1000),
      (err: unknown) => err instanceof StartContainerError && err.reason === 'ImagePullBackOff',
    );
    assert.deepEqual(events, [], 'no pull is tried in back-off');
  } finally {
    client.close();
    await fake.stop();
  }
});

test("ImagePuller: the back-off says why the last pull failed; a NOT_FOUND pull is told apart from a 401, and housekeeping's gc forgets both", () =>
  withAuthRegistry(async (_make, fake) => {
    const clock = new FakeClock(0);
    const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 2000, pullTimeoutMs: 2000 });
    try {
      await backOffAndGc(client, clock);
    } finally {
      client.close();
    }
  }));

async function backOffAndGc(client: CriClient, clock: FakeClock): Promise<void> {
  const puller = new ImagePuller(client, clock);
  const p = makePod({
    containers: [container('denied', { image: '127.0.0.1:5055/private/busybox:1' }), container('gone', { image: 'busybox:9.99' })],
  });
  const [denied, gone] = p.spec!.containers;
  const reject = async (c: typeof denied, now: number) => {
    try {
      await puller.ensureImageExists(p, c!, {}, now);
    } catch (err) {
      return err as StartContainerError;
    }
    assert.fail(`${c!.name}: the pull succeeded`);
  };
  const first = await reject(denied, 0);
  assert.equal(first.reason, 'ErrImagePull');
  assert.equal(puller.imageNotFound(p), undefined, 'a 401 is not a missing image');
  const backOff = await reject(denied, 1000);
  assert.equal(backOff.reason, 'ImagePullBackOff');
  assert.equal(backOff.message, `Back-off pulling image "127.0.0.1:5055/private/busybox:1": ErrImagePull: ${first.message}`);

  const missing = await reject(gone, 0);
  assert.match(missing.message, /^failed to pull image "busybox:9\.99": .*not found/);
  assert.deepEqual(puller.imageNotFound(p), { container: 'gone', image: 'busybox:9.99', message: missing.message });
  assert.equal(
    puller.imageNotFound(makePod({ name: 'other', uid: 'uid-other', containers: [container('gone', { image: 'busybox:9.99' })] })),
    undefined,
    'another pod',
  );

  // Kept while its back-off is; forgotten with it, untouched for twice the 300 s maximum.
  clock.advance(600_000);
  puller.gc();
  assert.ok(puller.imageNotFound(p), 'kept while its back-off is');
  clock.advance(1);
  puller.gc();
  assert.equal(puller.imageNotFound(p), undefined);
  assert.equal(puller.backoff.size(), 0);
}

test('goDuration prints as Go prints a time.Duration truncated to milliseconds', () => {
  assert.deepEqual([0, 850.9, 1000, 1250, 59_999, 60_000, 123_500].map(goDuration), [
    '0ms',
    '850ms',
    '1s',
    '1.25s',
    '59.999s',
    '1m0s',
    '2m3.5s',
  ]);
});
