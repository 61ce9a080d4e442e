import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, podctlAsync, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-eviction');
// run --detach starts an agent on this root dir of its own, stopped by its PID at the end.
const rootDir = join(dir.dir, 'root');
const common = ['--root-dir', rootDir, '--log-root', join(dir.dir, 'logs')];

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  assert.equal(podctl(['agent', 'stop', '--root-dir', rootDir]).code, 0);
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test("an emptyDir on disk written past its sizeLimit evicts the pod: Failed, reason Evicted, the kubelet's message, containers stopped", async () => {
  const file = join(dir.dir, 'fill.yaml');
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Pod\nmetadata: {name: fill, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sh, -c, "sleep 1; dd if=/dev/zero of=/scratch/fill bs=1M count=4; sleep 3600"]\n    volumeMounts: [{name: scratch, mountPath: /scratch}]\n  volumes:\n  - {name: scratch, emptyDir: {sizeLimit: 1Mi}}\n`,
  );
  const run = podctl(['run', '--detach', file, ...common]);
  assert.equal(run.code, 0, run.stderr);
  const evicted = await eventually(
    'the pod evicted',
    async () => {
      const r = await podctlAsync(['get', 'pods', 'fill', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', rootDir]);
      const pod = r.code === 0 ? (JSON.parse(r.stdout) as IPod) : undefined;
      return pod?.status?.reason === 'Evicted' && pod.status.containerStatuses?.[0]?.state?.terminated ? pod : undefined;
    },
    60_000,
  );
  assert.equal(evicted.status!.phase, 'Failed');
  assert.equal(evicted.status!.message, 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ');
  const events = podctl(['events', '-n', E2E_NAMESPACE, '--for', 'pod/fill', '--root-dir', rootDir]);
  assert.match(events.stdout, /Evicted.*Usage of EmptyDir volume "scratch" exceeds the limit "1Mi"/);
  const del = podctl(['delete', 'pod', 'fill', '-n', E2E_NAMESPACE, '--root-dir', rootDir, '--force']);
  assert.equal(del.code, 0, del.stderr);
});

test("a container writing past its ephemeral-storage limit into its writable layer evicts the pod with the kubelet's message", async () => {
  const file = join(dir.dir, 'layer.yaml');
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Pod\nmetadata: {name: layer, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: fill\n    image: busybox:1.36\n    command: [sh, -c, "sleep 1; dd if=/dev/zero of=/fill bs=1M count=4; sleep 3600"]\n    resources: {limits: {ephemeral-storage: 2Mi}}\n  - name: idle\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    resources: {limits: {ephemeral-storage: 100Mi}}\n`,
  );
  const run = podctl(['run', '--detach', file, ...common]);
  assert.equal(run.code, 0, run.stderr);
  // containerd refreshes writable layer usage every 10 s; the eviction manager looks every 10 s.
  const evicted = await eventually(
    'the pod evicted',
    async () => {
      const r = await podctlAsync(['get', 'pods', 'layer', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', rootDir]);
      const pod = r.code === 0 ? (JSON.parse(r.stdout) as IPod) : undefined;
      return pod?.status?.reason === 'Evicted' && pod.status.containerStatuses?.every((c) => c.state?.terminated) ? pod : undefined;
    },
    90_000,
  );
  assert.equal(evicted.status!.phase, 'Failed');
  assert.equal(evicted.status!.message, 'Container fill exceeded its local ephemeral storage limit "2Mi". ');
  const del = podctl(['delete', 'pod', 'layer', '-n', E2E_NAMESPACE, '--root-dir', rootDir, '--force']);
  assert.equal(del.code, 0, del.stderr);
});
