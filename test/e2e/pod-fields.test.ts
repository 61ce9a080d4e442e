import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-fields');
const root = scratchDir('e2e-fields-root');
const common = ['--root-dir', root.dir, '--log-root', join(root.dir, 'logs')];

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
  root.cleanup();
});

test('sync-once of a pod whose ConfigMap no document provides exits 1 within 5 s, naming it in the kubelet\'s words', () => {
  const file = join(dir.dir, 'nocm.yaml');
  writeFileSync(file, `apiVersion: v1
kind: Pod
metadata: {name: nocm, namespace: ${E2E_NAMESPACE}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    env: [{name: SETTING, valueFrom: {configMapKeyRef: {name: settings, key: level}}}]
`);
  const v = podctl(['validate', file]);
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stdout, /warning: .*nocm\.yaml: document 1 \(Pod "nocm"\): spec\.containers\[0\]\.env\[0\]\.valueFrom\.configMapKeyRef: configmap "settings" not found/);

  const started = Date.now();
  const r = podctl(['sync-once', file, ...common]);
  const elapsed = Date.now() - started;
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /CreateContainerConfigError .*FAILED: can never start: configmap "settings" not found/);
  assert.ok(elapsed < 5000, `sync-once took ${elapsed} ms`);
});
