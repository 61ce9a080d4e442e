import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { containerLogPath, podLogDirectory } from '../../src/core/kuberuntime/config.js';
import * as L from '../../src/core/kuberuntime/labels.js';
import { RuntimeManager } from '../../src/core/kuberuntime/manager.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { checkComponent, removeBelow, safeJoin, safeJoinRelative, UnsafePathError } from '../../src/core/util/safe-path.js';
import { mountsUnder, removePodDirectory, VolumeManager, writePayload } from '../../src/core/volumes/index.js';
import { scratchDir } from '../support/e2e.js';

/** Traversal attempts a manifest could put in any component that becomes a path element. */
const TRAVERSALS = ['..', '../x', '/etc', 'a/../../b', 'a\0b', '.', '', 'x'.repeat(300), '../../../../../tmp/victim'];
const COMPONENTS = ['metadata.uid', 'metadata.namespace', 'metadata.name', 'container name', 'volume name'];
const UID = '3f2b9c1e-7d4a-4b8e-9f0a-12c34d56e78f';

function scratch(t: TestContext, prefix: string): string {
  const { dir, cleanup } = scratchDir(prefix);
  const root = realpathSync(dir);
  t.after(async () => {
    for (const mp of await mountsUnder(root)) execFileSync('umount', [mp]);
    cleanup();
  });
  return root;
}

function podNamed(m: { uid?: string; name?: string; namespace?: string }): IPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { uid: UID, name: 'web', namespace: 'default', ...m },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] },
  };
}

function manifestWithUID(uid: string): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: "${uid}"}\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n`;
}

test('metadata.uid must be a UID: RFC 4122 or 32 hex digits; a traversing one is refused naming the field', () => {
  for (const bad of [
    '../../../../../tmp/victim',
    '../x',
    '/etc',
    'victim',
    'a\\0b',
    '3f2b9c1e-7d4a-4b8e-9f0a-12c34d56e78',
    '3f2b9c1e7d4a4b8e9f0a12c34d56e78f0',
    'g'.repeat(32),
  ]) {
    const parsed = parseManifestText(manifestWithUID(bad), { kind: 'file', path: '/unit/p.yaml', display: 'p.yaml' }, { nodeName: 'unit' });
    assert.deepEqual(parsed.pods, [], 'no pod to start');
    assert.deepEqual(
      parsed.problems.map((p) => [p.field, p.severity]),
      [['metadata.uid', 'error']],
    );
    assert.match(parsed.problems[0]!.message, /is invalid; expected a UID such as .* \(RFC 4122\) or 32 hex digits/);
  }
  for (const good of ['3f2b9c1e-7d4a-4b8e-9f0a-12c34d56e78f', '3F2B9C1E-7D4A-4B8E-9F0A-12C34D56E78F', '0123456789abcdef0123456789ABCDEF']) {
    const parsed = parseManifestText(manifestWithUID(good), { kind: 'file', path: '/unit/p.yaml' }, { nodeName: 'unit' });
    assert.deepEqual(parsed.problems, []);
    assert.equal(parsed.pods[0]!.pod.metadata!.uid, good);
  }
});

test('safeJoin refuses every traversal attempt in every manifest-derived component', () => {
  for (const what of COMPONENTS) {
    for (const bad of TRAVERSALS) {
      assert.throws(
        () =>
          safeJoin('/var/lib/podctl', [
            ['pods', 'pods'],
            [what, bad],
          ]),
        UnsafePathError,
        `${what} ${JSON.stringify(bad)}`,
      );
      assert.throws(
        () => checkComponent(bad, what),
        (e: Error) => e instanceof UnsafePathError && e.message.includes(what),
        `${what} ${JSON.stringify(bad)}`,
      );
    }
  }
  assert.equal(
    safeJoin('/var/lib/podctl', [
      ['pods', 'pods'],
      ['metadata.uid', UID],
    ]),
    `/var/lib/podctl/pods/${UID}`,
  );
  assert.equal(
    safeJoin('/var/lib/podctl', [
      ['pods', 'pods'],
      ['metadata.uid', 'a'.repeat(32)],
    ]),
    `/var/lib/podctl/pods/${'a'.repeat(32)}`,
  );
  assert.equal(
    safeJoin('/r', [
      ['volume name', 'cfg-vol'],
      ['container name', 'app'],
      ['index', '0'],
    ]),
    '/r/cfg-vol/app/0',
  );
  assert.throws(() => safeJoin('', [['metadata.uid', UID]]), /no root directory/);
});

test('the log directory, the container log path and the volume directories refuse a traversing uid, namespace, name or container', () => {
  for (const bad of TRAVERSALS) {
    assert.throws(() => podLogDirectory('/var/log/pods', podNamed({ uid: bad })), UnsafePathError, `uid ${JSON.stringify(bad)}`);
    assert.throws(
      () => podLogDirectory('/var/log/pods', podNamed({ namespace: bad || '/' })),
      UnsafePathError,
      `namespace ${JSON.stringify(bad)}`,
    );
    assert.throws(() => podLogDirectory('/var/log/pods', podNamed({ name: bad })), UnsafePathError, `name ${JSON.stringify(bad)}`);
    assert.throws(() => containerLogPath(bad, 0), UnsafePathError, `container ${JSON.stringify(bad)}`);
    const vm = new VolumeManager({
      rootDir: '/var/lib/podctl',
      objects: { configMap: () => undefined, secret: () => undefined },
      node: { nodeName: 'n', cpuCores: 1, memoryBytes: 1 },
    });
    assert.throws(() => vm.podDir(bad), UnsafePathError, `pod dir ${JSON.stringify(bad)}`);
    assert.throws(() => vm.subPathTarget(UID, bad, 'app', 0), UnsafePathError, `subPath volume ${JSON.stringify(bad)}`);
    assert.throws(() => vm.subPathTarget(UID, 'cfg', bad, 0), UnsafePathError, `subPath container ${JSON.stringify(bad)}`);
  }
  assert.equal(podLogDirectory('/var/log/pods', podNamed({})), `/var/log/pods/default_web_${UID}`);
  assert.equal(containerLogPath('app', 2), 'app/2.log');
});

test('safeJoinRelative refuses item paths and subPaths that leave their root; keeps those that stay', () => {
  for (const bad of ['..', '../x', '/etc', 'a/../../b', 'a\0b', '.', '', 'x'.repeat(5000), 'a/..']) {
    assert.throws(
      () => safeJoinRelative('/vol', bad, 'items[].path'),
      (e: Error) => e instanceof UnsafePathError && e.message.includes('items[].path'),
      JSON.stringify(bad),
    );
  }
  assert.equal(safeJoinRelative('/vol', 'a/b.txt', 'items[].path'), '/vol/a/b.txt');
  assert.equal(safeJoinRelative('/vol', 'key', 'items[].path'), '/vol/key');
  assert.equal(safeJoinRelative('/vol', './dir//f', 'subPath'), '/vol/dir/f');
});

test('writePayload never writes an item path outside the volume, even one that skipped cleanItemPath', async (t) => {
  const root = scratch(t, 'safe-payload');
  const vol = join(root, 'vol');
  mkdirSync(vol);
  await assert.rejects(writePayload(vol, new Map([['../escape', { data: Buffer.from('x'), mode: 0o644 }]])), UnsafePathError);
  assert.equal(existsSync(join(root, 'escape')), false);
  assert.equal(await writePayload(vol, new Map([['in/side', { data: Buffer.from('y'), mode: 0o644 }]])), true);
  assert.equal(readFileSync(join(vol, 'in', 'side'), 'utf8'), 'y');
});

test('removeBelow removes only strictly below a root, and not through a symlink that leads out', async (t) => {
  const root = scratch(t, 'safe-remove');
  const inside = join(root, 'root', 'pods', 'p');
  const outside = join(root, 'outside');
  mkdirSync(inside, { recursive: true });
  mkdirSync(join(outside, 'p'), { recursive: true });
  writeFileSync(join(outside, 'p', 'keep'), 'keep');
  symlinkSync(outside, join(root, 'root', 'link'));
  assert.equal(await removeBelow([join(root, 'root')], join(outside, 'p')), false, 'outside the root');
  assert.equal(await removeBelow([join(root, 'root')], join(root, 'root')), false, 'the root itself');
  assert.equal(await removeBelow([join(root, 'root')], join(root, 'root', 'pods', '..', '..', 'outside')), false, 'not normalized');
  assert.equal(await removeBelow([join(root, 'root')], join(root, 'root', 'link', 'p')), false, 'through a symlink');
  assert.equal(await removeBelow(['relative'], 'relative/x'), false, 'a relative root');
  assert.equal(readFileSync(join(outside, 'p', 'keep'), 'utf8'), 'keep');
  assert.equal(await removeBelow([join(root, 'root')], inside), true);
  assert.equal(existsSync(inside), false);
  assert.equal(await removeBelow([join(root, 'root')], inside), true, 'absent is fine');
});

test(
  'removePodDirectory unmounts beneath the pod dir, deepest first, then removes it; anything but <root>/pods/<uid> ' + 'is refused',
  async (t) => {
    const root = scratch(t, 'safe-poddir');
    const victim = join(root, 'victim');
    mkdirSync(victim);
    writeFileSync(join(victim, 'keep'), 'keep');
    await assert.rejects(removePodDirectory(victim, 'victim'), /not a pod directory/);
    await assert.rejects(removePodDirectory(join(root, 'pods', UID), '../victim'), UnsafePathError);
    await assert.rejects(removePodDirectory(join(root, 'pods', 'other'), UID), /not a pod directory/);
    mkdirSync(join(root, 'pods'));
    symlinkSync(victim, join(root, 'pods', UID));
    await assert.rejects(removePodDirectory(join(root, 'pods', UID), UID), /refusing to tear down/);
    assert.equal(readFileSync(join(victim, 'keep'), 'utf8'), 'keep');
    execFileSync('rm', [join(root, 'pods', UID)]);

    const podDir = join(root, 'pods', UID);
    const outer = join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'mem');
    mkdirSync(outer, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', outer]);
    mkdirSync(join(outer, 'nested'));
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', join(outer, 'nested')]);
    assert.equal((await mountsUnder(podDir)).length, 2);
    await removePodDirectory(podDir, UID);
    assert.deepEqual(await mountsUnder(root), []);
    assert.equal(existsSync(podDir), false);
  },
);

test('removePod removes the directories and mounts the sandbox recorded, whatever root dir and log root started the pod', async (t) => {
  const root = scratch(t, 'safe-removepod');
  const clock = new FakeClock();
  const fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  t.after(async () => {
    client.close();
    await fake.stop();
  });
  const text = `apiVersion: v1
kind: Pod
metadata: {name: recorded, namespace: default}
spec:
  containers:
  - {name: app, image: busybox:1.36, command: [sleep, "3600"], volumeMounts: [{name: mem, mountPath: /m}, {name: scratch, mountPath: /s, subPath: sub}]}
  volumes:
  - {name: mem, emptyDir: {medium: Memory}}
  - {name: scratch, emptyDir: {}}
`;
  const parsed = parseManifestText(text, { kind: 'file', path: '/unit/recorded.yaml' }, { nodeName: 'unit' });
  assert.deepEqual(parsed.problems, []);
  const p = parsed.pods[0]!.pod;
  const uid = p.metadata!.uid!;
  const kubelet = newKubelet({
    runtime: client,
    images: client,
    clock,
    logRoot: join(root, 'logs'),
    rootDir: join(root, 'root'),
    nodeName: 'unit',
  });
  await kubelet.syncPod(p, 'create');
  const podDir = join(root, 'root', 'pods', uid);
  const logDir = podLogDirectory(join(root, 'logs'), p);
  assert.equal(existsSync(join(podDir, 'etc-hosts')), true);
  assert.equal(existsSync(join(logDir, 'app')), true);
  assert.equal((await mountsUnder(podDir)).length, 2, 'the tmpfs and the subPath bind');
  const sandbox = fake.sandboxes()[0]!;
  assert.equal(sandbox.annotations[L.POD_DIR_ANNOTATION], podDir);
  assert.equal(sandbox.annotations[L.POD_LOG_DIR_ANNOTATION], logDir);

  // As `podctl delete` does: no root dir, no log root, no volume manager of its own.
  const deleter = new RuntimeManager({ runtime: client, images: client, clock, logRoot: '' });
  const status = await deleter.getPodStatus(uid, 'recorded', 'default');
  await deleter.killPodByStatus(status, 0);
  await deleter.removePod(status);
  assert.deepEqual(await mountsUnder(root), []);
  assert.equal(existsSync(podDir), false);
  assert.equal(existsSync(logDir), false);
  assert.deepEqual(fake.sandboxes(), []);
});

test("removePod refuses recorded paths that are not this pod's, removing nothing there", async (t) => {
  const root = scratch(t, 'safe-tampered');
  const clock = new FakeClock();
  const fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  t.after(async () => {
    client.close();
    await fake.stop();
  });
  const canary = join(root, 'canary');
  mkdirSync(canary);
  writeFileSync(join(canary, 'keep'), 'keep');
  for (const [podDir, logDir] of [
    [canary, undefined],
    [undefined, canary],
    [join(root, 'x', 'pods', '..', '..', 'canary'), undefined],
  ] as const) {
    const labels = {
      [L.POD_UID_LABEL]: UID,
      [L.POD_NAME_LABEL]: 'web',
      [L.POD_NAMESPACE_LABEL]: 'default',
      [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE,
    };
    const annotations: Record<string, string> = {};
    if (podDir) annotations[L.POD_DIR_ANNOTATION] = podDir;
    if (logDir) annotations[L.POD_LOG_DIR_ANNOTATION] = logDir;
    await client.runPodSandbox({ metadata: { name: 'web', namespace: 'default', uid: UID, attempt: 0 }, labels, annotations });
    const manager = new RuntimeManager({ runtime: client, images: client, clock, logRoot: '' });
    const status = await manager.getPodStatus(UID, 'web', 'default');
    // A log directory not named for the pod is skipped; a pod directory that is not <root>/pods/<uid> is an error.
    if (podDir) await assert.rejects(manager.removePod(status), /not a pod directory/);
    else await manager.removePod(status);
    assert.equal(readFileSync(join(canary, 'keep'), 'utf8'), 'keep');
    for (const s of fake.sandboxes()) await client.removePodSandbox(s.id);
  }
});
