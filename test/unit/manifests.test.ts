import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import {
  defaultPullPolicy,
  hasDerivedUID,
  loadManifests,
  ManifestError,
  parseManifestText,
  staticPodUID,
} from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';

const opts = { nodeName: 'node-a', now: () => new Date('2026-01-01T00:00:00Z') };
const src = { kind: 'file' as const, path: '/m/pod.yaml', display: 'pod.yaml' };

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
`;

function problemsOf(text: string) {
  return parseManifestText(text, src, opts).problems.map((p) => `${p.severity} doc${p.index + 1} ${p.field}: ${p.message}`);
}

test('a valid pod is defaulted as the API server would', () => {
  const { pods, problems } = parseManifestText(POD, src, opts);
  assert.deepEqual(problems, []);
  const pod = pods[0]!.pod;
  assert.equal(pod.metadata!.namespace, 'default');
  assert.equal(pod.spec!.restartPolicy, 'Always');
  assert.equal(pod.spec!.terminationGracePeriodSeconds, 30);
  assert.equal(pod.spec!.dnsPolicy, 'ClusterFirst');
  const c = pod.spec!.containers[0]!;
  assert.equal(c.imagePullPolicy, 'IfNotPresent');
  assert.equal(c.terminationMessagePath, '/dev/termination-log');
  assert.equal(c.terminationMessagePolicy, 'File');
  assert.equal(pod.metadata!.annotations!['kubernetes.io/config.source'], 'file');
  assert.equal(pod.metadata!.annotations!['kubernetes.io/config.seen'], '2026-01-01T00:00:00.000Z');
  assert.match(pod.metadata!.uid!, /^[0-9a-f]{32}$/);
});

test('probe, port and resource defaults', () => {
  const text = `${POD}    ports: [{containerPort: 80}]
    resources: {limits: {cpu: "1"}}
    livenessProbe: {httpGet: {port: 80}}
`;
  const c = parseManifestText(text, src, opts).pods[0]!.pod.spec!.containers[0]!;
  assert.equal(c.ports![0]!.protocol, 'TCP');
  assert.deepEqual(c.resources!.requests, { cpu: '1' });
  assert.deepEqual(
    { ...c.livenessProbe, httpGet: undefined },
    { timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3, httpGet: undefined },
  );
  assert.equal(c.livenessProbe!.httpGet!.path, '/');
  assert.equal(c.livenessProbe!.httpGet!.scheme, 'HTTP');
});

test('imagePullPolicy from the tag', () => {
  const table: [string, string][] = [
    ['busybox', 'Always'],
    ['busybox:latest', 'Always'],
    ['busybox:1.36', 'IfNotPresent'],
    [`busybox@sha256:${'a'.repeat(64)}`, 'IfNotPresent'],
    ['localhost:5000/busybox', 'Always'],
    ['localhost:5000/busybox:1.0', 'IfNotPresent'],
  ];
  for (const [image, want] of table) assert.equal(defaultPullPolicy(image), want, image);
});

test('the UID is stable across re-reads, edits and files, and differs by name; an explicit metadata.uid is kept', () => {
  const a = parseManifestText(POD, src, opts).pods[0]!.pod.metadata!.uid;
  const again = parseManifestText(POD, src, { ...opts, now: () => new Date() }).pods[0]!.pod.metadata!.uid;
  const edited = parseManifestText(POD.replace('"3600"', '"7200"'), src, opts).pods[0]!.pod.metadata!.uid;
  const otherPath = parseManifestText(POD, { ...src, path: '/m/other.yaml' }, opts).pods[0]!.pod.metadata!.uid;
  const otherName = parseManifestText(POD.replace('name: web', 'name: web2'), src, opts).pods[0]!.pod.metadata!.uid;
  assert.equal(a, again);
  assert.equal(a, edited);
  // The namespace/name is the pod's identity on the node: another file is the same pod.
  assert.equal(a, otherPath);
  assert.notEqual(a, otherName);
  assert.equal(a, staticPodUID('node-a', 'default', 'web'));
  const explicit = parseManifestText(POD.replace('name: web', 'name: web\n  uid: 3f2b9c1e-7d4a-4b8e-9f0a-12c34d56e78f'), src, opts).pods[0]!
    .pod;
  assert.equal(explicit.metadata!.uid, '3f2b9c1e-7d4a-4b8e-9f0a-12c34d56e78f');
  assert.equal(hasDerivedUID(explicit, 'node-a'), false);
  assert.equal(hasDerivedUID(parseManifestText(POD, src, opts).pods[0]!.pod, 'node-a'), true);
  // The content hash does change with an edit.
  const hash = (t: string) => parseManifestText(t, src, opts).pods[0]!.pod.metadata!.annotations!['kubernetes.io/config.hash'];
  assert.notEqual(hash(POD), hash(POD.replace('"3600"', '"7200"')));
});

test('each error names the document, the field and what was expected', () => {
  const cases: [string, string][] = [
    ['apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n', 'error doc1 spec.containers: required field is missing'],
    [POD.replace('name: app', 'name: App_1'), 'error doc1 spec.containers[0].name: "App_1" is invalid; expected a DNS-1123 label'],
    [POD.replace('name: web', 'name: Web'), 'error doc1 metadata.name: "Web" is invalid; expected a DNS-1123 subdomain'],
    [
      POD.replace('spec:', 'spec:\n  restartPolicy: Sometimes'),
      'error doc1 spec.restartPolicy: expected one of "Always", "Never", "OnFailure"',
    ],
    [
      `${POD}    ports: [{containerPort: 70000}]\n`,
      'error doc1 spec.containers[0].ports[0].containerPort: 70000 is out of range; expected 1-65535',
    ],
    [`${POD}    ports: [{containerPort: "http"}]\n`, 'error doc1 spec.containers[0].ports[0].containerPort: expected an integer'],
    [
      POD.replace('image: busybox:1.36', 'image: "Busy Box"'),
      'error doc1 spec.containers[0].image: "Busy Box" is not a valid image reference',
    ],
    [
      POD.replace('metadata:\n', 'metadata:\n  restartPolicy: Never\n'),
      'error doc1 metadata.restartPolicy: unknown field; restartPolicy belongs in spec',
    ],
    [POD.replace('    command', '    comand'), 'error doc1 spec.containers[0].comand: unknown field; did you mean command?'],
    [`${POD}    imagePullPolcy: Always\n`, 'error doc1 spec.containers[0].imagePullPolcy: unknown field; did you mean imagePullPolicy?'],
    [`${POD}    resources: {limit: {cpu: 1}}\n`, 'error doc1 spec.containers[0].resources.limit: unknown field; did you mean limits?'],
    [
      `${POD}  - name: app\n    image: busybox\n`,
      'error doc1 spec.containers[1].name: duplicate container name "app" (also spec.containers[0])',
    ],
    [
      `${POD}    volumeMounts: [{name: data, mountPath: /data}]\n`,
      'error doc1 spec.containers[0].volumeMounts[0].name: volume "data" is not defined in spec.volumes',
    ],
    ['kind: Pod\nmetadata: {name: x}\n', 'error doc1 apiVersion: required; expected v1 for Pod'],
    [
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n',
      "warning doc1 kind: Deployment is not supported by podctl (only Pod, ConfigMap, Secret and RuntimeClass); skipped; a controller makes its pods: to run one here, write a Pod of spec.template's metadata and spec",
    ],
    [
      'apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\n',
      "warning doc1 kind: CronJob is not supported by podctl (only Pod, ConfigMap, Secret and RuntimeClass); skipped; a controller makes its pods: to run one here, write a Pod of spec.jobTemplate.spec.template's metadata and spec",
    ],
    ['apiVersion: v2\nkind: Pod\nmetadata: {name: x}\n', 'error doc1 apiVersion: "v2" is not supported for Pod; expected v1'],
    ['- a\n- b\n', 'error doc1 : expected a Kubernetes object (a mapping with apiVersion and kind), got a list'],
    [
      `---\n${POD}---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: "not base64!"}\n`,
      'error doc2 data.k: expected a base64-encoded value (use stringData for plain text)',
    ],
  ];
  for (const [text, want] of cases) {
    const got = problemsOf(text);
    assert.ok(
      got.some((g) => g.startsWith(want)),
      `want ${want}\n got ${got.join('\n     ')}`,
    );
  }
  // Nothing one edit away, or two fields as near (hort: host or port): no guess.
  for (const [text, want] of [
    [`${POD}    bogus: 1\n`, 'error doc1 spec.containers[0].bogus: unknown field'],
    [
      `${POD}    livenessProbe: {httpGet: {port: 80, hort: x}}\n`,
      'error doc1 spec.containers[0].livenessProbe.httpGet.hort: unknown field',
    ],
  ]) {
    const got = problemsOf(text!);
    assert.ok(got.includes(want!), `want exactly ${want}\n got ${got.join('\n     ')}`);
  }
  // A kind that makes no pods gets no hint about templates.
  assert.deepEqual(problemsOf('apiVersion: v1\nkind: Service\nmetadata: {name: s}\n'), [
    'warning doc1 kind: Service is not supported by podctl (only Pod, ConfigMap, Secret and RuntimeClass); skipped',
  ]);
});

test('bad YAML names the document, line and column', () => {
  const got = problemsOf('apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: indent\n');
  assert.equal(got.length, 1);
  assert.match(got[0]!, /^error doc1 : invalid YAML at line 5, column 7/);
  const third = problemsOf(`---\n${POD}---\n${POD}---\nkind: [\n`);
  assert.match(third[0]!, /^error doc3 : invalid YAML at line \d+/);
});

test('multi-document files keep ConfigMaps and Secrets (stringData merged) and skip empty documents', () => {
  const text = `---\n${POD}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pw: hunter2}\n---\n`;
  const r = parseManifestText(text, src, opts);
  assert.deepEqual(r.problems, []);
  assert.equal(r.pods.length, 1);
  assert.equal(r.pods[0]!.source.index, 0);
  assert.equal(r.configMaps[0]!.data!.a, 'b');
  assert.equal(r.secrets[0]!.data!.pw, Buffer.from('hunter2').toString('base64'));
  assert.equal(r.secrets[0]!.stringData, undefined);
});

test('loadManifests: directory rules, stdin, duplicates across files, all-or-nothing', async () => {
  const tmp = scratchDir('manifests');
  try {
    const d = join(tmp.dir, 'dir');
    mkdirSync(d);
    writeFileSync(join(d, 'a.yaml'), POD);
    writeFileSync(
      join(d, 'b.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'json' },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      }),
    );
    writeFileSync(join(d, '.hidden.yaml'), 'garbage: [');
    writeFileSync(join(d, 'a.yaml.swp'), 'garbage: [');
    writeFileSync(join(d, 'a.yaml~'), 'garbage: [');
    writeFileSync(join(d, 'notes.txt'), 'garbage: [');
    symlinkSync(join(d, 'a.yaml'), join(tmp.dir, 'link.yaml'));
    const set = await loadManifests([d], opts);
    assert.deepEqual(
      set.pods.map((p) => p.pod.metadata!.name),
      ['web', 'json'],
    );

    const viaLink = await loadManifests([join(tmp.dir, 'link.yaml')], opts);
    assert.equal(viaLink.pods[0]!.pod.metadata!.name, 'web');

    const fromStdin = await loadManifests(['-'], { ...opts, readStdin: async () => POD.replace('web', 'piped') });
    assert.equal(fromStdin.pods[0]!.pod.metadata!.name, 'piped');
    assert.equal(fromStdin.pods[0]!.source.kind, 'stdin');

    // The same pod name in two files is an error naming both.
    writeFileSync(join(tmp.dir, 'again.yaml'), POD);
    await assert.rejects(loadManifests([d, join(tmp.dir, 'again.yaml')], opts), (err: ManifestError) => {
      assert.ok(err instanceof ManifestError);
      assert.match(err.message, /pod default\/web is defined twice/);
      return true;
    });

    // One bad file spoils the whole set: no pod is returned.
    writeFileSync(join(tmp.dir, 'bad.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {}\n');
    await assert.rejects(loadManifests([d, join(tmp.dir, 'bad.yaml')], opts), ManifestError);

    await assert.rejects(loadManifests([join(tmp.dir, 'missing.yaml')], opts), /missing\.yaml: cannot read: no such file or directory/);
    const empty = join(tmp.dir, 'empty');
    mkdirSync(empty);
    await assert.rejects(loadManifests([empty], opts), /the directory has no manifest files/);
  } finally {
    tmp.cleanup();
  }
});

test('list entries of the wrong type are reported, not a crash', () => {
  for (const field of ['ports', 'volumeMounts', 'env']) {
    const got = problemsOf(`${POD}    ${field}: [null, 3, "x"]\n`);
    assert.ok(
      got.some((g) => g.includes(`spec.containers[0].${field}[0]`)),
      got.join('\n'),
    );
  }
  assert.ok(problemsOf(POD.replace('containers:', 'volumes: [null]\n  containers:')).some((g) => g.includes('spec.volumes[0]')));
});

test('property: arbitrary documents never throw and never yield a pod alongside an error', () => {
  const valid = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };
  const mutated = fc.record({
    path: fc.constantFrom(['metadata'], ['spec'], ['spec', 'containers'], ['spec', 'containers', '0'], ['metadata', 'name'], []),
    key: fc.oneof(
      fc.constantFrom('name', 'image', 'restartPolicy', 'ports', 'containers', 'kind', 'apiVersion'),
      fc.string({ maxLength: 8 }),
    ),
    value: fc.anything({ maxDepth: 3 }),
  });
  fc.assert(
    fc.property(fc.oneof(fc.anything({ maxDepth: 4 }), mutated), (input) => {
      let doc: unknown = input;
      if (input && typeof input === 'object' && 'path' in input && 'key' in input && 'value' in input) {
        const m = input as { path: string[]; key: string; value: unknown };
        doc = structuredClone(valid);
        let node = doc as Record<string, unknown>;
        for (const p of m.path) {
          const next = node[p];
          if (!next || typeof next !== 'object') break;
          node = next as Record<string, unknown>;
        }
        try {
          node[m.key] = m.value;
        } catch {
          // A mutation JavaScript itself refuses (an array's length set to an object): not an input to test.
          return;
        }
      }
      let text: string;
      try {
        text = JSON.stringify(doc) ?? 'null';
      } catch {
        return;
      }
      const r = parseManifestText(text, src, opts);
      if (r.problems.some((p) => p.severity === 'error')) {
        assert.equal(r.pods.length, 0);
        for (const p of r.problems) assert.ok(p.message.length > 0);
      }
    }),
    { numRuns: 1000 },
  );
});

test('probes and lifecycle hooks: one handler each, valid thresholds and ports, none on plain init containers', () => {
  const text = `apiVersion: v1
kind: Pod
metadata: {name: probes}
spec:
  initContainers:
  - name: setup
    image: busybox:1.36
    readinessProbe: {exec: {command: ["true"]}}
  - name: side
    image: busybox:1.36
    restartPolicy: Always
    readinessProbe: {tcpSocket: {port: 8080}}
    lifecycle: {preStop: {sleep: {seconds: 2}}}
  containers:
  - name: app
    image: busybox:1.36
    ports: [{name: web, containerPort: 8080}]
    livenessProbe: {exec: {command: ["true"]}, httpGet: {port: web}, successThreshold: 2}
    readinessProbe: {httpGet: {port: http}, periodSeconds: 0}
    startupProbe: {tcpSocket: {port: 70000}}
    lifecycle: {postStart: {tcpSocket: {port: web}}, preStop: {}}
`;
  assert.deepEqual(problemsOf(text), [
    'error doc1 spec.initContainers[0].readinessProbe: init containers may not have probes; only sidecars (restartPolicy: Always) ' +
      'and app containers may',
    'error doc1 spec.containers[0].livenessProbe: expected exactly one of exec, httpGet, tcpSocket, grpc; got exec and httpGet',
    'error doc1 spec.containers[0].livenessProbe.successThreshold: 2 is invalid; must be 1 for liveness and startup probes',
    'error doc1 spec.containers[0].readinessProbe.httpGet.port: "http" is neither a number nor the name of one of this container\'s ports',
    'error doc1 spec.containers[0].readinessProbe.periodSeconds: 0 is invalid; expected 1 or more',
    'error doc1 spec.containers[0].startupProbe.tcpSocket.port: 70000 is out of range; expected 1-65535',
    'error doc1 spec.containers[0].lifecycle.postStart.tcpSocket: TCPSocket lifecycle hooks are deprecated and never run; use ' +
      'exec, httpGet or sleep',
    'error doc1 spec.containers[0].lifecycle.preStop: expected exactly one of exec, httpGet, sleep, tcpSocket',
  ]);
});

test('fields one host cannot honour: a warning where the pod still runs as meant, an error where it would not', () => {
  const text = `apiVersion: v1
kind: Pod
metadata: {name: sched}
spec:
  nodeSelector: {disk: ssd}
  affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: zone}}]}}
  tolerations: [{key: dedicated, operator: Exists}]
  priorityClassName: high
  dnsPolicy: ClusterFirst
  serviceAccountName: builder
  containers:
  - name: app
    image: busybox:1.36
    resources: {limits: {example.com/fpga: 1, memory: 64Mi}}
    securityContext: {procMount: Unmasked}
    volumeMounts: [{name: data, mountPath: /data, mountPropagation: Bidirectional}]
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data}}
  - {name: nfs, nfs: {server: 192.0.2.1, path: /x}}
  - {name: scratch, ephemeral: {volumeClaimTemplate: {spec: {}}}}
  - name: token
    projected: {sources: [{serviceAccountToken: {path: token}}]}
`;
  assert.deepEqual(problemsOf(text), [
    'warning doc1 spec.tolerations: ignored: this node has no taints',
    'warning doc1 spec.priorityClassName: ignored: there is no preemption and no PriorityClass',
    'error doc1 spec.volumes[0].persistentVolumeClaim: not supported on a single host (no PersistentVolume controller); use ' +
      'hostPath or emptyDir',
    'error doc1 spec.volumes[1].nfs: nfs volumes are not supported on a single host; supported: emptyDir, hostPath, configMap, ' +
      'secret, downwardAPI, projected',
    'error doc1 spec.volumes[2].ephemeral: not supported on a single host (no PersistentVolume provisioner); use emptyDir',
    'error doc1 spec.volumes[3].projected.sources[0].serviceAccountToken: no API server issues service account tokens here',
    'warning doc1 spec.serviceAccountName: no service account token is mounted: there is no API server to issue one',
    'warning doc1 spec.affinity.podAffinity: ignored: there is no scheduler and one node; only required node affinity is matched',
    'warning doc1 spec.dnsPolicy: there is no cluster DNS on one host: resolves as Default (the host resolv.conf)',
    'error doc1 spec.containers[0].resources.limits["example.com/fpga"]: extended resource example.com/fpga: no device plugin serves it on this host; supported: cpu, memory, ephemeral-storage, hugepages-*',
    'error doc1 spec.containers[0].securityContext.procMount: needs a user namespace (hostUsers: false), which podctl does not support',
    'error doc1 spec.containers[0].volumeMounts[0].mountPropagation: Bidirectional mount propagation needs a privileged container',
  ]);
});

test('schedulerName: default-scheduler, the default the kube API shows, is no warning; another scheduler is', () => {
  const pod = (scheduler: string) => `apiVersion: v1
kind: Pod
metadata: {name: sched}
spec:
  schedulerName: ${scheduler}
  containers: [{name: app, image: busybox:1.36}]
`;
  assert.deepEqual(problemsOf(pod('default-scheduler')), []);
  assert.deepEqual(problemsOf(pod('volcano')), ['warning doc1 spec.schedulerName: ignored: there is no scheduler']);
});

test('integers are read as Kubernetes reads manifests (YAML 1.1): a leading 0 is octal, so defaultMode 0400 is 256', () => {
  const text = `apiVersion: v1
kind: Pod
metadata: {name: modes}
spec:
  containers:
  - {name: app, image: busybox:1.36, volumeMounts: [{name: s, mountPath: /s}], ports: [{containerPort: 8080}]}
  volumes:
  - name: s
    secret: {secretName: x, defaultMode: 0400, items: [{key: k, path: k, mode: 0644}]}
`;
  const { pods, problems } = parseManifestText(text, src, opts);
  assert.deepEqual(problems, []);
  const secret = pods[0]!.pod.spec!.volumes![0]!.secret!;
  assert.equal(secret.defaultMode, 0o400);
  assert.equal(secret.items![0]!.mode, 0o644);
  assert.equal(pods[0]!.pod.spec!.containers[0]!.ports![0]!.containerPort, 8080, 'decimals stay decimal');
});

test(
  'booleans are read as Kubernetes reads manifests (YAML 1.1): readOnly: yes is true, and an unquoted no where a string ' +
    'belongs is an error that says to quote it',
  () => {
    const text = (value: string) => `apiVersion: v1
kind: Pod
metadata: {name: norway}
spec:
  containers:
  - name: app
    image: busybox:1.36
    env: [{name: COUNTRY, value: ${value}}]
    volumeMounts: [{name: d, mountPath: /d, readOnly: yes}, {name: d, mountPath: /e, readOnly: Off}]
  volumes: [{name: d, emptyDir: {}}]
`;
    const quoted = parseManifestText(text('"no"'), src, opts);
    assert.deepEqual(quoted.problems, []);
    const c = quoted.pods[0]!.pod.spec!.containers[0]!;
    assert.equal(c.env![0]!.value, 'no');
    assert.deepEqual(
      c.volumeMounts!.map((m) => m.readOnly),
      [true, false],
    );
    assert.deepEqual(problemsOf(text('no')), [
      'error doc1 spec.containers[0].env[0].value: expected a string, got the boolean false (YAML reads unquoted yes, no, on, off, ' +
        'true and false as booleans: quote the value)',
    ]);
    assert.deepEqual(problemsOf(text('8080')), [
      'error doc1 spec.containers[0].env[0].value: expected a string, got the number 8080 (quote the value to keep it a string)',
    ]);
    assert.equal(
      parseManifestText(text('yesterday'), src, opts).pods[0]!.pod.spec!.containers[0]!.env![0]!.value,
      'yesterday',
      'only whole words are booleans',
    );
  },
);

test('a Pod without a spec is an error naming spec, not a crash (found by the fuzz test)', () => {
  assert.deepEqual(problemsOf('apiVersion: v1\nkind: Pod\nmetadata: {name: nospec}\n'), [
    'error doc1 spec: required; expected the pod spec with at least one container',
  ]);
  assert.deepEqual(parseManifestText('apiVersion: v1\nkind: Pod\nmetadata: {name: nospec}\nspec: null\n', src, opts).pods, []);
});

test('a v1 List (kubectl get -o yaml) and a PodList (podctl get pods -o yaml, the kubelet file source) are read as their items', () => {
  const list = `apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cfg}
  data: {a: "1"}
- ${POD.replace(/\n/g, '\n  ').trimEnd()}
`;
  const parsed = parseManifestText(list, src, opts);
  assert.deepEqual(parsed.problems, []);
  assert.deepEqual(
    parsed.pods.map((p) => p.pod.metadata!.name),
    ['web'],
  );
  assert.deepEqual(
    parsed.configMaps.map((c) => c.metadata!.name),
    ['cfg'],
  );
  // A typed list's items may leave out kind and apiVersion; a problem names the document, the pod and the item's field.
  const podList = `apiVersion: v1
kind: PodList
items:
- metadata: {name: one}
  spec: {containers: [{name: app, image: busybox:1.36}]}
- metadata: {name: two}
  spec: {containers: [{name: app, image: busybox:1.36, tty: "yes"}]}
`;
  assert.deepEqual(problemsOf(podList), ['error doc1 items[1].spec.containers[0].tty: expected a boolean, got "yes"']);
  assert.deepEqual(
    parseManifestText(podList.replace('"yes"', 'true'), src, opts).pods.map((p) => p.pod.metadata!.name),
    ['one', 'two'],
  );
  assert.deepEqual(problemsOf('apiVersion: v1\nkind: List\nitems: {a: b}\n'), [
    'error doc1 items: expected a list of objects, got a mapping',
  ]);
});

test('a supported kind written in another case is an error that names it, not a skipped document', () => {
  assert.deepEqual(problemsOf(POD.replace('kind: Pod', 'kind: pod')), [
    'error doc1 kind: "pod" is not a kind; did you mean Pod? (kinds are case-sensitive)',
  ]);
});
