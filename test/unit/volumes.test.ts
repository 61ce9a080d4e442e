import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  renameSync,
  lstatSync,
  mkdirSync,
  openSync,
  constants as fsc,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { IConfigMap, IContainer, IDownwardAPIVolumeFile, IPod, ISecret, IVolume } from 'kubernetes-models/v1';
import {
  openInside,
  expandSubPathExpr,
  formatMap,
  goQuote,
  mountsUnder,
  mountTable,
  VolumeError,
  VolumeManager,
  type PodVolumes,
  type VolumeObjects,
} from '../../src/core/volumes/index.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { container, makePod } from '../support/builders.js';
import { API_OBJECTS_SOURCE, ObjectStore } from '../../src/core/objects.js';
import { scratchDir } from '../support/e2e.js';

const NODE = { nodeName: 'node-a', cpuCores: 4, memoryBytes: 8 * 2 ** 30, ephemeralStorageBytes: 100 * 2 ** 30 };

/** ConfigMaps and Secrets by namespace/name; tests change them in place to exercise refresh. */
class Objects implements VolumeObjects {
  readonly configMaps = new Map<string, IConfigMap>();
  readonly secrets = new Map<string, ISecret>();
  configMap(namespace: string, name: string) {
    return this.configMaps.get(`${namespace}/${name}`);
  }
  secret(namespace: string, name: string) {
    return this.secrets.get(`${namespace}/${name}`);
  }
  addConfigMap(name: string, data: Record<string, string>, binaryData?: Record<string, string>) {
    this.configMaps.set(`default/${name}`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'default' },
      data,
      binaryData,
    });
  }
  addSecret(name: string, plain: Record<string, string>) {
    const data = Object.fromEntries(Object.entries(plain).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
    this.secrets.set(`default/${name}`, { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default' }, data });
  }
}

interface Env {
  root: string;
  objects: Objects;
  vm: VolumeManager;
}

/** A manager on a scratch root; every tmpfs under it is unmounted and the root removed when the test ends, pass or fail. */
function setup(t: TestContext): Env {
  const { dir, cleanup } = scratchDir('volumes');
  const root = realpathSync(dir);
  t.after(async () => {
    for (const mp of await mountsUnder(root)) execFileSync('umount', [mp]);
    cleanup();
  });
  const objects = new Objects();
  return { root, objects, vm: new VolumeManager({ rootDir: root, objects, node: NODE }) };
}

function podWith(
  volumes: IVolume[],
  extra: {
    containers?: IContainer[];
    fsGroup?: number;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  } = {},
): IPod {
  const p = makePod({ uid: extra.uid ?? 'uid-vol', containers: extra.containers });
  p.spec!.volumes = volumes;
  if (extra.fsGroup !== undefined) p.spec!.securityContext = { fsGroup: extra.fsGroup };
  if (extra.labels) p.metadata!.labels = extra.labels;
  if (extra.annotations) p.metadata!.annotations = extra.annotations;
  return p;
}

const mode = (p: string) => statSync(p).mode & 0o7777;
const read = (p: string) => readFileSync(p, 'utf8');
const mountedAt = async (p: string) => (await mountTable()).filter((m) => m.mountPoint === p);

async function rejectsVolume(p: Promise<unknown>, volume: string, reason: string, message: RegExp): Promise<VolumeError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof VolumeError, `expected a VolumeError, got ${String(err)}`);
    assert.equal(err.volume, volume);
    assert.equal(err.reason, reason);
    assert.match(err.message, message);
    return err;
  }
  assert.fail('expected a VolumeError');
}

test('emptyDir: a 0777 directory under pods/<uid>/volumes, pod dir 0750, content kept across set-ups', async (t) => {
  const { root, vm } = setup(t);
  const pod = podWith([{ name: 'scratch', emptyDir: {} }]);
  const vols = await vm.setUpPodVolumes(pod, ['10.0.0.5']);
  const dir = join(root, 'pods', 'uid-vol', 'volumes', 'kubernetes.io~empty-dir', 'scratch');
  assert.deepEqual(vols.dirs.get('scratch'), { hostPath: dir, kind: 'emptyDir', readOnly: false });
  assert.equal(mode(dir), 0o777);
  assert.equal(mode(join(root, 'pods', 'uid-vol')), 0o750);
  writeFileSync(join(dir, 'state'), 'kept');
  await vm.setUpPodVolumes(pod, []);
  assert.equal(read(join(dir, 'state')), 'kept');
});

test('emptyDir medium Memory: a tmpfs sized from sizeLimit, mounted once, unmounted and removed by tearDown', async (t) => {
  const { root, vm } = setup(t);
  const pod = podWith([
    { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
    { name: 'mem2', emptyDir: { medium: 'Memory' } },
  ]);
  const vols = await vm.setUpPodVolumes(pod, []);
  const dir = vols.dirs.get('mem')!.hostPath;
  let mounts = await mountedAt(dir);
  assert.equal(mounts.length, 1);
  assert.equal(mounts[0]!.fsType, 'tmpfs');
  const opts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .find((l) => l.split(' ')[4] === dir)!;
  assert.match(opts, /size=65536k/);
  assert.equal(mode(dir), 0o777);
  await vm.setUpPodVolumes(pod, []);
  assert.equal((await mountedAt(dir)).length, 1, 'a second set-up does not stack a second tmpfs');
  assert.equal((await mountedAt(vols.dirs.get('mem2')!.hostPath)).length, 1);

  await vm.tearDown('uid-vol');
  mounts = await mountedAt(dir);
  assert.deepEqual(mounts, []);
  assert.deepEqual(await mountsUnder(root), []);
  assert.equal(existsSync(join(root, 'pods', 'uid-vol', 'volumes')), false);
  await vm.tearDown('uid-vol'); // idempotent
});

test('emptyDir with an unsupported medium is a FailedMount', async (t) => {
  const { vm } = setup(t);
  await rejectsVolume(
    vm.setUpPodVolumes(podWith([{ name: 'huge', emptyDir: { medium: 'HugePages-2Mi' } }]), []),
    'huge',
    'FailedMount',
    /medium "HugePages-2Mi" is not supported/,
  );
});

test('hostPath: used as is, with the kubelet type checks', async (t) => {
  const { root, vm } = setup(t);
  const host = join(root, 'host');
  mkdirSync(host);
  writeFileSync(join(host, 'file'), 'x');
  const ok = podWith([
    { name: 'none', hostPath: { path: join(host, 'not-there') } },
    { name: 'doc', hostPath: { path: join(host, 'a', 'b'), type: 'DirectoryOrCreate' } },
    { name: 'foc', hostPath: { path: join(host, 'new-file'), type: 'FileOrCreate' } },
    { name: 'dir', hostPath: { path: host, type: 'Directory' } },
    { name: 'file', hostPath: { path: join(host, 'file'), type: 'File' } },
    { name: 'null', hostPath: { path: '/dev/null', type: 'CharDevice' } },
  ]);
  const vols = await vm.setUpPodVolumes(ok, []);
  assert.deepEqual(vols.dirs.get('dir'), { hostPath: host, kind: 'hostPath', readOnly: false });
  assert.equal(existsSync(join(host, 'not-there')), false, 'no type: no check and nothing created');
  assert.equal(mode(join(host, 'a', 'b')), 0o755);
  assert.ok(statSync(join(host, 'new-file')).isFile());
  assert.equal(mode(join(host, 'new-file')), 0o644);
  assert.equal(statSync(join(host, 'new-file')).size, 0);

  const cases: [IVolume, RegExp][] = [
    [{ name: 'v', hostPath: { path: join(host, 'file'), type: 'Directory' } }, /hostPath type check failed: .*\/file is not a directory$/],
    [{ name: 'v', hostPath: { path: host, type: 'File' } }, /hostPath type check failed: .*host is not a file$/],
    [{ name: 'v', hostPath: { path: join(host, 'file'), type: 'Socket' } }, /is not a socket file$/],
    [{ name: 'v', hostPath: { path: join(host, 'file'), type: 'CharDevice' } }, /is not a character device$/],
    [{ name: 'v', hostPath: { path: '/dev/null', type: 'BlockDevice' } }, /is not a block device$/],
    [{ name: 'v', hostPath: { path: join(host, 'missing'), type: 'Directory' } }, /is not a directory$/],
    [{ name: 'v', hostPath: { path: join(host, 'no-parent', 'f'), type: 'FileOrCreate' } }, /hostPath type check failed: cannot create/],
  ];
  for (const [v, re] of cases) {
    const e = await rejectsVolume(vm.setUpPodVolumes(podWith([v], { uid: 'uid-bad' }), []), 'v', 'FailedMount', re);
    assert.match(e.message, /^MountVolume\.SetUp failed for volume "v" : /);
  }
});

test('configMap: every key as a ..data link, default mode 0644, binaryData decoded', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { 'app.conf': 'port=80\n', other: 'o' }, { 'blob.bin': Buffer.from([0, 1, 2, 255]).toString('base64') });
  const vols = await vm.setUpPodVolumes(podWith([{ name: 'config', configMap: { name: 'cfg' } }]), []);
  const v = vols.dirs.get('config')!;
  assert.equal(v.kind, 'configMap');
  assert.equal(v.readOnly, true);
  assert.match(v.hostPath, /\/kubernetes\.io~configmap\/config$/);
  assert.equal(read(join(v.hostPath, 'app.conf')), 'port=80\n');
  assert.deepEqual([...readFileSync(join(v.hostPath, 'blob.bin'))], [0, 1, 2, 255]);
  assert.equal(readlinkSync(join(v.hostPath, 'app.conf')), '..data/app.conf');
  assert.match(readlinkSync(join(v.hostPath, '..data')), /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\w+$/);
  assert.equal(mode(join(v.hostPath, 'app.conf')), 0o644);
  assert.deepEqual(
    readdirSync(v.hostPath).sort(),
    ['..data', readlinkSync(join(v.hostPath, '..data')), 'app.conf', 'blob.bin', 'other'].sort(),
  );
  assert.equal((await mountedAt(v.hostPath)).length, 0, 'configMap volumes are on disk');
});

test('configMap items: chosen keys at nested paths with per-item and default modes', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { a: 'A', b: 'B', c: 'C' });
  const vols = await vm.setUpPodVolumes(
    podWith([
      {
        name: 'config',
        configMap: {
          name: 'cfg',
          defaultMode: 0o400,
          items: [
            { key: 'a', path: 'dir/sub/a.txt', mode: 0o600 },
            { key: 'b', path: 'b.txt' },
            { key: 'c', path: 'c.sh', mode: 0o4755 },
          ],
        },
      },
    ]),
    [],
  );
  const dir = vols.dirs.get('config')!.hostPath;
  assert.equal(read(join(dir, 'dir', 'sub', 'a.txt')), 'A');
  assert.equal(readlinkSync(join(dir, 'dir')), '..data/dir');
  assert.equal(mode(join(dir, 'dir', 'sub', 'a.txt')), 0o600);
  assert.equal(mode(join(dir, 'b.txt')), 0o400);
  assert.equal(existsSync(join(dir, 'c')), false);
  assert.equal(mode(join(dir, 'c.sh')), 0o755, 'permission bits only: never setuid');
});

test('configMap and secret: optional versus required objects and keys', async (t) => {
  const { root, objects, vm } = setup(t);
  objects.addConfigMap('cfg', { a: 'A' });
  const vols = await vm.setUpPodVolumes(
    podWith([
      { name: 'gone', configMap: { name: 'nope', optional: true } },
      { name: 'gone-secret', secret: { secretName: 'nope', optional: true } },
      {
        name: 'partial',
        configMap: {
          name: 'cfg',
          optional: true,
          items: [
            { key: 'a', path: 'a' },
            { key: 'missing', path: 'm' },
          ],
        },
      },
    ]),
    [],
  );
  assert.deepEqual(
    readdirSync(vols.dirs.get('gone')!.hostPath).filter((n) => !n.startsWith('..')),
    [],
  );
  assert.deepEqual(
    readdirSync(vols.dirs.get('gone-secret')!.hostPath).filter((n) => !n.startsWith('..')),
    [],
  );
  assert.deepEqual(
    readdirSync(vols.dirs.get('partial')!.hostPath).filter((n) => !n.startsWith('..')),
    ['a'],
  );

  await rejectsVolume(
    vm.setUpPodVolumes(podWith([{ name: 'c', configMap: { name: 'nope' } }], { uid: 'u2' }), []),
    'c',
    'FailedMount',
    /: configmap "nope" not found$/,
  );
  await rejectsVolume(
    vm.setUpPodVolumes(podWith([{ name: 's', secret: { secretName: 'nope' } }], { uid: 'u3' }), []),
    's',
    'FailedMount',
    /: secret "nope" not found$/,
  );
  assert.deepEqual(await mountsUnder(join(root, 'pods', 'u3')), [], 'no tmpfs for a secret that is not there');
  await rejectsVolume(
    vm.setUpPodVolumes(podWith([{ name: 'k', configMap: { name: 'cfg', items: [{ key: 'missing', path: 'm' }] } }], { uid: 'u4' }), []),
    'k',
    'FailedMount',
    /configmap references non-existent config key: missing$/,
  );
});

test('a failing volume does not stop the others; the first failure is thrown', async (t) => {
  const { root, vm } = setup(t);
  const pod = podWith([
    { name: 'claim', persistentVolumeClaim: { claimName: 'data' } },
    { name: 'eph', ephemeral: {} },
    { name: 'scratch', emptyDir: {} },
  ]);
  await rejectsVolume(
    vm.setUpPodVolumes(pod, []),
    'claim',
    'FailedMount',
    /persistentVolumeClaim volumes are not supported: podctl runs pods on a single host/,
  );
  assert.ok(existsSync(join(root, 'pods', 'uid-vol', 'volumes', 'kubernetes.io~empty-dir', 'scratch')));
  await rejectsVolume(
    vm.setUpPodVolumes(podWith([{ name: 'eph', ephemeral: {} }], { uid: 'u5' }), []),
    'eph',
    'FailedMount',
    /ephemeral volumes are not supported/,
  );
  await rejectsVolume(
    vm.setUpPodVolumes(podWith([{ name: '../../x', emptyDir: {} }], { uid: 'u5b' }), []),
    '../../x',
    'FailedMount',
    /invalid volume name/,
  );
  assert.equal(existsSync(join(root, 'pods', 'x')), false);
});

test('refresh: a ConfigMap change swaps ..data atomically; an unchanged one touches nothing', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { a: 'one', gone: 'x' });
  const pod = podWith([{ name: 'config', configMap: { name: 'cfg' } }]);
  const dir = (await vm.setUpPodVolumes(pod, [])).dirs.get('config')!.hostPath;
  const firstTs = readlinkSync(join(dir, '..data'));
  const before = statSync(join(dir, 'a'));
  const linkBefore = lstatSync(join(dir, '..data'));

  await vm.setUpPodVolumes(pod, []);
  assert.equal(readlinkSync(join(dir, '..data')), firstTs);
  const same = statSync(join(dir, 'a'));
  assert.equal(same.ino, before.ino);
  assert.equal(same.ctimeMs, before.ctimeMs);
  assert.equal(lstatSync(join(dir, '..data')).ino, linkBefore.ino);

  objects.addConfigMap('cfg', { a: 'two', added: 'new' });
  await vm.setUpPodVolumes(pod, []);
  const secondTs = readlinkSync(join(dir, '..data'));
  assert.notEqual(secondTs, firstTs);
  assert.equal(read(join(dir, 'a')), 'two');
  assert.equal(read(join(dir, 'added')), 'new');
  assert.equal(existsSync(join(dir, 'gone')), false, 'a removed key disappears');
  assert.equal(existsSync(join(dir, firstTs)), false, 'the old timestamped directory is removed');
  assert.deepEqual(readdirSync(dir).sort(), ['..data', secondTs, 'a', 'added'].sort());

  // A defaultMode change alone is a change too.
  pod.spec!.volumes![0]!.configMap!.defaultMode = 0o440;
  await vm.setUpPodVolumes(pod, []);
  assert.notEqual(readlinkSync(join(dir, '..data')), secondTs);
  assert.equal(mode(join(dir, 'a')), 0o440);
});

test('secret: decoded files on a tmpfs, never on disk; tearDown unmounts it', async (t) => {
  const { root, objects, vm } = setup(t);
  objects.addSecret('creds', { password: 's3cret', 'tls.key': 'KEY' });
  const pod = podWith([{ name: 'creds', secret: { secretName: 'creds', items: [{ key: 'password', path: 'pw', mode: 0o400 }] } }]);
  const v = (await vm.setUpPodVolumes(pod, [])).dirs.get('creds')!;
  assert.equal(v.kind, 'secret');
  assert.equal(v.readOnly, true);
  assert.match(v.hostPath, /\/kubernetes\.io~secret\/creds$/);
  assert.equal(read(join(v.hostPath, 'pw')), 's3cret');
  assert.equal(mode(join(v.hostPath, 'pw')), 0o400);
  assert.equal(existsSync(join(v.hostPath, 'tls.key')), false);
  const m = await mountedAt(v.hostPath);
  assert.equal(m.length, 1);
  assert.equal(m[0]!.fsType, 'tmpfs');
  assert.equal(mode(join(root, 'pods', 'uid-vol')), 0o750, 'the pod directory is not world-accessible');
  await rejectsVolume(
    vm.setUpPodVolumes(podWith([{ name: 's', secret: { secretName: 'creds', items: [{ key: 'nokey', path: 'x' }] } }], { uid: 'u6' }), []),
    's',
    'FailedMount',
    /references non-existent secret key: nokey$/,
  );

  await vm.tearDown('uid-vol');
  assert.deepEqual(await mountedAt(v.hostPath), []);
  assert.equal(existsSync(join(root, 'pods', 'uid-vol')), false);
  await vm.tearDown('u6');
  assert.deepEqual(await mountsUnder(root), []);
});

test('downwardAPI: metadata fields, labels and annotations as sorted Go-quoted lines, subscripts, per-item mode', async (t) => {
  const { vm } = setup(t);
  const pod = podWith(
    [
      {
        name: 'info',
        downwardAPI: {
          defaultMode: 0o440,
          items: [
            { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
            { path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } },
            { path: 'uid', fieldRef: { fieldPath: 'metadata.uid' } },
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' }, mode: 0o600 },
            { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
            { path: 'tier', fieldRef: { fieldPath: "metadata.labels['tier']" } },
            { path: 'note', fieldRef: { fieldPath: "metadata.annotations['note']" } },
          ],
        },
      },
    ],
    { labels: { tier: 'web', app: 'shop' }, annotations: { note: 'say "hi"\nthen\tgo', é: 'ünï' } },
  );
  const v = (await vm.setUpPodVolumes(pod, ['10.0.0.5'])).dirs.get('info')!;
  assert.equal(v.kind, 'downwardAPI');
  assert.equal(v.readOnly, true);
  const f = (n: string) => read(join(v.hostPath, n));
  assert.equal(f('name'), 'web');
  assert.equal(f('ns'), 'default');
  assert.equal(f('uid'), 'uid-vol');
  assert.equal(f('labels'), 'app="shop"\ntier="web"');
  assert.equal(f('annotations'), 'note="say \\"hi\\"\\nthen\\tgo"\né="ünï"');
  assert.equal(f('tier'), 'web');
  assert.equal(f('note'), 'say "hi"\nthen\tgo');
  assert.equal(mode(join(v.hostPath, 'labels')), 0o600);
  assert.equal(mode(join(v.hostPath, 'name')), 0o440);
  assert.equal((await mountedAt(v.hostPath)).length, 1, 'kept in memory as the kubelet does');

  // A label change is a refresh.
  pod.metadata!.labels!.tier = 'db';
  await vm.setUpPodVolumes(pod, []);
  assert.equal(f('tier'), 'db');
});

test('downwardAPI resourceFieldRef: divisors round up, unset limits fall back to the node', async (t) => {
  const { vm } = setup(t);
  const app = container('app', { resources: { limits: { cpu: '250m', memory: '100Mi' }, requests: { cpu: '250m', memory: '100Mi' } } });
  const bare = container('bare');
  const item = (path: string, containerName: string, resource: string, divisor?: string) => ({
    path,
    resourceFieldRef: { containerName, resource, divisor },
  });
  const pod = podWith(
    [
      {
        name: 'res',
        downwardAPI: {
          items: [
            item('cpu-limit', 'app', 'limits.cpu'),
            item('cpu-limit-m', 'app', 'limits.cpu', '1m'),
            item('mem-limit', 'app', 'limits.memory'),
            item('mem-limit-mi', 'app', 'limits.memory', '1Mi'),
            item('mem-request-m', 'app', 'requests.memory', '1M'),
            item('bare-cpu', 'bare', 'limits.cpu'),
            item('bare-mem-gi', 'bare', 'limits.memory', '1Gi'),
            item('bare-req-cpu', 'bare', 'requests.cpu'),
            item('bare-eph-gi', 'bare', 'limits.ephemeral-storage', '1Gi'),
          ],
        },
      },
    ],
    { containers: [app, bare] },
  );
  const dir = (await vm.setUpPodVolumes(pod, [])).dirs.get('res')!.hostPath;
  const f = (n: string) => read(join(dir, n));
  assert.equal(f('cpu-limit'), '1');
  assert.equal(f('cpu-limit-m'), '250');
  assert.equal(f('mem-limit'), String(100 * 2 ** 20));
  assert.equal(f('mem-limit-mi'), '100');
  assert.equal(f('mem-request-m'), '105');
  assert.equal(f('bare-cpu'), '4');
  assert.equal(f('bare-mem-gi'), '8');
  assert.equal(f('bare-req-cpu'), '0');
  assert.equal(f('bare-eph-gi'), '100');

  const bad = (items: IDownwardAPIVolumeFile[], uid: string) =>
    vm.setUpPodVolumes(podWith([{ name: 'd', downwardAPI: { items } }], { uid, containers: [app] }), []);
  await rejectsVolume(bad([item('x', 'nope', 'limits.cpu')], 'u7'), 'd', 'FailedMount', /container nope not found/);
  await rejectsVolume(
    bad([{ path: 'x', fieldRef: { fieldPath: 'status.podIP' } }], 'u8'),
    'd',
    'FailedMount',
    /fieldRef "status.podIP" is not supported in a downwardAPI volume/,
  );
  await rejectsVolume(bad([item('x', 'app', 'limits.gpu')], 'u9'), 'd', 'FailedMount', /unsupported container resource/);
});

test('projected: configMap, secret and downwardAPI in one tmpfs directory with defaultMode; serviceAccountToken refused', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { 'app.conf': 'conf' });
  objects.addSecret('creds', { token: 'tok' });
  const pod = podWith([
    {
      name: 'all',
      projected: {
        defaultMode: 0o440,
        sources: [
          { configMap: { name: 'cfg' } },
          { secret: { name: 'creds', items: [{ key: 'token', path: 'secret/token', mode: 0o400 }] } },
          { downwardAPI: { items: [{ path: 'meta/name', fieldRef: { fieldPath: 'metadata.name' } }] } },
          { configMap: { name: 'absent', optional: true } },
        ],
      },
    },
  ]);
  const v = (await vm.setUpPodVolumes(pod, [])).dirs.get('all')!;
  assert.equal(v.kind, 'projected');
  assert.match(v.hostPath, /\/kubernetes\.io~projected\/all$/);
  assert.equal(read(join(v.hostPath, 'app.conf')), 'conf');
  assert.equal(read(join(v.hostPath, 'secret', 'token')), 'tok');
  assert.equal(read(join(v.hostPath, 'meta', 'name')), 'web');
  assert.equal(mode(join(v.hostPath, 'app.conf')), 0o440);
  assert.equal(mode(join(v.hostPath, 'secret', 'token')), 0o400);
  assert.equal((await mountedAt(v.hostPath))[0]?.fsType, 'tmpfs');

  const sat = podWith([{ name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }], { uid: 'u10' });
  await rejectsVolume(vm.setUpPodVolumes(sat, []), 'tok', 'FailedMount', /serviceAccountToken projections are not supported/);
  const dup = podWith([{ name: 'dup', projected: { sources: [{ configMap: { name: 'cfg' } }, { configMap: { name: 'cfg' } }] } }], {
    uid: 'u11',
  });
  await rejectsVolume(vm.setUpPodVolumes(dup, []), 'dup', 'FailedMount', /conflicting duplicate paths/);
});

test('item paths: absolute, .. and ..-prefixed elements are refused', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { a: 'A' });
  let n = 0;
  for (const [path, re] of [
    ['../escape', /must not contain '\.\.'/],
    ['a/../../b', /must not contain '\.\.'/],
    ['/etc/passwd', /invalid path: must be relative path: \/etc\/passwd$/],
    ['..data', /must not start with '\.\.'/],
    ['..2026_01_01_00_00_00.x/f', /must not start with '\.\.'/],
  ] as const) {
    const pod = podWith([{ name: 'cfg', configMap: { name: 'cfg', items: [{ key: 'a', path }] } }], { uid: `path-${n++}` });
    await rejectsVolume(vm.setUpPodVolumes(pod, []), 'cfg', 'FailedMount', re);
  }
  const dpod = podWith([{ name: 'd', downwardAPI: { items: [{ path: '../x', fieldRef: { fieldPath: 'metadata.name' } }] } }], {
    uid: 'path-d',
  });
  await rejectsVolume(vm.setUpPodVolumes(dpod, []), 'd', 'FailedMount', /must not contain/);
});

/** Reads a file through an open directory descriptor as another user, so the 0750 pod dir above it is not in the way. */
function readAs(dir: string, file: string, uid: number, gid: number): { ok: boolean; out: string } {
  const fd = openSync(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    const r = spawnSync(process.execPath, ['-e', `process.stdout.write(require('fs').readFileSync('/proc/self/fd/3/${file}', 'utf8'))`], {
      uid,
      gid,
      stdio: ['ignore', 'pipe', 'pipe', fd],
      encoding: 'utf8',
    });
    return { ok: r.status === 0, out: r.status === 0 ? r.stdout : r.stderr };
  } finally {
    closeSync(fd);
  }
}

test('fsGroup: volumes belong to the group, with group access and setgid directories', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { a: 'A', b: 'B' });
  const GID = 4242;
  const pod = podWith(
    [
      { name: 'scratch', emptyDir: {} },
      {
        name: 'config',
        configMap: {
          name: 'cfg',
          defaultMode: 0o400,
          items: [
            { key: 'a', path: 'sub/a' },
            { key: 'b', path: 'b' },
          ],
        },
      },
      { name: 'mem', emptyDir: { medium: 'Memory' } },
    ],
    { fsGroup: GID },
  );
  const vols = await vm.setUpPodVolumes(pod, []);
  const scratch = vols.dirs.get('scratch')!.hostPath;
  assert.equal(statSync(scratch).gid, GID);
  assert.equal(mode(scratch), 0o2777);
  assert.equal(statSync(vols.dirs.get('mem')!.hostPath).gid, GID);
  assert.equal(mode(vols.dirs.get('mem')!.hostPath), 0o2777);

  const cfg = vols.dirs.get('config')!.hostPath;
  const ts = join(cfg, readlinkSync(join(cfg, '..data')));
  for (const p of [cfg, ts, join(ts, 'sub'), join(ts, 'sub', 'a'), join(ts, 'b')]) assert.equal(statSync(p).gid, GID, p);
  assert.equal(lstatSync(join(cfg, 'b')).gid, GID, 'the visible link too');
  assert.equal(mode(join(ts, 'b')), 0o440);
  assert.equal(mode(join(ts, 'sub')) & 0o2050, 0o2050);
  assert.equal(mode(ts) & 0o2050, 0o2050);

  // A user in the group reads the 0400 key; without fsGroup, the same user cannot.
  assert.deepEqual(readAs(cfg, 'sub/a', 5000, GID), { ok: true, out: 'A' });
  const before = statSync(join(ts, 'b')).ctimeMs;
  await vm.setUpPodVolumes(pod, []);
  assert.equal(statSync(join(cfg, 'b')).ctimeMs, before, 'ownership is not re-applied when nothing changed');

  const plain = podWith([{ name: 'config', configMap: { name: 'cfg', defaultMode: 0o400 } }], { uid: 'no-group' });
  const plainDir = (await vm.setUpPodVolumes(plain, [])).dirs.get('config')!.hostPath;
  assert.equal(readAs(plainDir, 'a', 5000, GID).ok, false);
});

function mountPod(volumeMounts: IContainer['volumeMounts'], extra: Partial<IContainer> = {}) {
  const c = container('app', { volumeMounts, ...extra });
  return {
    c,
    pod: podWith(
      [
        { name: 'scratch', emptyDir: {} },
        { name: 'config', configMap: { name: 'cfg' } },
      ],
      { containers: [c] },
    ),
  };
}

test('containerMounts: paths, readOnly (forced for configMap), propagation, recursiveReadOnly', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { a: 'A' });
  const { c, pod } = mountPod([
    { name: 'scratch', mountPath: '/data' },
    { name: 'scratch', mountPath: '/ro', readOnly: true, mountPropagation: 'HostToContainer' },
    { name: 'config', mountPath: '/etc/app' },
    { name: 'config', mountPath: '/etc/rro', readOnly: true, recursiveReadOnly: 'Enabled' },
  ]);
  const vols = await vm.setUpPodVolumes(pod, []);
  const mounts = await vm.containerMounts(pod, c, vols, {});
  const scratch = vols.dirs.get('scratch')!.hostPath;
  const config = vols.dirs.get('config')!.hostPath;
  assert.deepEqual(mounts, [
    {
      containerPath: '/data',
      hostPath: scratch,
      readonly: false,
      recursiveReadOnly: false,
      propagation: 'PROPAGATION_PRIVATE',
      selinuxRelabel: true,
    },
    {
      containerPath: '/ro',
      hostPath: scratch,
      readonly: true,
      recursiveReadOnly: false,
      propagation: 'PROPAGATION_HOST_TO_CONTAINER',
      selinuxRelabel: true,
    },
    {
      containerPath: '/etc/app',
      hostPath: config,
      readonly: true,
      recursiveReadOnly: false,
      propagation: 'PROPAGATION_PRIVATE',
      selinuxRelabel: true,
    },
    {
      containerPath: '/etc/rro',
      hostPath: config,
      readonly: true,
      recursiveReadOnly: true,
      propagation: 'PROPAGATION_PRIVATE',
      selinuxRelabel: true,
    },
  ]);

  const bidi = mountPod([{ name: 'scratch', mountPath: '/shared', mountPropagation: 'Bidirectional' }]);
  await rejectsVolume(
    vm.containerMounts(bidi.pod, bidi.c, vols, {}),
    'scratch',
    'CreateContainerConfigError',
    /Bidirectional mount propagation is available only to privileged containers/,
  );
  const priv = mountPod([{ name: 'scratch', mountPath: '/shared', mountPropagation: 'Bidirectional' }], {
    securityContext: { privileged: true },
  });
  assert.equal((await vm.containerMounts(priv.pod, priv.c, vols, {}))[0]!.propagation, 'PROPAGATION_BIDIRECTIONAL');
  const missing = mountPod([{ name: 'nope', mountPath: '/x' }]);
  await rejectsVolume(
    vm.containerMounts(missing.pod, missing.c, vols, {}),
    'nope',
    'CreateContainerConfigError',
    /cannot find volume "nope" to mount into container "app"/,
  );
  const hp: PodVolumes = { uid: 'uid-vol', dirs: new Map([['host', { hostPath: '/var/log', kind: 'hostPath', readOnly: false }]]) };
  const hpc = container('app', { volumeMounts: [{ name: 'host', mountPath: '/logs' }] });
  assert.equal((await vm.containerMounts(pod, hpc, hp, {}))[0]!.selinuxRelabel, false, 'a host path keeps its label');
});

test('subPath: stays inside the volume through symlinks; missing directories are created', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { a: 'A' });
  const { pod } = mountPod([]);
  const vols = await vm.setUpPodVolumes(pod, []);
  const scratch = vols.dirs.get('scratch')!.hostPath;
  mkdirSync(join(scratch, 'real'));
  symlinkSync('/etc', join(scratch, 'etc-link'));
  symlinkSync('real', join(scratch, 'inside-link'));
  symlinkSync('../../../../../../../..', join(scratch, 'up'));
  const mountsOf = (volumeMounts: IContainer['volumeMounts'], env: Record<string, string> = {}) =>
    vm.containerMounts(pod, container('app', { volumeMounts }), vols, env);

  writeFileSync(join(scratch, 'real', 'marker'), 'inside');
  const specs = [
    { name: 'scratch', mountPath: '/a', subPath: 'real' },
    { name: 'scratch', mountPath: '/b', subPath: 'inside-link' },
    { name: 'scratch', mountPath: '/c', subPath: 'new/deeper' },
    { name: 'config', mountPath: '/etc/a', subPath: 'a' },
  ];
  const ok = await mountsOf(specs);
  // The runtime gets a bind of the checked path under volume-subpaths, which no container can swap.
  const hostPaths = ok.map((m) => m.hostPath ?? '');
  const podDir = join(vols.dirs.get('scratch')!.hostPath, '..', '..', '..');
  assert.deepEqual(
    hostPaths,
    [0, 1, 2, 3].map((i) => join(podDir, 'volume-subpaths', specs[i]!.name, 'app', String(i))),
  );
  for (const p of hostPaths) assert.equal((await mountedAt(p)).length, 1, p);
  assert.equal(read(join(hostPaths[0]!, 'marker')), 'inside');
  assert.equal(read(join(hostPaths[1]!, 'marker')), 'inside');
  assert.equal(statSync(hostPaths[2]!).ino, statSync(join(scratch, 'new', 'deeper')).ino);
  assert.equal(mode(join(scratch, 'new', 'deeper')), 0o777, 'created with the volume root mode');
  assert.equal(read(hostPaths[3]!), 'A');
  await mountsOf(specs);
  for (const p of hostPaths) assert.equal((await mountedAt(p)).length, 1, 'a second call reuses the bind');

  for (const [subPath, re] of [
    ['etc-link', /not within volume path/],
    ['etc-link/passwd', /not within volume path/],
    ['up/etc', /not within volume path/],
    ['../x', /must not contain '\.\.'/],
    ['real/../../x', /must not contain '\.\.'/],
    ['/etc', /must not be an absolute path/],
  ] as const) {
    const e = await rejectsVolume(mountsOf([{ name: 'scratch', mountPath: '/x', subPath }]), 'scratch', 'CreateContainerConfigError', re);
    assert.match(e.message, /^failed to prepare subPath for volumeMount "scratch" of container "app": /);
  }
  assert.equal(existsSync(join(scratch, 'x')), false);
  assert.equal(existsSync('/etc/x'), false);
});

test('subPathExpr: $(VAR) from the container environment', async (t) => {
  const { objects, vm } = setup(t);
  objects.addConfigMap('cfg', { a: 'A' });
  const { pod } = mountPod([]);
  const vols = await vm.setUpPodVolumes(pod, []);
  const scratch = vols.dirs.get('scratch')!.hostPath;
  const c = container('app', { volumeMounts: [{ name: 'scratch', mountPath: '/logs', subPathExpr: 'logs/$(POD_NAME)' }] });
  const [m] = await vm.containerMounts(pod, c, vols, { POD_NAME: 'web-1' });
  assert.ok(statSync(join(scratch, 'logs', 'web-1')).isDirectory());
  assert.equal(statSync(m!.hostPath!).ino, statSync(join(scratch, 'logs', 'web-1')).ino);
  await rejectsVolume(vm.containerMounts(pod, c, vols, {}), 'scratch', 'CreateContainerConfigError', /missing value for POD_NAME/);
  const esc = container('app', { volumeMounts: [{ name: 'scratch', mountPath: '/x', subPathExpr: '$(UP)/x' }] });
  await rejectsVolume(vm.containerMounts(pod, esc, vols, { UP: '..' }), 'scratch', 'CreateContainerConfigError', /must not contain '\.\.'/);
});

test('expandSubPathExpr follows the kubelet expansion syntax', () => {
  assert.equal(expandSubPathExpr('$(A)-$(B)', { A: 'x', B: 'y' }), 'x-y');
  assert.equal(expandSubPathExpr('$$(A)', { A: 'x' }), '$(A)');
  assert.equal(expandSubPathExpr('a$b$(', {}), 'a$b$(');
  assert.equal(expandSubPathExpr('end$', {}), 'end$');
  assert.throws(() => expandSubPathExpr('$(A)/$(B)/$(C)', { B: '' }), /missing value for A, B, C/);
});

test('goQuote and formatMap match Go %q and fieldpath.FormatMap', () => {
  assert.equal(goQuote('plain'), '"plain"');
  assert.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
  assert.equal(goQuote('\x00\x07\x1b\x7f'), '"\\x00\\a\\x1b\\x7f"');
  assert.equal(goQuote('日本 ✓'), '"日本 ✓"');
  assert.equal(goQuote('\u00a0\u200b'), '"\\u00a0\\u200b"');
  assert.equal(goQuote('\u{e0001}'), '"\\U000e0001"');
  assert.equal(formatMap({ b: '2', a: '1' }), 'a="1"\nb="2"');
  assert.equal(formatMap(undefined), '');
});

test('tearDown never follows a symlink out of the pod directory', async (t) => {
  const { root, vm } = setup(t);
  const elsewhere = join(root, 'elsewhere');
  mkdirSync(join(elsewhere, 'volumes'), { recursive: true });
  writeFileSync(join(elsewhere, 'volumes', 'precious'), 'keep');
  mkdirSync(join(root, 'pods'));
  symlinkSync(elsewhere, join(root, 'pods', 'linked'));
  await assert.rejects(vm.tearDown('linked'), /refusing to tear down/);
  assert.equal(read(join(elsewhere, 'volumes', 'precious')), 'keep');
  await assert.rejects(vm.tearDown('../x'), /pod UID "..\/x" must not contain "\/"/);
});

test('tearDown unmounts subPath binds, tmpfs volumes and propagated mounts before removing anything', async (t) => {
  const { root, objects, vm } = setup(t);
  objects.addSecret('s', { k: 'v' });
  const pod = podWith([
    { name: 's', secret: { secretName: 's' } },
    { name: 'scratch', emptyDir: {} },
  ]);
  const vols = await vm.setUpPodVolumes(pod, []);
  // A mount a container propagated into its emptyDir is unmounted too, before anything is removed.
  const nested = join(vols.dirs.get('scratch')!.hostPath, 'nested');
  mkdirSync(nested);
  execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', nested]);
  writeFileSync(join(nested, 'f'), 'x');
  const c = container('app', { volumeMounts: [{ name: 'scratch', mountPath: '/n', subPath: 'nested' }] });
  await vm.containerMounts(pod, c, vols, {});
  assert.equal((await mountsUnder(root)).length, 3);
  await vm.tearDown('uid-vol');
  assert.deepEqual(await mountsUnder(root), []);
  assert.equal(existsSync(join(root, 'pods', 'uid-vol')), false);
});

test("the kubelet's object store of a parsed manifest feeds the volumes (stringData included)", async (t) => {
  const { root } = setup(t);
  const text = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: default}
stringData: {password: pw}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: other}
data: {greeting: elsewhere}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: busybox:1.36
    volumeMounts: [{name: cfg, mountPath: /cfg}, {name: creds, mountPath: /creds}]
  volumes:
  - {name: cfg, configMap: {name: cfg}}
  - {name: creds, secret: {secretName: creds}}
`;
  const parsed = parseManifestText(text, { kind: 'file', path: '/m/pod.yaml', display: 'pod.yaml' }, { nodeName: 'node-a' });
  assert.deepEqual(
    parsed.problems.filter((p) => p.severity === 'error'),
    [],
  );
  const vm = new VolumeManager({ rootDir: root, objects: objectStoreOf(parsed), node: NODE });
  const pod = parsed.pods[0]!.pod;
  const vols = await vm.setUpPodVolumes(pod, []);
  assert.equal(read(join(vols.dirs.get('cfg')!.hostPath, 'greeting')), 'hello');
  assert.equal(read(join(vols.dirs.get('creds')!.hostPath, 'password')), 'pw');
  const mounts = await vm.containerMounts(pod, pod.spec!.containers[0]!, vols, {});
  assert.deepEqual(
    mounts.map((m) => [m.containerPath, m.readonly]),
    [
      ['/cfg', true],
      ['/creds', true],
    ],
  );
  await vm.tearDown(pod.metadata!.uid!);
  assert.deepEqual(await mountsUnder(root), []);
});

test('openInside refuses a directory swapped for a symlink after the subPath check', async (t) => {
  const { root } = setup(t);
  const vol = join(root, 'vol');
  mkdirSync(join(vol, 'a', 'b'), { recursive: true });
  closeSync(openInside(vol, 'a/b'));
  renameSync(join(vol, 'a'), join(vol, 'a.old'));
  symlinkSync('/etc', join(vol, 'a'));
  assert.throws(() => openInside(vol, 'a/b'), /"a" changed into a symlink/);
});

function objectStoreOf(set: { configMaps: IConfigMap[]; secrets: ISecret[] }): ObjectStore {
  const store = new ObjectStore();
  store.set('file', set);
  return store;
}

test('ObjectStore: a ConfigMap or Secret two sources hold is read as it was written last; a change of metadata alone is no write', async (t) => {
  const cm = (ns: string, name: string, v: string, labels?: Record<string, string>): IConfigMap => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: ns, name, labels },
    data: { v },
  });
  const secret = (name: string, v: string): ISecret => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { namespace: 'default', name },
    data: { v },
  });
  const store = new ObjectStore();
  store.set('applied', { configMaps: [cm('default', 'app', 'copy'), cm('default', 'only-copy', 'copy')], secrets: [secret('s', 'copy')] });
  store.set(API_OBJECTS_SOURCE, { configMaps: [cm('default', 'app', 'api'), cm('other', 'app', 'api')], secrets: [secret('s', 'api')] });
  assert.equal(store.configMap('default', 'app')?.data?.v, 'api', 'the API written after the pod file');
  assert.equal(store.secret('default', 's')?.data?.v, 'api');
  assert.equal(store.configMap('other', 'app')?.data?.v, 'api', 'by namespace');
  assert.equal(store.configMap('default', 'only-copy')?.data?.v, 'copy', 'what only one source holds');

  // The pod file's snapshot again with the same content is no write; with new content it is the latest.
  store.set('applied', { configMaps: [cm('default', 'app', 'copy'), cm('default', 'only-copy', 'copy')], secrets: [secret('s', 'copy')] });
  assert.equal(store.configMap('default', 'app')?.data?.v, 'api');
  store.set('applied', { configMaps: [cm('default', 'app', 'file two')], secrets: [secret('s', 'copy')] });
  assert.equal(store.configMap('default', 'app')?.data?.v, 'file two');
  assert.equal(store.secret('default', 's')?.data?.v, 'api', 'the Secret kept its content in both: still the API');
  store.set(API_OBJECTS_SOURCE, { configMaps: [cm('default', 'app', 'api', { relabelled: 'yes' })], secrets: [secret('s', 'api')] });
  assert.equal(store.configMap('default', 'app')?.data?.v, 'file two', 'a label change is no newer content');
  store.set(API_OBJECTS_SOURCE, { configMaps: [cm('default', 'app', 'api two')], secrets: [] });
  assert.equal(store.configMap('default', 'app')?.data?.v, 'api two');
  assert.equal(store.secret('default', 's')?.data?.v, 'copy', 'gone from the API: the copy the pod came with');
  store.set(API_OBJECTS_SOURCE, { configMaps: [], secrets: [] });
  assert.equal(store.configMap('default', 'app')?.data?.v, 'file two');

  // And so a pod's configMap volume shows the API's version at its next set-up, as a sync makes it.
  const { root } = setup(t);
  store.set(API_OBJECTS_SOURCE, { configMaps: [cm('default', 'app', 'api one')], secrets: [] });
  const vm = new VolumeManager({ rootDir: root, objects: store, node: NODE });
  const pod = podWith([{ name: 'config', configMap: { name: 'app' } }], { uid: 'uid-api-objects' });
  const dir = (await vm.setUpPodVolumes(pod, [])).dirs.get('config')!.hostPath;
  assert.equal(read(join(dir, 'v')), 'api one');
  store.set(API_OBJECTS_SOURCE, { configMaps: [cm('default', 'app', 'api two')], secrets: [] });
  await vm.setUpPodVolumes(pod, []);
  assert.equal(read(join(dir, 'v')), 'api two');
});

test("ObjectStore: written last is by the sources' own times, so an agent restart keeps it; one source's two copies: the newer file's", () => {
  const cm = (v: string): IConfigMap => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: 'default', name: 'app' },
    data: { v },
  });
  let now = 5_000;
  const dated = (objects: IConfigMap[], times: number[]) => {
    const at = new Map<object, number>(objects.map((o, i) => [o, times[i]!]));
    return { configMaps: objects, secrets: [], writtenAt: (o: object) => at.get(o) };
  };
  // After a restart the pod files are read first, the API's objects handed over after: the pod's copy, written at 3000,
  // is newer than the API's of 2000 though the store saw it first.
  const store = new ObjectStore(() => now);
  store.set('applied', dated([cm('copy')], [3_000]));
  store.set(API_OBJECTS_SOURCE, dated([cm('api')], [2_000]));
  assert.equal(store.configMap('default', 'app')?.data?.v, 'copy');
  // A write after: newer, whatever its source.
  store.set(API_OBJECTS_SOURCE, dated([cm('api two')], [4_000]));
  assert.equal(store.configMap('default', 'app')?.data?.v, 'api two');
  // A source that cannot date it: the time the store sees the change.
  now = 6_000;
  store.set('file', { configMaps: [cm('undated')], secrets: [] });
  assert.equal(store.configMap('default', 'app')?.data?.v, 'undated');

  // Two pods' files with different copies: the newer file's, listed first or last, and it stays so at every snapshot.
  const two = new ObjectStore(() => now);
  for (let i = 0; i < 3; i++) {
    two.set('applied', dated([cm('newer'), cm('older')], [2_000, 1_000]));
    assert.equal(two.configMap('default', 'app')?.data?.v, 'newer', `snapshot ${i}`);
    now += 1_000;
  }
  two.set('applied', dated([cm('older'), cm('newer')], [1_000, 2_000]));
  assert.equal(two.configMap('default', 'app')?.data?.v, 'newer');
});
