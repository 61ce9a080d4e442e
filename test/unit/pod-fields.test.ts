import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadManifests, parseManifestText } from '../../src/core/pod/index.js';
import { FileSource } from '../../src/core/config/file-source.js';
import { FakeClock } from '../../src/core/clock.js';
import type { SourceObjects } from '../../src/core/objects.js';
import { scratchDir } from '../support/e2e.js';
import { POD_FIELDS, podFieldPaths, unaccountedFields, unsupportedFieldsMarkdown, type FieldFate } from '../../src/core/pod/fields.js';

const opts = { nodeName: 'node-a', now: () => new Date('2026-01-01T00:00:00Z') };
const src = { kind: 'file' as const, path: '/m/pod.yaml', display: 'pod.yaml' };

test('the field table accounts for every field path of the generated v1 Pod tree', () => {
  const paths = podFieldPaths();
  assert.ok(paths.length > 300, `the generated tree has ${paths.length} paths`);
  assert.ok(paths.includes('spec.containers.lifecycle.stopSignal'));
  assert.deepEqual(unaccountedFields(), []);
});

test('removing any one entry from the table leaves its field unaccounted for', () => {
  for (const key of [
    'spec.containers.lifecycle.stopSignal',
    'spec.containers.image',
    'spec.volumes.emptyDir.sizeLimit',
    'spec.activeDeadlineSeconds',
  ]) {
    const without: Record<string, FieldFate> = { ...POD_FIELDS };
    delete without[key];
    assert.ok(unaccountedFields(without).includes(key), `${key} reported missing`);
  }
});

test("the README's table of fields one host cannot honour is the table's own rendering", () => {
  const readme = readFileSync(join(import.meta.dirname, '../../../README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Fields one host cannot honour'));
  const table = section.slice(section.indexOf('| field |'), section.indexOf('\n\n', section.indexOf('| field |')));
  assert.equal(table, unsupportedFieldsMarkdown(), 'regenerate the README table from unsupportedFieldsMarkdown()');
});

test('validate prints a finding, naming the field path, for each field of the issue that is not honoured', () => {
  const text = `apiVersion: v1
kind: Pod
metadata: {name: every}
spec:
  nodeName: elsewhere
  activeDeadlineSeconds: 30
  readinessGates: [{conditionType: example.com/ready}]
  imagePullSecrets: [{name: regcred}]
  resources: {limits: {cpu: "1"}}
  schedulingGates: [{name: wait}]
  securityContext:
    appArmorProfile: {type: RuntimeDefault}
    seLinuxOptions: {level: "s0:c1"}
  containers:
  - name: app
    image: busybox:1.36
    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]
    lifecycle: {stopSignal: SIGUSR1}
    resources: {limits: {ephemeral-storage: 1Gi}}
    securityContext:
      appArmorProfile: {type: Localhost, localhostProfile: mine}
      seLinuxOptions: {type: spc_t}
  volumes:
  - {name: scratch, emptyDir: {sizeLimit: 10Mi}}
  - {name: ram, emptyDir: {medium: Memory, sizeLimit: 10Mi}}
`;
  // SELinux options and AppArmor profiles go to the runtime; a host that cannot apply them refuses the pod at admission, not here.
  const parsed = parseManifestText(text, src, opts);
  const found = parsed.problems.map((p) => `${p.severity} ${p.file} doc${p.index + 1} ${p.field}`);
  assert.deepEqual(found.sort(), [
    'warning pod.yaml doc1 spec.containers[0].lifecycle.stopSignal',
    'warning pod.yaml doc1 spec.nodeName',
    'warning pod.yaml doc1 spec.resources',
    'warning pod.yaml doc1 spec.schedulingGates',
  ]);
  // The Memory emptyDir's sizeLimit is its tmpfs size.
  assert.equal(parsed.pods.length, 1);
  assert.equal(parsed.pods[0]!.pod.spec!.nodeName, 'node-a', "the host's node name is used");
  assert.match(
    parsed.problems.find((p) => p.field === 'spec.nodeName')!.message,
    /"elsewhere" is not this host: this host's node name is used \("node-a"\)/,
  );
});

test(
  'nodeSelector and required node affinity are honoured by admission without a warning; preferred terms and pod ' +
    '(anti-)affinity are warned, each at its path',
  () => {
    const text = `apiVersion: v1
kind: Pod
metadata: {name: placed}
spec:
  nodeSelector: {disktype: ssd}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: disktype, operator: In, values: [ssd]}]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 1, preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: x}}}]
  containers: [{name: app, image: busybox:1.36}]
`;
    const parsed = parseManifestText(text, src, opts);
    assert.deepEqual(parsed.problems.map((p) => `${p.severity} ${p.field}`).sort(), [
      'warning spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution',
      'warning spec.affinity.podAntiAffinity',
    ]);
    assert.match(parsed.problems[0]!.message, /only required node affinity is matched/);
    const plain = parseManifestText(
      text.replace(/ {6}preferred[\s\S]*?(?= {4}podAntiAffinity)/, '').replace(/ {4}podAntiAffinity:\n.*\n/, ''),
      src,
      opts,
    );
    assert.deepEqual(plain.problems, []);
  },
);

test("an init container shares the containers' entries, and a refused field is an error", () => {
  const text = `apiVersion: v1
kind: Pod
metadata: {name: init}
spec:
  os: {name: windows}
  initContainers:
  - name: setup
    image: busybox:1.36
    volumeDevices: [{name: disk, devicePath: /dev/xvda}]
  containers: [{name: app, image: busybox:1.36}]
`;
  const parsed = parseManifestText(text, src, opts);
  assert.deepEqual(parsed.problems.map((p) => `${p.severity} ${p.field}: ${p.message}`).sort(), [
    'error spec.initContainers[0].volumeDevices: raw block volumes need a PersistentVolumeClaim, which one host does not provide',
    'error spec.os.name: "windows": this node runs linux',
  ]);
  assert.equal(parsed.pods.length, 0);
});

test("watch's sources say a file's warnings once, naming file, document and field, and again only when they change", async () => {
  const { dir, cleanup } = scratchDir('fields-source');
  const file = join(dir, 'pod.yaml');
  const pod = (extra: string) =>
    `apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  ${extra}\n  containers: [{name: app, image: busybox:1.36}]\n`;
  writeFileSync(file, pod('setHostnameAsFQDN: true'));
  const warnings: string[] = [];
  const snapshots: number[] = [];
  const source = new FileSource({
    path: dir,
    nodeName: 'node-a',
    clock: new FakeClock(),
    watch: false,
    onSnapshot: (pods) => snapshots.push(pods.length),
    onError: () => {},
    onWarning: (w) => warnings.push(w.message),
  });
  await source.readNow();
  await source.readNow();
  writeFileSync(file, pod('schedulingGates: [{name: wait}]'));
  await source.readNow();
  source.stop();
  cleanup();
  assert.deepEqual(snapshots, [1, 1, 1]);
  assert.equal(warnings.length, 2);
  assert.match(warnings[0]!, /pod\.yaml: document 1 \(Pod "w"\): spec\.setHostnameAsFQDN: ignored/);
  assert.match(warnings[1]!, /pod\.yaml: document 1 \(Pod "w"\): spec\.schedulingGates: ignored/);
});

test("watch's file source dates each ConfigMap by its file's mtime, for which of two sources' copies is newer", async () => {
  const { dir, cleanup } = scratchDir('fields-source-dates');
  const file = join(dir, 'cfg.yaml');
  writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {k: v}\n');
  const then = new Date(Date.UTC(2026, 0, 2));
  utimesSync(file, then, then);
  let objects: SourceObjects = { configMaps: [], secrets: [] };
  const source = new FileSource({
    path: dir,
    nodeName: 'node-a',
    clock: new FakeClock(),
    watch: false,
    onSnapshot: (_pods, o) => (objects = o),
    onError: () => {},
  });
  await source.readNow();
  source.stop();
  cleanup();
  assert.equal(objects.configMaps[0]?.metadata?.name, 'cfg');
  assert.equal(objects.writtenAt?.(objects.configMaps[0]!), then.getTime());
});

test('validate names every ConfigMap, Secret, key and image pull secret the set does not provide, unless optional', async () => {
  const { dir, cleanup } = scratchDir('fields-refs');
  writeFileSync(
    join(dir, 'pod.yaml'),
    `apiVersion: v1
kind: Pod
metadata: {name: refs}
spec:
  imagePullSecrets: [{name: regcred}]
  containers:
  - name: app
    image: busybox:1.36
    env:
    - {name: A, valueFrom: {configMapKeyRef: {name: settings, key: a}}}
    - {name: B, valueFrom: {configMapKeyRef: {name: present, key: nokey}}}
    - {name: C, valueFrom: {secretKeyRef: {name: creds, key: c, optional: true}}}
    - {name: D, valueFrom: {configMapKeyRef: {name: present, key: here}}}
    envFrom: [{secretRef: {name: creds}}]
  volumes:
  - {name: cfg, configMap: {name: present, items: [{key: gone, path: g}]}}
  - {name: sec, secret: {secretName: tls}}
  - {name: opt, secret: {secretName: tls, optional: true}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: present}
data: {here: "1"}
`,
  );
  const set = await loadManifests([join(dir, 'pod.yaml')], opts);
  cleanup();
  assert.deepEqual(
    set.warnings.map((w) => `${w.file.endsWith('pod.yaml')} doc${w.index + 1} ${w.field}: ${w.message}`),
    [
      'true doc1 spec.containers[0].envFrom[0].secretRef: secret "creds" not found; no document of this set provides it, so the pod would never start (CreateContainerConfigError)',
      'true doc1 spec.containers[0].env[0].valueFrom.configMapKeyRef: configmap "settings" not found; no document of this set provides it, so the pod would never start (CreateContainerConfigError)',
      "true doc1 spec.containers[0].env[1].valueFrom.configMapKeyRef: couldn't find key nokey in ConfigMap default/present; no document of this set provides it, so the pod would never start (CreateContainerConfigError)",
      'true doc1 spec.volumes[0].configMap: MountVolume.SetUp failed for volume "cfg" : configmap references non-existent config key: gone; no document of this set provides it, so the pod would never start (FailedMount)',
      'true doc1 spec.volumes[1].secret: MountVolume.SetUp failed for volume "sec" : secret "tls" not found; no document of this set provides it, so the pod would never start (FailedMount)',
      'true doc1 spec.imagePullSecrets[0]: Unable to retrieve some image pull secrets (regcred); attempting to pull the image may ' +
        'not succeed.',
    ],
  );
});

test('no field that restricts what a container may do is warned and run looser: each is honoured, or refused where it cannot be', () => {
  // Warned, and no restriction of a Linux container: a Windows identity, and how volumes are owned or labelled.
  const notRestricting = new Set([
    'spec.securityContext.windowsOptions',
    'spec.containers.securityContext.windowsOptions',
    'spec.securityContext.fsGroupChangePolicy',
    'spec.securityContext.seLinuxChangePolicy',
  ]);
  const security = /securityContext|^spec\.hostUsers$|^spec\.host(PID|IPC|Network)$/;
  for (const [path, fate] of Object.entries(POD_FIELDS)) {
    if (!security.test(path) || notRestricting.has(path)) continue;
    assert.notEqual(fate.fate, 'warned', `${path} is warned`);
    for (const [name, x] of Object.entries(fate.except ?? {})) assert.notEqual(x.fate, 'warned', `${path} (${name}) is warned`);
  }
  const strict = POD_FIELDS['spec.securityContext.supplementalGroupsPolicy']!;
  assert.equal(strict.except?.strict?.fate, 'refused');
  assert.match(strict.except!.strict!.reason, /SupplementalGroupsPolicyNotSupported/);
});

test('supplementalGroupsPolicy: Merge and Strict load without a warning; Strict is left to admission, which refuses it', () => {
  for (const policy of ['Merge', 'Strict']) {
    const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: groups}\nspec:\n  securityContext: {supplementalGroupsPolicy: ${policy}}\n  containers: [{name: app, image: busybox:1.36}]\n`;
    const parsed = parseManifestText(text, src, opts);
    assert.deepEqual(parsed.problems, [], policy);
    assert.equal(parsed.pods.length, 1);
  }
});
