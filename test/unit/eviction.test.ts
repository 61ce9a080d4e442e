import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import {
  formatBytesQuantity,
  hasLocalStorageLimits,
  limitedEmptyDirs,
  localStorageEviction,
} from '../../src/core/eviction/local-storage.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { podMeta } from '../../src/core/util/pod-key.js';
import { scratchDir } from '../support/e2e.js';
import { startFake, stopFake } from '../support/fake-runtime.js';

let fake: FakeRuntime;
let client: CriClient;
const clock = new FakeClock();
const dir = scratchDir('eviction');

before(async () => ({ fake, client } = await startFake({ clock })));
after(async () => {
  await stopFake({ fake, client });
  dir.cleanup();
});

const containersOf = (name: string) =>
  fake.containers().filter((c) => fake.sandboxes().some((s) => s.id === c.podSandboxId && s.metadata.name === name));

const pod = (name: string) =>
  parseManifestText(
    `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    volumeMounts: [{name: scratch, mountPath: /scratch}]\n  volumes:\n  - {name: scratch, emptyDir: {sizeLimit: 64Ki}}\n`,
    { kind: 'file', path: `/unit/${name}.yaml` },
    { nodeName: 'unit' },
  ).pods[0]!.pod;

test('only disk emptyDirs with a sizeLimit are measured (a Memory one is a tmpfs of that size)', () => {
  const p = parseManifestText(
    'apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n  volumes:\n  - ' +
      '{name: disk, emptyDir: {sizeLimit: 1Mi}}\n  - {name: ram, emptyDir: {medium: Memory, sizeLimit: 1Mi}}\n  - {name: free, ' +
      'emptyDir: {}}\n',
    { kind: 'file', path: '/unit/m.yaml' },
    { nodeName: 'unit' },
  ).pods[0]!.pod;
  assert.deepEqual(limitedEmptyDirs(p), [{ name: 'disk', limit: '1Mi', bytes: 1024 * 1024 }]);
});

test("an emptyDir on disk past its sizeLimit gets its pod evicted at housekeeping: killed, Failed, reason Evicted, the kubelet's message; one within its limit is kept", async () => {
  const kubelet = newKubelet({
    runtime: client,
    images: client,
    clock,
    logRoot: join(dir.dir, 'logs'),
    rootDir: join(dir.dir, 'root'),
    nodeName: 'unit',
  });
  const big = pod('big');
  const small = pod('small');
  const statusOf = (p: typeof big) => kubelet.statusManager.get(podMeta(p).uid);
  for (const p of [big, small]) kubelet.addOrUpdatePod(p);
  await kubelet.workers.waitIdle();
  assert.deepEqual([statusOf(big)?.phase, statusOf(small)?.phase], ['Running', 'Running']);
  const scratchOf = (p: typeof big) => join(dir.dir, 'root', 'pods', podMeta(p).uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
  writeFileSync(join(scratchOf(big), 'fill'), Buffer.alloc(256 * 1024, 1));
  writeFileSync(join(scratchOf(small), 'note'), 'a few bytes');
  await kubelet.housekeeping();
  // Housekeeping queues the evicted pod's sync at once (the loop's next sync tick takes it): that sync kills it.
  await kubelet.syncPod(big, 'sync');
  await kubelet.syncPod(small, 'sync');
  assert.ok(
    containersOf('big').every((c) => c.state === 'CONTAINER_EXITED'),
    'its containers are killed',
  );

  const status = statusOf(big)!;
  assert.deepEqual(
    [status.phase, status.reason, status.message],
    ['Failed', 'Evicted', 'Usage of EmptyDir volume "scratch" exceeds the limit "64Ki". '],
  );
  assert.ok(containersOf('big').length > 0);
  assert.ok(kubelet.events.all().some((e) => e.reason === 'Evicted' && e.message === status.message));
  assert.equal(statusOf(small)!.phase, 'Running');
  assert.ok(containersOf('small').some((c) => c.state === 'CONTAINER_RUNNING'));
  // Once evicted, a pod stays Failed: a later status keeps the reason.
  await kubelet.syncPod(big, 'sync').catch(() => undefined);
  assert.equal(statusOf(big)!.reason, 'Evicted');
  for (const p of [big, small]) kubelet.removePod(podMeta(p).uid, 0);
  await kubelet.workers.waitIdle();
  assert.equal(fake.sandboxes().filter((s) => s.state === 'SANDBOX_READY').length, 0);
});

const usage = (emptyDirs: Record<string, number>, containers: Record<string, [number, number]>) => ({
  emptyDirs: new Map(Object.entries(emptyDirs)),
  containers: new Map(Object.entries(containers).map(([k, [rootfs, logs]]) => [k, { rootfs, logs }])),
});

const limitsPod = (text: string) =>
  parseManifestText(
    `apiVersion: v1\nkind: Pod\nmetadata: {name: lim}\nspec:\n${text}`,
    { kind: 'file', path: '/unit/lim.yaml' },
    { nodeName: 'unit' },
  ).pods[0]!.pod;

test("localStorageEviction: the kubelet's three checks in its order and words: emptyDir, then the pod's total, then one container", () => {
  const p = limitsPod(
    '  containers:\n  - {name: small, image: busybox:1.36, resources: {limits: {ephemeral-storage: 2Mi}}}\n  - {name: big, image: ' +
      'busybox:1.36, resources: {limits: {ephemeral-storage: 8Mi}}}\n  volumes:\n  - {name: scratch, emptyDir: {sizeLimit: 1Mi}}\n',
  );
  const MiB = 1024 * 1024;
  assert.equal(
    localStorageEviction(p, usage({ scratch: MiB / 2 }, { small: [MiB, MiB / 2], big: [MiB, 0] })),
    undefined,
    'within every limit',
  );
  assert.equal(
    localStorageEviction(p, usage({ scratch: 2 * MiB }, { small: [3 * MiB, 0], big: [0, 0] })),
    'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ',
  );
  assert.equal(
    localStorageEviction(p, usage({ scratch: 0 }, { small: [MiB, 0], big: [9 * MiB, MiB] })),
    'Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ',
    'the pod check comes before the container check',
  );
  assert.equal(
    localStorageEviction(p, usage({ scratch: 0 }, { small: [MiB, 1.5 * MiB], big: [0, 0] })),
    'Container small exceeded its local ephemeral storage limit "2Mi". ',
    'writable layer and logs together',
  );
  const noLimits = limitsPod('  containers:\n  - {name: app, image: busybox:1.36}\n');
  assert.equal(hasLocalStorageLimits(noLimits), false);
  assert.equal(localStorageEviction(noLimits, usage({}, { app: [10 * MiB * 1024, 0] })), undefined);
  assert.deepEqual(
    [formatBytesQuantity(3 * MiB), formatBytesQuantity(1_500_000), formatBytesQuantity(1234), formatBytesQuantity(2 ** 30)],
    ['3Mi', '1500k', '1234', '1Gi'],
  );
});

test(
  'a container whose writable layer outgrows its ephemeral-storage limit gets the pod evicted; storage is measured every 10 s, ' +
    'not every housekeeping',
  async () => {
    const kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: join(dir.dir, 'logs'),
      rootDir: join(dir.dir, 'root'),
      nodeName: 'unit',
    });
    const p = limitsPod(
      '  containers:\n  - {name: fill, image: busybox:1.36, command: [sleep, "3600"], resources: {limits: {ephemeral-storage: 2Mi}}}\n  - {name: idle, image: busybox:1.36, command: [sleep, "3600"], resources: {limits: {ephemeral-storage: 100Mi}}}\n',
    );
    const uid = podMeta(p).uid;
    kubelet.addOrUpdatePod(p);
    await kubelet.workers.waitIdle();
    assert.equal(kubelet.statusManager.get(uid)?.phase, 'Running');
    await kubelet.housekeeping();
    assert.equal(kubelet.statusManager.get(uid)?.reason, undefined, 'within its limits');

    const fill = containersOf('lim').find((c) => c.metadata.name === 'fill' && c.state === 'CONTAINER_RUNNING')!;
    fake.setWritableLayerUsage(fill.id, 3 * 1024 * 1024);
    clock.advance(2000);
    await kubelet.housekeeping();
    await kubelet.syncPod(p, 'sync');
    assert.equal(kubelet.statusManager.get(uid)?.phase, 'Running', 'the next housekeeping, 2 s on, does not measure again');

    clock.advance(8000);
    await kubelet.housekeeping();
    await kubelet.syncPod(p, 'sync');
    const status = kubelet.statusManager.get(uid)!;
    assert.deepEqual(
      [status.phase, status.reason, status.message],
      ['Failed', 'Evicted', 'Container fill exceeded its local ephemeral storage limit "2Mi". '],
    );
    assert.ok(
      containersOf('lim').every((c) => c.state === 'CONTAINER_EXITED'),
      'its containers are killed',
    );
    assert.ok(kubelet.events.all().some((e) => e.reason === 'Evicted' && e.message === status.message));
    kubelet.removePod(uid, 0);
    await kubelet.workers.waitIdle();
  },
);
