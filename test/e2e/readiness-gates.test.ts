import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, podctlAsync, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-readiness-gates');
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

async function readyCondition(): Promise<{ status?: string; reason?: string; message?: string } | undefined> {
  const r = await podctlAsync(['get', 'pods', 'gated', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', rootDir]);
  if (r.code !== 0) return undefined;
  return (JSON.parse(r.stdout) as IPod).status?.conditions?.find((c) => c.type === 'Ready');
}

test('a readiness gate keeps Ready False while its condition is missing or False, and podctl condition makes it True', async () => {
  const file = join(dir.dir, 'gated.yaml');
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Pod\nmetadata: {name: gated, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  readinessGates:\n  - conditionType: example.com/lb\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`,
  );
  const run = podctl(['run', '--detach', file, ...common]);
  assert.equal(run.code, 0, run.stderr);
  const waiting = await eventually('Ready False on the readiness gate', async () => {
    const c = await readyCondition();
    return c?.reason === 'ReadinessGatesNotReady' ? c : undefined;
  });
  assert.deepEqual(
    [waiting.status, waiting.message],
    ['False', 'corresponding condition of pod readiness gate "example.com/lb" does not exist.'],
  );
  // --wait=ready would wait for the gate: with a second of patience it reports the pod not ready.
  const notReady = podctl(['run', '--detach', file, '--wait', 'ready', '--timeout', '1s', ...common]);
  assert.equal(notReady.code, 1, notReady.stdout + notReady.stderr);

  const refused = podctl(['condition', 'gated', 'Ready=True', '-n', E2E_NAMESPACE, '--root-dir', rootDir]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /Ready is set by the kubelet itself/);

  const off = podctl(['condition', 'gated', 'example.com/lb=False', '--reason', 'Draining', '-n', E2E_NAMESPACE, '--root-dir', rootDir]);
  assert.equal(off.code, 0, off.stderr);
  assert.match(
    off.stdout,
    /Ready=False \(ReadinessGatesNotReady: the status of pod readiness gate "example.com\/lb" is not "True", but False\)/,
  );

  const on = podctl(['condition', 'gated', 'example.com/lb=True', '-n', E2E_NAMESPACE, '--root-dir', rootDir]);
  assert.equal(on.code, 0, on.stderr);
  assert.match(on.stdout, /^pod\/gated condition example\.com\/lb=True; Ready=True$/m);
  await eventually('Ready True once the gate is True', async () => ((await readyCondition())?.status === 'True' ? true : undefined));
  const ready = podctl(['run', '--detach', file, '--wait', 'ready', '--timeout', '30s', ...common]);
  assert.equal(ready.code, 0, ready.stderr);

  const del = podctl(['delete', 'pod', 'gated', '-n', E2E_NAMESPACE, '--root-dir', rootDir, '--force']);
  assert.equal(del.code, 0, del.stderr);
});
