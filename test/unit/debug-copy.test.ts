import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IPodSpec } from 'kubernetes-models/v1';
import { carriedObjects } from '../../src/cli/debug.js';

test("debug --copy-to's objects: what the pod names from its applied file, of its namespace only, and the names the file lacks", async () => {
  const root = mkdtempSync(join(tmpdir(), 'podctl-copy-objects-'));
  try {
    mkdirSync(join(root, 'applied'));
    writeFileSync(
      join(root, 'applied', 'lab_web.yaml'),
      [
        'apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: lab}\nspec: {containers: [{name: app, image: busybox}]}\n',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: lab}\ndata: {a: "1"}\n',
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: other}\ndata: {a: "2"}\n',
        'apiVersion: v1\nkind: Secret\nmetadata: {name: unused, namespace: lab}\nstringData: {b: c}\n',
        'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: fast}\nhandler: crun\n',
      ].join('---\n'),
    );
    const spec: IPodSpec = {
      runtimeClassName: 'fast',
      imagePullSecrets: [{ name: 'regcred' }],
      containers: [{ name: 'app', image: 'busybox', envFrom: [{ configMapRef: { name: 'cfg' } }] }],
    };
    const carried = await carriedObjects(spec, 'lab', 'web', root);
    assert.equal(carried.from, join(root, 'applied', 'lab_web.yaml'));
    assert.deepEqual(
      carried.docs.map((d) => `${d.kind} ${d.metadata?.namespace ?? '-'}/${d.metadata?.name}`),
      ['ConfigMap lab/cfg', 'RuntimeClass -/fast'],
    );
    assert.deepEqual(carried.missing, ['Secret regcred']);
    // A pod that names nothing takes nothing, and reads no file.
    assert.deepEqual(await carriedObjects({ containers: [{ name: 'app', image: 'busybox' }] }, 'lab', 'web', root), {
      docs: [],
      missing: [],
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
