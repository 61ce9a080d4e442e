import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifestText } from '../../src/core/pod/index.js';
import { MAX_ENV_STRING_BYTES, TOTAL_ANNOTATION_SIZE_LIMIT } from '../../src/core/pod/validate.js';

/** A pod whose first container gets `container` (YAML flow keys) and whose spec gets `spec`, `metadata` extra keys. */
function pod(opts: { metadata?: string; spec?: string; container?: string } = {}): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: web${opts.metadata ? `, ${opts.metadata}` : ''}}
spec:
${opts.spec ?? ''}
  containers:
  - {name: app, image: busybox:1.36${opts.container ? `, ${opts.container}` : ''}}
`;
}

function errors(text: string): { field: string; message: string }[] {
  const parsed = parseManifestText(text, { kind: 'file', path: '/unit/p.yaml', display: 'p.yaml' }, { nodeName: 'unit' });
  return parsed.problems.filter((p) => p.severity === 'error').map((p) => ({ field: p.field, message: p.message }));
}

/** The manifest is refused, nothing of it is returned to run, and one error names the field with the expected words. */
function refused(text: string, field: string, words: RegExp): void {
  const parsed = parseManifestText(text, { kind: 'file', path: '/unit/p.yaml', display: 'p.yaml' }, { nodeName: 'unit' });
  assert.deepEqual(parsed.pods, [], 'no pod to start');
  const errs = errors(text);
  assert.ok(errs.some((e) => e.field === field && words.test(e.message)), `expected an error on ${field} matching ${words}; got ${JSON.stringify(errs)}`);
}

test('subPath and subPathExpr: absolute or with a ".." element are refused', () => {
  const vol = '  volumes: [{name: v, emptyDir: {}}]';
  for (const [f, bad] of [
    ['subPath', '../../etc'],
    ['subPath', '/etc'],
    ['subPath', 'a/../..'],
    ['subPathExpr', '$(POD)/../x'],
    ['subPathExpr', '/abs'],
  ] as const) {
    refused(pod({ spec: vol, container: `volumeMounts: [{name: v, mountPath: /v, ${f}: "${bad}"}]` }), `spec.containers[0].volumeMounts[0].${f}`, /must be a relative path|must not contain '\.\.'/);
  }
  assert.deepEqual(errors(pod({ spec: vol, container: 'volumeMounts: [{name: v, mountPath: /v, subPath: "a/..b/c"}]' })), []);
});

test('items[].path of configMap, secret, downwardAPI and projected volumes: absolute, "..", or starting with ".." is refused', () => {
  const cases: [string, string][] = [
    ['{name: v, configMap: {name: c, items: [{key: k, path: "../x"}]}}', 'spec.volumes[0].configMap.items[0].path'],
    ['{name: v, secret: {secretName: s, items: [{key: k, path: "/etc/passwd"}]}}', 'spec.volumes[0].secret.items[0].path'],
    ['{name: v, downwardAPI: {items: [{path: "a/../../b", fieldRef: {fieldPath: metadata.name}}]}}', 'spec.volumes[0].downwardAPI.items[0].path'],
    ['{name: v, projected: {sources: [{configMap: {name: c, items: [{key: k, path: "..data"}]}}]}}', 'spec.volumes[0].projected.sources[0].configMap.items[0].path'],
    ['{name: v, projected: {sources: [{secret: {name: s, items: [{key: k, path: ".."}]}}]}}', 'spec.volumes[0].projected.sources[0].secret.items[0].path'],
  ];
  for (const [volume, field] of cases) refused(pod({ spec: `  volumes: [${volume}]` }), field, /must be a relative path|must not contain '\.\.'|must not start with '\.\.'/);
  assert.deepEqual(errors(pod({ spec: '  volumes: [{name: v, configMap: {name: c, items: [{key: k, path: "dir/.hidden"}]}}]' })), []);
});

test('activeDeadlineSeconds must be at least 1', () => {
  refused(pod({ spec: '  activeDeadlineSeconds: -5' }), 'spec.activeDeadlineSeconds', /must be greater than or equal to 1/);
  refused(pod({ spec: '  activeDeadlineSeconds: 0' }), 'spec.activeDeadlineSeconds', /must be greater than or equal to 1/);
  assert.deepEqual(errors(pod({ spec: '  activeDeadlineSeconds: 1' })), []);
});

test('resource quantities: negative ones and requests above limits are refused', () => {
  refused(pod({ container: 'resources: {limits: {cpu: "-1"}}' }), 'spec.containers[0].resources.limits["cpu"]', /must be greater than or equal to 0/);
  refused(pod({ container: 'resources: {requests: {memory: "-5Mi"}}' }), 'spec.containers[0].resources.requests["memory"]', /must be greater than or equal to 0/);
  refused(pod({ container: 'resources: {requests: {cpu: "2"}, limits: {cpu: "500m"}}' }), 'spec.containers[0].resources.requests["cpu"]', /must be less than or equal to cpu limit of 500m/);
  refused(pod({ container: 'resources: {limits: {memory: "lots"}}' }), 'spec.containers[0].resources.limits["memory"]', /is not a quantity/);
  assert.deepEqual(errors(pod({ container: 'resources: {requests: {cpu: 250m, memory: 64Mi}, limits: {cpu: "1", memory: 128Mi}}' })), []);
});

test('a value that fits no alternative of a Quantity or an IntOrString is one error, naming the alternatives and the value', () => {
  // ajv says it three times (each alternative, then the oneOf); podctl's own quantity rule says it better where it has one.
  assert.deepEqual(errors(pod({ container: 'resources: {limits: {memory: "12XB"}}' })), [
    { field: 'spec.containers[0].resources.limits["memory"]', message: '"12XB" is not a quantity; expected e.g. 500m, 1, 128Mi' },
  ]);
  assert.deepEqual(errors(pod({ spec: '  volumes: [{name: v, emptyDir: {sizeLimit: huge}}]' })), [
    { field: 'spec.volumes[0].emptyDir.sizeLimit', message: 'expected a number or a quantity (e.g. 500m, 1, 128Mi), got "huge"' },
  ]);
  assert.deepEqual(errors(pod({ spec: '  volumes: [{name: v, emptyDir: {sizeLimit: [1]}}]' })), [{ field: 'spec.volumes[0].emptyDir.sizeLimit', message: 'expected a number or a string, got a list' }]);
  assert.deepEqual(errors(pod({ container: 'livenessProbe: {httpGet: {port: true}}' })), [{ field: 'spec.containers[0].livenessProbe.httpGet.port', message: 'expected a string or an integer, got true' }]);
  assert.deepEqual(errors(pod({ spec: '  volumes: [{name: v, emptyDir: {sizeLimit: 1Gi}}]', container: 'ports: [{name: http, containerPort: 80}], livenessProbe: {httpGet: {port: http}}' })), []);
});

test('metadata.annotations larger than 256 KiB in total are refused', () => {
  const big = 'x'.repeat(TOTAL_ANNOTATION_SIZE_LIMIT / 2);
  refused(pod({ metadata: `annotations: {a: "${big}", b: "${big}"}` }), 'metadata.annotations', /expected at most 262144 bytes \(256 KiB\)/);
  assert.deepEqual(errors(pod({ metadata: `annotations: {a: "${big}"}` })), []);
});

test('env: a NUL byte, a value exec cannot take, and a name with "=" or non-printable characters are refused', () => {
  refused(pod({ container: 'env: [{name: A, value: "a\\0b"}]' }), 'spec.containers[0].env[0].value', /must not contain a NUL byte/);
  refused(pod({ container: `env: [{name: A, value: "${'x'.repeat(MAX_ENV_STRING_BYTES)}"}]` }), 'spec.containers[0].env[0].value', /too long: .*MAX_ARG_STRLEN/);
  refused(pod({ container: 'env: [{name: "A=B", value: v}]' }), 'spec.containers[0].env[0].name', /printable ASCII characters other than '='/);
  refused(pod({ container: 'env: [{name: "A\\tB", value: v}]' }), 'spec.containers[0].env[0].name', /printable ASCII/);
  refused(pod({ container: 'env: [{name: "", value: v}]' }), 'spec.containers[0].env[0].name', /printable ASCII/);
  assert.deepEqual(errors(pod({ container: `env: [{name: "my.var-1", value: "${'y'.repeat(64 * 1024)}"}]` })), []);
});

test("fieldRef and resourceFieldRef: what the API server takes in an env var and in a downwardAPI volume, and nothing else", () => {
  const env = (from: string) => pod({ container: `env: [{name: X, valueFrom: ${from}}]` });
  const at = 'spec.containers[0].env[0].valueFrom';
  // Accepted: the env set, labels and annotations by key, spec.host (spec.nodeName's old name).
  for (const path of ['metadata.name', 'metadata.uid', 'spec.nodeName', 'spec.host', 'spec.serviceAccountName', 'status.hostIPs', 'status.podIPs', "\"metadata.labels['app']\"", "\"metadata.annotations['Example.com/Note']\""]) {
    assert.deepEqual(errors(env(`{fieldRef: {fieldPath: ${path}}}`)), [], path);
  }
  assert.deepEqual(errors(env('{resourceFieldRef: {resource: requests.hugepages-2Mi}}')), []);
  refused(env('{fieldRef: {fieldPath: spec.foo}}'), `${at}.fieldRef.fieldPath`, /^"spec\.foo" is not a pod field; expected one of "metadata\.name", .*"status\.podIPs", or metadata\.labels\['<key>'\]/);
  // A pod field, but not one an env var takes (the API server: Unsupported value).
  refused(env('{fieldRef: {fieldPath: status.phase}}'), `${at}.fieldRef.fieldPath`, /^"status\.phase" is not supported here; expected one of/);
  refused(env('{fieldRef: {fieldPath: metadata.labels}}'), `${at}.fieldRef.fieldPath`, /^"metadata\.labels" is not supported here/);
  refused(env(`{fieldRef: {fieldPath: "spec.nodeName['x']"}}`), `${at}.fieldRef.fieldPath`, /only metadata\.labels and metadata\.annotations take a key/);
  refused(env(`{fieldRef: {fieldPath: "metadata.labels['-x-']"}}`), `${at}.fieldRef.fieldPath`, /^"metadata\.labels\['-x-'\]" is invalid: the key /);
  refused(env('{fieldRef: {apiVersion: v2, fieldPath: metadata.name}}'), `${at}.fieldRef.apiVersion`, /^"v2" is not supported; expected "v1"$/);
  refused(env('{resourceFieldRef: {resource: limits.gpu}}'), `${at}.resourceFieldRef.resource`, /^"limits\.gpu" is not supported; expected one of "limits\.cpu"/);

  // A volume takes metadata only, and a resource of a named container.
  const volume = (item: string, source = 'downwardAPI: {items: [ITEM]}') =>
    pod({ spec: `  volumes: [{name: v, ${source.replace('ITEM', item)}}]`, container: 'volumeMounts: [{name: v, mountPath: /v}]' });
  assert.deepEqual(errors(volume('{path: l, fieldRef: {fieldPath: metadata.labels}}')), []);
  assert.deepEqual(errors(volume('{path: m, resourceFieldRef: {containerName: app, resource: limits.memory}}')), []);
  refused(volume('{path: ip, fieldRef: {fieldPath: status.podIP}}'), 'spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath', /^"status\.podIP" is not supported here; expected one of "metadata\.name", "metadata\.namespace", "metadata\.labels"/);
  refused(volume('{path: m, resourceFieldRef: {resource: limits.memory}}'), 'spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName', /^required in a volume/);
  refused(
    volume('{path: n, fieldRef: {fieldPath: spec.nodeName}}', 'projected: {sources: [{downwardAPI: {items: [ITEM]}}]}'),
    'spec.volumes[0].projected.sources[0].downwardAPI.items[0].fieldRef.fieldPath',
    /^"spec\.nodeName" is not supported here/,
  );
});

test('a value of the wrong type names what was expected, in YAML words, and what was given; its keys are not then reported as unknown fields', () => {
  assert.deepEqual(errors(pod({ container: 'command: sh -c "echo hi"' })), [
    { field: 'spec.containers[0].command', message: 'expected a list, got "sh -c \\"echo hi\\"" (a YAML list: one "- item" a line, or [a, b])' },
  ]);
  assert.deepEqual(errors(pod({ container: 'ports: [{containerPort: "80"}]' })), [{ field: 'spec.containers[0].ports[0].containerPort', message: 'expected an integer, got "80"' }]);
  assert.deepEqual(errors(pod({ container: 'tty: "yes"' })), [{ field: 'spec.containers[0].tty', message: 'expected a boolean, got "yes"' }]);
  // A mapping where a list belongs: one error, not one more per key.
  assert.deepEqual(errors(pod({ container: 'env: {A: b, C: d}' })), [{ field: 'spec.containers[0].env', message: 'expected a list, got a mapping (a YAML list: one "- item" a line, or [a, b])' }]);
  assert.deepEqual(errors(pod({ metadata: 'labels: [a]' })), [{ field: 'metadata.labels', message: 'expected a mapping (key: value), got a list' }]);
});
