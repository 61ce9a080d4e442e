import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appliedPods, splitApplied } from '../../src/core/node/applied.js';
import {
  ManifestError,
  manifestSetFromTexts,
  manifestSetWithDocuments,
  parseManifestDocuments,
  parseManifestText,
  type ManifestText,
  type ReadManifests,
} from '../../src/core/pod/index.js';

// A set with what a split must get right: objects of the pod's namespace only, its RuntimeClass, a kind
// podctl skips, YAML aliases (dumped in full), YAML 1.1 octal, and a pod given on stdin (which goes first).
const web = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: web}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {other: namespace}
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: web}
stringData: {token: abc}
---
apiVersion: v1
kind: Service
metadata: {name: skipped}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: fast}
handler: crun
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: web, labels: &labels {app: web}, annotations: *labels}
spec:
  runtimeClassName: fast
  containers:
  - name: app
    image: busybox:1.36
    env:
    - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: a}}}
    - {name: T, valueFrom: {secretKeyRef: {name: s, key: token}}}
  volumes:
  - {name: v, configMap: {name: cfg, defaultMode: 0400}}
`;
const db = 'apiVersion: v1\nkind: Pod\nmetadata: {name: db}\nspec:\n  containers:\n  - {name: db, image: busybox:1.36}\n';
const piped =
  '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "piped"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}';

const entries: ManifestText[] = [
  { kind: 'file', path: '/m/web.yaml', display: 'web.yaml', text: web },
  { kind: 'stdin', path: '-', display: '<stdin>', text: piped },
  { kind: 'file', path: '/m/db.yaml', display: 'db.yaml', text: db },
];
const now = () => new Date('2024-01-01T00:00:00Z');

test('appliedPods of the documents a manifest set was read from makes the applied files splitApplied makes of its texts', () => {
  const read: ReadManifests = { entries };
  const { set, documents } = manifestSetWithDocuments(read, { nodeName: 'unit', now });
  assert.deepEqual(set, manifestSetFromTexts(read, { nodeName: 'unit', now }));
  // As the agent orders them: stdin first, then the files.
  const file = (e: ManifestText) => (e.kind === 'file' ? e.path : '<stdin>');
  const order = <T extends { file: string }>(xs: T[]) => [
    ...xs.filter((x) => x.file === '<stdin>'),
    ...xs.filter((x) => x.file !== '<stdin>'),
  ];
  const fromDocs = appliedPods(order(documents.map(({ entry, docs }) => ({ file: file(entry), docs }))));
  const split = splitApplied(order(entries.map((e) => ({ file: file(e), text: e.text }))), 'unit');
  assert.deepEqual(split.problems, []);
  assert.deepEqual(fromDocs, split.pods);
  assert.deepEqual(
    fromDocs.map((p) => `${p.namespace}/${p.name}`),
    ['default/piped', 'web/web', 'default/db'],
  );
  const webFile = fromDocs[1]!.text;
  assert.match(webFile, /^# handed to the podctl agent from \/m\/web\.yaml\n/);
  assert.equal(webFile.split('\n---\n').length, 4, 'the pod, its ConfigMap and Secret, its RuntimeClass');
  assert.doesNotMatch(webFile, /other: namespace|skipped|&|\*labels/);
  assert.match(webFile, /defaultMode: 256/);
});

test('manifestSetWithDocuments refuses a set as manifestSetFromTexts does, with the same problems', () => {
  const bad: ReadManifests = {
    entries: [
      { kind: 'file', path: '/m/a.yaml', display: 'a.yaml', text: db },
      { kind: 'file', path: '/m/b.yaml', display: 'b.yaml', text: `${db}---\nkind: Pod\n` },
      { kind: 'file', path: '/m/c.yaml', display: 'c.yaml', text: 'a: [' },
      { problem: { file: 'gone.yaml', index: -1, field: '', message: 'cannot read: no such file', severity: 'error' } },
    ],
  };
  const refusal = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof ManifestError);
      return { message: err.message, problems: err.problems, warnings: err.warnings };
    }
    return assert.fail('no refusal');
  };
  const own = refusal(() => manifestSetFromTexts(bad, { nodeName: 'unit' }));
  assert.deepEqual(
    refusal(() => manifestSetWithDocuments(bad, { nodeName: 'unit' })),
    own,
  );
  assert.ok(own.problems.length >= 4, JSON.stringify(own.problems));
});

test('parseManifestDocuments: what parseManifestText says, and the documents as loaded, which validation leaves as they were', () => {
  const source = { kind: 'file' as const, path: '/m/web.yaml', display: 'web.yaml' };
  const { parsed, docs } = parseManifestDocuments(web, source, { nodeName: 'unit', now });
  assert.deepEqual(parsed, parseManifestText(web, source, { nodeName: 'unit', now }));
  assert.equal(docs.length, 6);
  const pod = docs[5] as { metadata: { uid?: string; labels: object; annotations: object }; spec: { nodeName?: string } };
  assert.equal(pod.metadata.uid, undefined, 'not defaulted');
  assert.equal(pod.spec.nodeName, undefined);
  assert.equal(pod.metadata.labels, pod.metadata.annotations, 'aliases still shared');
  assert.deepEqual(parseManifestDocuments('a: [', source, { nodeName: 'unit' }).docs, []);
});

test("a pod's applied file carries every ConfigMap and Secret it names, its image pull Secrets included, and none it does not", () => {
  const text = `apiVersion: v1
kind: Secret
metadata: {name: regcred, namespace: lab}
type: kubernetes.io/dockerconfigjson
stringData: {.dockerconfigjson: '{"auths":{}}'}
---
apiVersion: v1
kind: Secret
metadata: {name: unused, namespace: lab}
stringData: {a: b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: proj, namespace: lab}
data: {k: v}
---
apiVersion: v1
kind: Pod
metadata: {name: private, namespace: lab}
spec:
  imagePullSecrets: [{name: regcred}]
  containers:
  - name: app
    image: 127.0.0.1:5000/private/busybox:1
    volumeMounts: [{name: p, mountPath: /p}]
  volumes:
  - name: p
    projected: {sources: [{configMap: {name: proj}}]}
`;
  const { pods, problems } = splitApplied([{ file: 'private.yaml', text }], 'node');
  assert.deepEqual(problems, []);
  assert.equal(pods.length, 1);
  const kinds = pods[0]!.text
    .split('---\n')
    .map((d) => /kind: (\w+)/.exec(d)?.[1] + ' ' + /name: ([\w.-]+)/.exec(d.slice(d.indexOf('metadata')))?.[1]);
  assert.deepEqual(kinds.sort(), ['ConfigMap proj', 'Pod private', 'Secret regcred']);
});

test('a List handed over is split into its pods, each with the objects it names, as documents would be', () => {
  const text = `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}, data: {a: "1"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: one}
  spec:
    containers: [{name: app, image: busybox:1.36, envFrom: [{configMapRef: {name: cfg}}]}]
- apiVersion: v1
  kind: Pod
  metadata: {name: two}
  spec:
    containers: [{name: app, image: busybox:1.36}]
`;
  const { pods, problems } = splitApplied([{ file: 'list.yaml', text }], 'node');
  assert.deepEqual(problems, []);
  assert.deepEqual(
    pods.map((p) => p.name),
    ['one', 'two'],
  );
  const kinds = (t: string) =>
    parseManifestDocuments(t, { kind: 'file', path: '/x.yaml' }, { nodeName: 'n' }).docs.map((d) => (d as { kind: string }).kind);
  assert.deepEqual(kinds(pods[0]!.text), ['Pod', 'ConfigMap']);
  assert.deepEqual(kinds(pods[1]!.text), ['Pod']);
});
