import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_NAMESPACE, e2eClient, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-runtime-class');
const common = ['--log-root', join(dir.dir, 'logs'), '--root-dir', join(dir.dir, 'root')];

const runtimeClass = (name: string, handler: string) =>
  `apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: ${name}}\nhandler: ${handler}\n`;
const pod = (name: string, runtimeClassName?: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n${runtimeClassName ? `  runtimeClassName: ${runtimeClassName}\n` : ''}  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;

async function sandboxOf(name: string) {
  const [sandbox] = await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
  assert.ok(sandbox, `no sandbox for ${name}`);
  const containers = await client.listContainers({ podSandboxId: sandbox.id });
  // containerd's verbose status says which OCI runtime binary its runc shim runs.
  const info = JSON.parse((await client.podSandboxStatus(sandbox.id, true)).info.info ?? '{}') as {
    runtimeOptions?: { binary_name?: string };
  };
  return { handler: sandbox.runtimeHandler, binary: info.runtimeOptions?.binary_name ?? '', states: containers.map((c) => c.state) };
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test(
  'a RuntimeClass in the manifests picks the OCI runtime: crun and runc side by side, and --runtime-handler for pods that ' + 'name none',
  async () => {
    const file = join(dir.dir, 'classes.yaml');
    writeFileSync(
      file,
      [
        runtimeClass('fast', 'crun'),
        runtimeClass('classic', 'runc'),
        pod('on-crun', 'fast'),
        pod('on-runc', 'classic'),
        pod('default-crun'),
      ].join('---\n'),
    );
    const v = podctl(['validate', file]);
    assert.match(v.stdout, /^valid: 3 pod\(s\), 0 ConfigMap\(s\), 0 Secret\(s\), 2 RuntimeClass\(es\); 0 warning\(s\)$/m);
    const r = podctl(['sync-once', file, '--runtime-handler', 'crun', ...common], { timeoutMs: 180_000 });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const crun = await sandboxOf('on-crun');
    assert.equal(crun.handler, 'crun');
    assert.match(crun.binary, /crun$/);
    assert.deepEqual(crun.states, ['CONTAINER_RUNNING']);
    const runc = await sandboxOf('on-runc');
    assert.equal(runc.handler, 'runc');
    assert.doesNotMatch(runc.binary, /crun/);
    assert.deepEqual(runc.states, ['CONTAINER_RUNNING']);
    const byDefault = await sandboxOf('default-crun');
    assert.equal(byDefault.handler, 'crun');
    assert.deepEqual(byDefault.states, ['CONTAINER_RUNNING']);
  },
);

test(
  'a pod naming a RuntimeClass no document provides: validate warns, sync-once fails it at once naming it, and no ' + 'sandbox is made',
  async () => {
    const file = join(dir.dir, 'ghost.yaml');
    writeFileSync(file, pod('ghost-class', 'ghost'));
    const v = podctl(['validate', file]);
    assert.equal(v.code, 0, v.stderr);
    assert.match(
      v.stdout + v.stderr,
      /spec\.runtimeClassName: failed to lookup RuntimeClass ghost: runtimeclass\.node\.k8s\.io "ghost" not found/,
    );
    const r = podctl(['sync-once', file, ...common], { timeoutMs: 120_000 });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout + r.stderr, /runtimeclass\.node\.k8s\.io "ghost" not found/);
    assert.deepEqual(
      await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: 'ghost-class', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } }),
      [],
    );
  },
);
