import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { load } from 'js-yaml';
import type { Root } from 'protobufjs';
import kubePb from '../../src/generated/kube/kube-pb.js';
import { E2E_NAMESPACE, eventually, scratchDir } from '../support/e2e.js';
import { kubeClient, needsKubectl, startKubeAgent, type KubeAgentHandle, type KubeClient } from '../support/kubectl.js';

// kubectl's typed commands (create configmap, create secret) send their objects as protobuf
// (application/vnd.kubernetes.protobuf): the agent's kube API decodes them and answers JSON.
const skip = needsKubectl();
const dirs = scratchDir('kubectl-protobuf');
const root = join(dirs.dir, 'root');
let agent: KubeAgentHandle | undefined;
let kube: KubeClient;

before(async () => {
  if (skip) return;
  agent = await startKubeAgent({ root, logs: join(dirs.dir, 'logs'), timeoutMs: 600_000 });
  kube = kubeClient(root, join(dirs.dir, 'client'));
});

after(async () => {
  await agent?.stop();
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

/** A pod's JSON as the API answers it (kubectl get -o json). */
function podJSON(
  ns: string[],
  name: string,
): {
  metadata: { annotations?: Record<string, string>; labels?: Record<string, string> };
  spec: Record<string, unknown>;
  status?: { phase?: string };
} {
  return JSON.parse(ok(kube.run([...ns, 'get', 'pod', name, '-o', 'json']), `get pod ${name}`)) as ReturnType<typeof podJSON>;
}

test(
  'kubectl debug node/… (a Pod sent as protobuf): the pod runs on this node in its namespaces, with its root at /host, and completes',
  { skip },
  async () => {
    const ns = ['-n', E2E_NAMESPACE];
    const node = ok(kube.run(['get', 'nodes', '-o', 'name']), 'get nodes').trim();
    assert.match(node, /^node\/\S+$/);
    const nodeName = node.slice('node/'.length);
    const r = kube.run([...ns, 'debug', node, '--image=busybox:1.36', '--profile=general', '--', 'true']);
    const name = /Creating debugging pod (\S+) with container debugger on node/.exec(r.stdout)?.[1];
    try {
      assert.equal(r.code, 0, r.stderr);
      assert.ok(name, r.stdout);
      const spec = podJSON(ns, name).spec as {
        nodeName?: string;
        hostPID?: boolean;
        hostNetwork?: boolean;
        hostIPC?: boolean;
        volumes?: { name: string; hostPath?: { path: string } }[];
        containers: { image: string; command?: string[]; volumeMounts?: { mountPath: string }[] }[];
      };
      assert.equal(spec.nodeName, nodeName);
      assert.deepEqual([spec.hostPID, spec.hostNetwork, spec.hostIPC], [true, true, true]);
      assert.equal(spec.volumes?.[0]?.hostPath?.path, '/');
      assert.equal(spec.containers[0]!.image, 'busybox:1.36');
      assert.deepEqual(spec.containers[0]!.command, ['true']);
      assert.equal(spec.containers[0]!.volumeMounts?.[0]?.mountPath, '/host');
      const phase = await eventually(
        'the node debugging pod Succeeded',
        async () => {
          const p = podJSON(ns, name).status?.phase;
          assert.notEqual(p, 'Failed');
          return p === 'Succeeded' ? p : undefined;
        },
        120_000,
      );
      assert.equal(phase, 'Succeeded');
    } finally {
      if (name) ok(kube.run([...ns, 'delete', 'pod', name, '--ignore-not-found', '--wait=true']), 'delete the debugging pod');
    }
  },
);

/** A pod with the fields whose protobuf is least plain: Go pointers set to their zero, embedded structs, Quantities, IntOrStrings. */
const RICH = `apiVersion: v1
kind: Pod
metadata:
  name: rich
  labels: {app: rich}
  annotations: {note: kept}
spec:
  terminationGracePeriodSeconds: 0
  enableServiceLinks: false
  automountServiceAccountToken: false
  shareProcessNamespace: true
  restartPolicy: OnFailure
  dnsPolicy: None
  dnsConfig: {nameservers: [192.0.2.53], searches: [example.test], options: [{name: ndots, value: "2"}, {name: edns0}]}
  hostAliases: [{ip: 192.0.2.10, hostnames: [db.example.test]}]
  hostname: rich-host
  readinessGates: [{conditionType: example.test/ready}]
  securityContext:
    runAsUser: 0
    runAsGroup: 0
    fsGroup: 2000
    supplementalGroups: [3000]
    sysctls: [{name: net.ipv4.ping_group_range, value: "0 2147483647"}]
    seccompProfile: {type: RuntimeDefault}
  initContainers:
  - name: init
    image: busybox:1.36
    command: [sh, -c, "echo init > /scratch/init.txt"]
    resources: {}
    volumeMounts: [{name: work, mountPath: /scratch}]
  containers:
  - name: app
    image: busybox:1.36
    imagePullPolicy: IfNotPresent
    command: [sh, -c]
    args: ["sleep 3600"]
    workingDir: /scratch
    stdin: true
    terminationMessagePolicy: FallbackToLogsOnError
    env:
    - {name: PLAIN, value: v}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: OPT_CM, valueFrom: {configMapKeyRef: {name: missing-cm, key: k, optional: true}}}
    - {name: OPT_SECRET, valueFrom: {secretKeyRef: {name: rich-secret, key: k, optional: false}}}
    envFrom: [{prefix: CM_, configMapRef: {name: missing-cm, optional: true}}]
    ports: [{name: http, containerPort: 8080, protocol: TCP}, {containerPort: 9090, protocol: UDP}]
    resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 500m, memory: 64Mi}}
    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]
    volumeMounts:
    - {name: work, mountPath: /scratch}
    - {name: mem, mountPath: /mem, readOnly: true}
    - {name: info, mountPath: /info}
    - {name: proj, mountPath: /proj}
    livenessProbe: {exec: {command: ["true"]}, initialDelaySeconds: 1, periodSeconds: 30, terminationGracePeriodSeconds: 0}
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 20}
    startupProbe: {httpGet: {path: /healthz, port: http, httpHeaders: [{name: X-A, value: b}]}, failureThreshold: 100}
    lifecycle: {preStop: {sleep: {seconds: 1}}}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: false
      runAsNonRoot: false
      privileged: false
      capabilities: {add: [NET_RAW], drop: [ALL]}
  volumes:
  - {name: work, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 8Mi}}
  - name: info
    downwardAPI:
      defaultMode: 0440
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: cpu, resourceFieldRef: {containerName: app, resource: requests.cpu, divisor: 1m}, mode: 0400}
  - name: proj
    projected:
      defaultMode: 0444
      sources:
      - configMap: {name: missing-cm, optional: true, items: [{key: a, path: a.txt, mode: 0400}]}
      - downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}
`;

test(
  'kubectl debug --copy-to sends the pod back as protobuf: the copy has the spec of the pod it copies, field for field',
  { skip },
  () => {
    const ns = ['-n', E2E_NAMESPACE];
    const manifest = join(dirs.dir, 'rich.yaml');
    writeFileSync(manifest, RICH);
    try {
      ok(kube.run([...ns, 'create', 'secret', 'generic', 'rich-secret', '--from-literal=k=v']), 'create the secret');
      ok(kube.run([...ns, 'apply', '-f', manifest]), 'apply the pod to copy');
      const copy = kube.run([
        ...ns,
        'debug',
        'rich',
        '--copy-to=rich-copy',
        '--set-image=app=busybox:1.36',
        '--keep-labels',
        '--keep-annotations',
        '--keep-liveness',
        '--keep-readiness',
        '--keep-startup',
        '--keep-init-containers',
      ]);
      assert.equal(copy.code, 0, copy.stderr);
      // The copy brings back the defaults the API showed; none of them is a field this node warns of.
      assert.doesNotMatch(copy.stderr, /schedulerName|unknown field/);
      const [original, copied] = [podJSON(ns, 'rich'), podJSON(ns, 'rich-copy')];
      assert.deepEqual(copied.spec, original.spec);
      assert.deepEqual(copied.metadata.labels, { app: 'rich' });
      assert.equal(copied.metadata.annotations?.note, 'kept');
    } finally {
      ok(kube.run([...ns, 'delete', 'pod/rich', 'pod/rich-copy', 'secret/rich-secret', '--ignore-not-found', '--wait=true']), 'delete');
    }
  },
);

/** The kube messages' protobufjs Root (pbjs -t json-module). */
const kubeRoot = kubePb as unknown as Root;
const encode = (type: string, o: Record<string, unknown>) => {
  const t = kubeRoot.lookupType(`kube.${type}`);
  return Buffer.from(t.encode(t.fromObject(o)).finish());
};
/** A body as client-go's protobuf serializer writes one: 'k8s\0', then the runtime.Unknown around the object's message. */
const envelope = (kind: string, object: Record<string, unknown>) =>
  Buffer.concat([Buffer.from('k8s\0', 'latin1'), encode('Unknown', { typeMeta: { apiVersion: 'v1', kind }, raw: encode(kind, object) })]);

/** One request with the kubeconfig's client certificate, as a typed client-go client sends it. */
function send(method: string, path: string, body: Buffer, contentType = 'application/vnd.kubernetes.protobuf') {
  type Cfg = { clusters: { cluster: Record<string, string> }[]; users: { user: Record<string, string> }[] };
  const cfg = load(readFileSync(kube.kubeconfig, 'utf8')) as Cfg;
  const [cluster, user] = [cfg.clusters[0]!.cluster, cfg.users[0]!.user];
  const b64 = (k: string, o: Record<string, string>) => Buffer.from(o[k]!, 'base64');
  const url = new URL(path, cluster.server);
  return new Promise<{ status: number; json: Record<string, unknown> }>((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: b64('certificate-authority-data', cluster),
        cert: b64('client-certificate-data', user),
        key: b64('client-key-data', user),
        headers: {
          'content-type': contentType,
          'content-length': body.length,
          accept: 'application/vnd.kubernetes.protobuf,application/json',
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          assert.match(String(res.headers['content-type']), /^application\/json/);
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as Record<string, unknown> });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

test("a typed client's protobuf update and DeleteOptions are taken; a protobuf patch is a 415", { skip }, async () => {
  const ns = ['-n', E2E_NAMESPACE];
  const path = `/api/v1/namespaces/${E2E_NAMESPACE}/configmaps/typed`;
  try {
    ok(kube.run([...ns, 'create', 'configmap', 'typed', '--from-literal=a=1']), 'create configmap');
    const live = JSON.parse(ok(kube.run([...ns, 'get', 'configmap', 'typed', '-o', 'json']), 'get')) as {
      metadata: { resourceVersion: string; uid: string };
    };
    const meta = { name: 'typed', namespace: E2E_NAMESPACE, resourceVersion: live.metadata.resourceVersion, creationTimestamp: {} };
    const put = await send('PUT', path, envelope('ConfigMap', { metadata: meta, data: { a: '2' } }));
    assert.equal(put.status, 200, JSON.stringify(put.json));
    assert.deepEqual(put.json.data, { a: '2' });
    assert.equal(ok(kube.run([...ns, 'get', 'configmap', 'typed', '-o', 'jsonpath={.data.a}']), 'get after update'), '2');

    const patch = await send('PATCH', path, envelope('ConfigMap', { metadata: { name: 'typed' }, data: { a: '3' } }));
    assert.equal(patch.status, 415);
    assert.equal(patch.json.reason, 'UnsupportedMediaType');

    const bad = await send('PUT', path, Buffer.from('{"kind":"ConfigMap"}'));
    assert.equal(bad.status, 400);
    assert.match(
      String(bad.json.message),
      /^the object provided is unrecognized \(must be of type ConfigMap\): provided data does not appear/,
    );
    assert.equal(ok(kube.run([...ns, 'get', 'configmap', 'typed', '-o', 'jsonpath={.data.a}']), 'get after refusals'), '2');

    const del = await send('DELETE', path, envelope('DeleteOptions', { gracePeriodSeconds: 0, propagationPolicy: 'Background' }));
    assert.equal(del.status, 200, JSON.stringify(del.json));
    assert.equal(ok(kube.run([...ns, 'get', 'configmaps', '-o', 'name']), 'get after delete').trim(), '');
  } finally {
    kube.run([...ns, 'delete', 'configmap/typed', '--ignore-not-found']);
  }
});
