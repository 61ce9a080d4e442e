import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { E2E_NAMESPACE, scratchDir, startPodctl, type RunningPodctl } from '../support/e2e.js';
import { kubeClient, needsKubectl, type KubeClient } from '../support/kubectl.js';

// kubectl's typed commands (create configmap, create secret) send their objects as protobuf
// (application/vnd.kubernetes.protobuf): the agent's kube API decodes them and answers JSON.
const skip = needsKubectl();
const dirs = scratchDir('kubectl-protobuf');
const root = join(dirs.dir, 'root');
let agent: RunningPodctl | undefined;
let kube: KubeClient;

before(async () => {
  if (skip) return;
  agent = startPodctl(['agent', '--root-dir', root, '--log-root', join(dirs.dir, 'logs'), '--kube-api-port', '0'], {
    timeoutMs: 600_000,
  });
  await agent.waitFor(/Kubernetes API on https:\/\/\S+/, 60_000);
  kube = kubeClient(root, join(dirs.dir, 'client'));
});

after(async () => {
  if (agent) {
    agent.interrupt();
    await agent.done;
  }
  dirs.cleanup();
});

const ok = (r: { code: number; stdout: string; stderr: string }, what: string) => {
  assert.equal(r.code, 0, `${what}: ${r.stderr}`);
  return r.stdout;
};

test('kubectl create configmap and secret generic (protobuf bodies) are stored and read back as JSON', { skip }, () => {
  const ns = ['-n', E2E_NAMESPACE];
  try {
    assert.equal(
      ok(kube.run([...ns, 'create', 'configmap', 'greeting', '--from-literal=G=hi']), 'create configmap').trim(),
      'configmap/greeting created',
    );
    assert.equal(
      ok(kube.run([...ns, 'create', 'secret', 'generic', 'tok', '--from-literal=T=s']), 'create secret').trim(),
      'secret/tok created',
    );

    const names = ok(kube.run([...ns, 'get', 'configmaps,secrets', '-o', 'name']), 'get configmaps,secrets')
      .trim()
      .split('\n');
    assert.deepEqual(names.sort(), ['configmap/greeting', 'secret/tok']);
    const table = ok(kube.run([...ns, 'get', 'configmaps,secrets']), 'get configmaps,secrets');
    assert.match(table, /^configmap\/greeting\s+1\s+/m);
    assert.match(table, /^secret\/tok\s+Opaque\s+1\s+/m);

    const yaml = ok(kube.run([...ns, 'get', 'configmap', 'greeting', '-o', 'yaml']), 'get configmap -o yaml');
    assert.match(yaml, /^data:\n {2}G: hi\n/m);
    assert.match(yaml, /^kind: ConfigMap$/m);
    const json = JSON.parse(ok(kube.run([...ns, 'get', 'configmap', 'greeting', '-o', 'json']), 'get configmap -o json')) as {
      data?: Record<string, string>;
      metadata?: { name?: string; namespace?: string; uid?: string; creationTimestamp?: string };
    };
    assert.deepEqual(json.data, { G: 'hi' });
    assert.equal(json.metadata?.namespace, E2E_NAMESPACE);
    assert.ok(json.metadata?.uid, 'the stored ConfigMap has a uid');
    assert.match(json.metadata?.creationTimestamp ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const secretT = ok(kube.run([...ns, 'get', 'secret', 'tok', '-o', 'jsonpath={.data.T}']), 'get secret -o jsonpath');
    assert.equal(secretT, Buffer.from('s').toString('base64'));
    assert.equal(ok(kube.run([...ns, 'get', 'secret', 'tok', '-o', 'jsonpath={.type}']), 'get secret type'), 'Opaque');

    // The API server's answer to a second create, through the same protobuf path.
    const again = kube.run([...ns, 'create', 'configmap', 'greeting', '--from-literal=G=other']);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /configmaps "greeting" already exists/);
  } finally {
    const del = kube.run([...ns, 'delete', 'configmap/greeting', 'secret/tok', '--ignore-not-found']);
    assert.equal(del.code, 0, del.stderr);
  }
  assert.equal(ok(kube.run([...ns, 'get', 'configmaps,secrets', '-o', 'name']), 'get after delete').trim(), '');
});

test('bytes that are not UTF-8: create configmap --from-file keeps them in binaryData, create secret --from-file in data', { skip }, () => {
  const ns = ['-n', E2E_NAMESPACE];
  const bytes = Buffer.from([0, 1, 0x7f, 0x80, 0xfe, 0xff, 0xc3, 0x28]);
  const file = join(dirs.dir, 'blob.bin');
  writeFileSync(file, bytes);
  writeFileSync(join(dirs.dir, 'note.txt'), 'text\n');
  try {
    ok(
      kube.run([...ns, 'create', 'configmap', 'blobs', `--from-file=${file}`, `--from-file=${join(dirs.dir, 'note.txt')}`]),
      'create configmap',
    );
    ok(kube.run([...ns, 'create', 'secret', 'generic', 'blob', `--from-file=${file}`]), 'create secret');
    const cm = JSON.parse(ok(kube.run([...ns, 'get', 'configmap', 'blobs', '-o', 'json']), 'get configmap')) as {
      data?: Record<string, string>;
      binaryData?: Record<string, string>;
    };
    assert.deepEqual(cm.data, { 'note.txt': 'text\n' });
    assert.deepEqual(cm.binaryData, { 'blob.bin': bytes.toString('base64') });
    const secret = ok(kube.run([...ns, 'get', 'secret', 'blob', '-o', 'jsonpath={.data.blob\\.bin}']), 'get secret');
    assert.equal(secret, bytes.toString('base64'));
  } finally {
    const del = kube.run([...ns, 'delete', 'configmap/blobs', 'secret/blob', '--ignore-not-found']);
    assert.equal(del.code, 0, del.stderr);
  }
});

test('a Pod in protobuf (kubectl debug node/…) is refused with a 415 that says why, and makes no pod', { skip }, () => {
  const ns = ['-n', E2E_NAMESPACE];
  const node = ok(kube.run(['get', 'nodes', '-o', 'name']), 'get nodes').trim();
  assert.match(node, /^node\/\S+$/);
  const r = kube.run([...ns, 'debug', node, '--image=busybox', '--profile=general', '--', 'true']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /UnsupportedMediaType/);
  assert.match(r.stderr, /this body is a Pod/);
  assert.equal(ok(kube.run([...ns, 'get', 'pods', '-o', 'name']), 'get pods').trim(), '');
});
