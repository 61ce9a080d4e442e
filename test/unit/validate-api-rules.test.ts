import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifestText } from '../../src/core/pod/index.js';
import {
  ARG_MAX_BYTES,
  MAX_ARG_STRLEN,
  MAX_DATA_BYTES,
  MAX_ENV_STRING_BYTES,
  TOTAL_ANNOTATION_SIZE_LIMIT,
} from '../../src/core/pod/validate.js';
import { MAX_OBJECT_BYTES } from '../../src/core/pod/load.js';

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
  assert.ok(
    errs.some((e) => e.field === field && words.test(e.message)),
    `expected an error on ${field} matching ${words}; got ${JSON.stringify(errs)}`,
  );
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
    refused(
      pod({ spec: vol, container: `volumeMounts: [{name: v, mountPath: /v, ${f}: "${bad}"}]` }),
      `spec.containers[0].volumeMounts[0].${f}`,
      /must be a relative path|must not contain '\.\.'/,
    );
  }
  assert.deepEqual(errors(pod({ spec: vol, container: 'volumeMounts: [{name: v, mountPath: /v, subPath: "a/..b/c"}]' })), []);
});

test('items[].path of configMap, secret, downwardAPI and projected volumes: absolute, "..", or starting with ".." is refused', () => {
  const cases: [string, string][] = [
    ['{name: v, configMap: {name: c, items: [{key: k, path: "../x"}]}}', 'spec.volumes[0].configMap.items[0].path'],
    ['{name: v, secret: {secretName: s, items: [{key: k, path: "/etc/passwd"}]}}', 'spec.volumes[0].secret.items[0].path'],
    [
      '{name: v, downwardAPI: {items: [{path: "a/../../b", fieldRef: {fieldPath: metadata.name}}]}}',
      'spec.volumes[0].downwardAPI.items[0].path',
    ],
    [
      '{name: v, projected: {sources: [{configMap: {name: c, items: [{key: k, path: "..data"}]}}]}}',
      'spec.volumes[0].projected.sources[0].configMap.items[0].path',
    ],
    [
      '{name: v, projected: {sources: [{secret: {name: s, items: [{key: k, path: ".."}]}}]}}',
      'spec.volumes[0].projected.sources[0].secret.items[0].path',
    ],
  ];
  for (const [volume, field] of cases)
    refused(pod({ spec: `  volumes: [${volume}]` }), field, /must be a relative path|must not contain '\.\.'|must not start with '\.\.'/);
  assert.deepEqual(errors(pod({ spec: '  volumes: [{name: v, configMap: {name: c, items: [{key: k, path: "dir/.hidden"}]}}]' })), []);
});

test('activeDeadlineSeconds must be at least 1', () => {
  refused(pod({ spec: '  activeDeadlineSeconds: -5' }), 'spec.activeDeadlineSeconds', /must be greater than or equal to 1/);
  refused(pod({ spec: '  activeDeadlineSeconds: 0' }), 'spec.activeDeadlineSeconds', /must be greater than or equal to 1/);
  assert.deepEqual(errors(pod({ spec: '  activeDeadlineSeconds: 1' })), []);
});

test('resource quantities: negative ones and requests above limits are refused', () => {
  refused(
    pod({ container: 'resources: {limits: {cpu: "-1"}}' }),
    'spec.containers[0].resources.limits["cpu"]',
    /must be greater than or equal to 0/,
  );
  refused(
    pod({ container: 'resources: {requests: {memory: "-5Mi"}}' }),
    'spec.containers[0].resources.requests["memory"]',
    /must be greater than or equal to 0/,
  );
  refused(
    pod({ container: 'resources: {requests: {cpu: "2"}, limits: {cpu: "500m"}}' }),
    'spec.containers[0].resources.requests["cpu"]',
    /must be less than or equal to cpu limit of 500m/,
  );
  refused(
    pod({ container: 'resources: {limits: {memory: "lots"}}' }),
    'spec.containers[0].resources.limits["memory"]',
    /is not a quantity/,
  );
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
  assert.deepEqual(errors(pod({ spec: '  volumes: [{name: v, emptyDir: {sizeLimit: [1]}}]' })), [
    { field: 'spec.volumes[0].emptyDir.sizeLimit', message: 'expected a number or a string, got a list' },
  ]);
  assert.deepEqual(errors(pod({ container: 'livenessProbe: {httpGet: {port: true}}' })), [
    { field: 'spec.containers[0].livenessProbe.httpGet.port', message: 'expected a string or an integer, got true' },
  ]);
  assert.deepEqual(
    errors(
      pod({
        spec: '  volumes: [{name: v, emptyDir: {sizeLimit: 1Gi}}]',
        container: 'ports: [{name: http, containerPort: 80}], livenessProbe: {httpGet: {port: http}}',
      }),
    ),
    [],
  );
});

test('metadata.annotations larger than 256 KiB in total are refused', () => {
  const big = 'x'.repeat(TOTAL_ANNOTATION_SIZE_LIMIT / 2);
  refused(
    pod({ metadata: `annotations: {a: "${big}", b: "${big}"}` }),
    'metadata.annotations',
    /expected at most 262144 bytes \(256 KiB\)/,
  );
  assert.deepEqual(errors(pod({ metadata: `annotations: {a: "${big}"}` })), []);
});

test('env: a NUL byte, a value exec cannot take, and a name with "=" or non-printable characters are refused', () => {
  refused(pod({ container: 'env: [{name: A, value: "a\\0b"}]' }), 'spec.containers[0].env[0].value', /must not contain a NUL byte/);
  refused(
    pod({ container: `env: [{name: A, value: "${'x'.repeat(MAX_ENV_STRING_BYTES)}"}]` }),
    'spec.containers[0].env[0].value',
    /too long: .*MAX_ARG_STRLEN/,
  );
  refused(
    pod({ container: 'env: [{name: "A=B", value: v}]' }),
    'spec.containers[0].env[0].name',
    /printable ASCII characters other than '='/,
  );
  refused(pod({ container: 'env: [{name: "A\\tB", value: v}]' }), 'spec.containers[0].env[0].name', /printable ASCII/);
  refused(pod({ container: 'env: [{name: "", value: v}]' }), 'spec.containers[0].env[0].name', /printable ASCII/);
  assert.deepEqual(errors(pod({ container: `env: [{name: "my.var-1", value: "${'y'.repeat(64 * 1024)}"}]` })), []);
});

test('fieldRef and resourceFieldRef: what the API server takes in an env var and in a downwardAPI volume, and nothing else', () => {
  const env = (from: string) => pod({ container: `env: [{name: X, valueFrom: ${from}}]` });
  const at = 'spec.containers[0].env[0].valueFrom';
  // Accepted: the env set, labels and annotations by key, spec.host (spec.nodeName's old name).
  for (const path of [
    'metadata.name',
    'metadata.uid',
    'spec.nodeName',
    'spec.host',
    'spec.serviceAccountName',
    'status.hostIPs',
    'status.podIPs',
    '"metadata.labels[\'app\']"',
    '"metadata.annotations[\'Example.com/Note\']"',
  ]) {
    assert.deepEqual(errors(env(`{fieldRef: {fieldPath: ${path}}}`)), [], path);
  }
  assert.deepEqual(errors(env('{resourceFieldRef: {resource: requests.hugepages-2Mi}}')), []);
  refused(
    env('{fieldRef: {fieldPath: spec.foo}}'),
    `${at}.fieldRef.fieldPath`,
    /^"spec\.foo" is not a pod field; expected one of "metadata\.name", .*"status\.podIPs", or metadata\.labels\['<key>'\]/,
  );
  // A pod field, but not one an env var takes (the API server: Unsupported value).
  refused(
    env('{fieldRef: {fieldPath: status.phase}}'),
    `${at}.fieldRef.fieldPath`,
    /^"status\.phase" is not supported here; expected one of/,
  );
  refused(env('{fieldRef: {fieldPath: metadata.labels}}'), `${at}.fieldRef.fieldPath`, /^"metadata\.labels" is not supported here/);
  refused(
    env(`{fieldRef: {fieldPath: "spec.nodeName['x']"}}`),
    `${at}.fieldRef.fieldPath`,
    /only metadata\.labels and metadata\.annotations take a key/,
  );
  refused(
    env(`{fieldRef: {fieldPath: "metadata.labels['-x-']"}}`),
    `${at}.fieldRef.fieldPath`,
    /^"metadata\.labels\['-x-'\]" is invalid: the key /,
  );
  refused(
    env('{fieldRef: {apiVersion: v2, fieldPath: metadata.name}}'),
    `${at}.fieldRef.apiVersion`,
    /^"v2" is not supported; expected "v1"$/,
  );
  refused(
    env('{resourceFieldRef: {resource: limits.gpu}}'),
    `${at}.resourceFieldRef.resource`,
    /^"limits\.gpu" is not supported; expected one of "limits\.cpu"/,
  );

  // A volume takes metadata only, and a resource of a named container.
  const volume = (item: string, source = 'downwardAPI: {items: [ITEM]}') =>
    pod({ spec: `  volumes: [{name: v, ${source.replace('ITEM', item)}}]`, container: 'volumeMounts: [{name: v, mountPath: /v}]' });
  assert.deepEqual(errors(volume('{path: l, fieldRef: {fieldPath: metadata.labels}}')), []);
  assert.deepEqual(errors(volume('{path: m, resourceFieldRef: {containerName: app, resource: limits.memory}}')), []);
  refused(
    volume('{path: ip, fieldRef: {fieldPath: status.podIP}}'),
    'spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath',
    /^"status\.podIP" is not supported here; expected one of "metadata\.name", "metadata\.namespace", "metadata\.labels"/,
  );
  refused(
    volume('{path: m, resourceFieldRef: {resource: limits.memory}}'),
    'spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName',
    /^required in a volume/,
  );
  refused(
    volume('{path: n, fieldRef: {fieldPath: spec.nodeName}}', 'projected: {sources: [{downwardAPI: {items: [ITEM]}}]}'),
    'spec.volumes[0].projected.sources[0].downwardAPI.items[0].fieldRef.fieldPath',
    /^"spec\.nodeName" is not supported here/,
  );
});

test(
  'a value of the wrong type names what was expected, in YAML words, and what was given; its keys are not then reported as ' +
    'unknown fields',
  () => {
    assert.deepEqual(errors(pod({ container: 'command: sh -c "echo hi"' })), [
      {
        field: 'spec.containers[0].command',
        message: 'expected a list, got "sh -c \\"echo hi\\"" (a YAML list: one "- item" a line, or [a, b])',
      },
    ]);
    assert.deepEqual(errors(pod({ container: 'ports: [{containerPort: "80"}]' })), [
      { field: 'spec.containers[0].ports[0].containerPort', message: 'expected an integer, got "80"' },
    ]);
    assert.deepEqual(errors(pod({ container: 'tty: "yes"' })), [
      { field: 'spec.containers[0].tty', message: 'expected a boolean, got "yes"' },
    ]);
    // A mapping where a list belongs: one error, not one more per key.
    assert.deepEqual(errors(pod({ container: 'env: {A: b, C: d}' })), [
      { field: 'spec.containers[0].env', message: 'expected a list, got a mapping (a YAML list: one "- item" a line, or [a, b])' },
    ]);
    assert.deepEqual(errors(pod({ metadata: 'labels: [a]' })), [
      { field: 'metadata.labels', message: 'expected a mapping (key: value), got a list' },
    ]);
  },
);

test('a command or args string exec cannot take (over MAX_ARG_STRLEN, 128 KiB) is refused, naming the element: a 1 MB argument crash-looped with "argument list too long"', () => {
  const huge = 'x'.repeat(1 << 20);
  refused(
    pod({ container: `command: [sh, -c, "${huge}"]` }),
    'spec.containers[0].command[2]',
    /^too long: 1048577 bytes with its NUL; expected at most 131072 bytes \(Linux MAX_ARG_STRLEN/,
  );
  refused(pod({ container: `args: ["${'y'.repeat(MAX_ARG_STRLEN)}"]` }), 'spec.containers[0].args[0]', /MAX_ARG_STRLEN/);
  // An exec probe or hook runs in the container through execve too.
  refused(
    pod({ container: `livenessProbe: {exec: {command: [sh, "${'z'.repeat(200_000)}"]}}` }),
    'spec.containers[0].livenessProbe.exec.command[1]',
    /MAX_ARG_STRLEN/,
  );
  refused(
    pod({ container: `lifecycle: {preStop: {exec: {command: ["${'z'.repeat(200_000)}"]}}}` }),
    'spec.containers[0].lifecycle.preStop.exec.command[0]',
    /MAX_ARG_STRLEN/,
  );
  // The longest argument exec takes, with its NUL.
  assert.deepEqual(errors(pod({ container: `args: ["${'y'.repeat(MAX_ARG_STRLEN - 1)}"]` })), []);
});

test('command, args and env together over ARG_MAX (each string with its NUL and pointer) are refused, naming the largest of them', () => {
  // 250,000 one-letter arguments: 10 bytes each to execve, 2.5 MB, in a manifest well under the object limit.
  const many = (n: number) => `[${Array.from({ length: n }, () => 'a').join(', ')}]`;
  const text = pod({ container: `command: [sh], args: ${many(250_000)}, env: [{name: A, value: "1"}]` });
  assert.ok(Buffer.byteLength(text) < MAX_OBJECT_BYTES);
  refused(
    text,
    'spec.containers[0].args',
    /^too long for exec: 2500\d{3} bytes of arguments and environment together \(command 11, args 2500000, env 12; each string with its NUL and pointer\); expected at most 2097152 bytes \(Linux ARG_MAX/,
  );
  assert.equal(ARG_MAX_BYTES, 2 * 1024 * 1024);
  // The environment shares the space (a manifest's literal values; not what the image adds).
  const env = `env: [${Array.from({ length: 11 }, (_, i) => `{name: E${i}, value: "${'v'.repeat(100_000)}"}`).join(', ')}]`;
  refused(
    pod({ container: `command: [sh], args: ${many(105_000)}, ${env}` }),
    'spec.containers[0].env',
    /^too long for exec: .*\(command 11, args 1050000, env 1100\d{3};/,
  );
  assert.deepEqual(errors(pod({ container: env })), [], "with no command or args, what runs is the image's entrypoint: not known here");
  assert.deepEqual(errors(pod({ container: `command: [sh], args: ${many(150_000)}` })), []);
});

test("labels and annotations are checked on every kind, as the API server's ValidateObjectMeta, and a long label value is quoted shortened", () => {
  for (const kind of ['ConfigMap', 'Secret']) {
    const text = (meta: string) => `apiVersion: v1\nkind: ${kind}\nmetadata: {name: c, ${meta}}\n`;
    const errs = (meta: string) =>
      parseManifestText(text(meta), { kind: 'file', path: '/unit/c.yaml' }, { nodeName: 'unit' }).problems.filter(
        (p) => p.severity === 'error',
      );
    assert.ok(
      errs('labels: {"-bad": v}').some((p) => p.field === 'metadata.labels["-bad"]' && /invalid label key/.test(p.message)),
      kind,
    );
    assert.ok(
      errs(`labels: {ok: "${'v'.repeat(64)}"}`).some(
        (p) => p.field === 'metadata.labels["ok"]' && /^invalid label value "v{64}" \(64 characters\): expected at most 63/.test(p.message),
      ),
      kind,
    );
    assert.ok(
      errs(`labels: {ok: "${'v'.repeat(100_000)}"}`).some(
        (p) => p.field === 'metadata.labels["ok"]' && /^invalid label value "v{60}\.\.\." \(100000 characters\): expected/.test(p.message),
      ),
      kind,
    );
    assert.ok(
      errs(`annotations: {a: "${'x'.repeat(TOTAL_ANNOTATION_SIZE_LIMIT)}"}`).some(
        (p) => p.field === 'metadata.annotations' && /256 KiB/.test(p.message),
      ),
      kind,
    );
    assert.deepEqual(errs('labels: {app.kubernetes.io/name: web}, annotations: {note: "x"}'), [], kind);
  }
  refused(
    pod({ metadata: `labels: {"${'k'.repeat(64)}": v}` }),
    `metadata.labels["${'k'.repeat(64)}"]`,
    /name part must be 63 characters or less/,
  );
  refused(
    pod({ metadata: `labels: {"${'p'.repeat(254)}/k": v}` }),
    `metadata.labels["${'p'.repeat(254)}/k"]`,
    /prefix .* must be a DNS-1123 subdomain/,
  );
});

test("a ConfigMap's or Secret's values over 1 MiB together are refused (the API server's MaxSecretSize)", () => {
  const half = 'q'.repeat(MAX_DATA_BYTES / 2 + 1);
  const errs = (text: string) =>
    parseManifestText(text, { kind: 'file', path: '/unit/c.yaml' }, { nodeName: 'unit' })
      .problems.filter((p) => p.severity === 'error')
      .map((p) => `${p.field}: ${p.message}`);
  assert.deepEqual(errs(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "${half}", b: "${half}"}\n`), [
    `data: too long: the ConfigMap's values (data and binaryData) are ${2 * half.length} bytes together; expected at most 1048576 bytes (1 MiB), as the API server`,
  ]);
  assert.deepEqual(
    errs(
      `apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {a: "${half}"}\ndata: {b: "${Buffer.from(half).toString('base64')}"}\n`,
    ).length,
    1,
  );
  assert.deepEqual(errs(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "${half}"}\n`), []);
});
