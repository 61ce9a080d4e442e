// The Kubernetes OpenAPI data (core-v1.json) and the /openapi/v3 documents made from it: the patch metadata the
// strategic merge patch reads, and what kubectl 1.32 reads to send fieldValidation=Strict and to explain fields.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  definition,
  definitionNameForKind,
  openapiV3Doc,
  openapiV3Index,
  openapiV3Served,
  patchMetaAt,
  schemaForKind,
} from '../../src/core/kubeapi/openapi/index.js';
import { documentType, OPENAPI_V2_PROTOBUF, openapiV2Served } from '../../src/core/kubeapi/openapi/v2.js';
import protobuf from 'protobufjs/light.js';

const POD = 'io.k8s.api.core.v1.Pod';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const DATA_FILE = fileURLToPath(new URL('../../src/core/kubeapi/openapi/core-v1.json', import.meta.url));

test('patchMetaAt: containers merge by name, env by name, ports by containerPort, volumeMounts by mountPath', () => {
  const containers = patchMetaAt(POD, ['spec', 'containers']);
  assert.deepEqual(
    { strategies: containers?.strategies, mergeKey: containers?.mergeKey, listType: containers?.listType, keys: containers?.listMapKeys },
    { strategies: ['merge'], mergeKey: 'name', listType: 'map', keys: ['name'] },
  );
  assert.equal(patchMetaAt(POD, ['spec', 'containers', 'env'])?.mergeKey, 'name');
  assert.equal(patchMetaAt(POD, ['spec', 'containers', 'ports'])?.mergeKey, 'containerPort');
  assert.equal(patchMetaAt(POD, ['spec', 'initContainers', 'volumeMounts'])?.mergeKey, 'mountPath');
  assert.equal(patchMetaAt(POD, ['spec', 'ephemeralContainers'])?.mergeKey, 'name');
  assert.deepEqual(patchMetaAt(POD, ['spec', 'volumes'])?.strategies, ['merge', 'retainKeys']);
  assert.deepEqual(patchMetaAt(POD, ['metadata', 'finalizers'])?.strategies, ['merge']);
  assert.equal(patchMetaAt(POD, ['metadata', 'finalizers'])?.mergeKey, undefined);
  const tolerations = patchMetaAt(POD, ['spec', 'tolerations']);
  assert.deepEqual([tolerations?.strategies, tolerations?.listType], [[], 'atomic']);
  // Through map values and into a definition's own extension (ObjectReference is an atomic map).
  assert.equal(patchMetaAt(POD, ['metadata', 'labels', 'app'])?.schema?.type, 'string');
  assert.equal(patchMetaAt('io.k8s.api.core.v1.Event', ['involvedObject'])?.mapType, 'atomic');
  assert.equal(patchMetaAt(POD, ['spec', 'nope']), undefined);
  assert.equal(patchMetaAt(POD, ['spec', 'containers', 'image', 'deeper']), undefined);
});

test('kinds are found by their x-kubernetes-group-version-kind', () => {
  for (const kind of [
    'Pod',
    'PodList',
    'ConfigMap',
    'ConfigMapList',
    'Secret',
    'SecretList',
    'Event',
    'EventList',
    'Node',
    'NodeList',
    'Namespace',
    'NamespaceList',
  ]) {
    assert.equal(definitionNameForKind('', 'v1', kind), `io.k8s.api.core.v1.${kind}`);
  }
  assert.equal(schemaForKind('', 'v1', 'Pod'), definition(POD));
  assert.equal(definitionNameForKind('', 'v1', 'Status'), 'io.k8s.apimachinery.pkg.apis.meta.v1.Status');
  assert.equal(schemaForKind('apps', 'v1', 'Deployment'), undefined);
  assert.ok(definition('io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry'));
  assert.equal(definition('io.k8s.apimachinery.pkg.apis.meta.v1.Time')?.format, 'date-time');
});

test('the data file: generated, small, and without the OpenAPI prose', () => {
  const text = readFileSync(DATA_FILE, 'utf8');
  const data = JSON.parse(text) as Obj;
  assert.match(data['x-podctl-source'], /gen-kube-openapi\.mjs.*Kubernetes 1\.35.*Do not edit by hand/);
  assert.ok(statSync(DATA_FILE).size < 300 * 1024, `core-v1.json is ${statSync(DATA_FILE).size} bytes`);
  assert.doesNotMatch(text, /"description":"(?!OK|Created|Accepted|Unauthorized)/);
  // Every $ref resolves within it.
  for (const ref of text.matchAll(/"\$ref":"#\/definitions\/([^"]+)"/g)) assert.ok(data.definitions[ref[1]], `dangling ${ref[1]}`);
});

test('/openapi/v3 lists api/v1 (and api, apis, version) by URL with the hash of the bytes served', () => {
  const index = openapiV3Index();
  assert.deepEqual(Object.keys(index.paths).sort(), ['api', 'api/v1', 'apis', 'version']);
  for (const [path, { serverRelativeURL }] of Object.entries(index.paths)) {
    const served = openapiV3Served(path)!;
    assert.equal(serverRelativeURL, `/openapi/v3/${path}?hash=${served.hash}`);
    assert.match(served.hash, /^[0-9A-F]{128}$/);
    assert.equal(served.hash, createHash('sha512').update(served.body).digest('hex').toUpperCase());
    assert.equal(served.etag, `"${served.hash}"`);
  }
  // Made once: the same bytes every time.
  assert.equal(openapiV3Served('api/v1'), openapiV3Served('api/v1'));
  assert.equal(openapiV3Served(), openapiV3Served(''));
  assert.deepEqual(JSON.parse(openapiV3Served()!.body.toString()), index);
  assert.equal(openapiV3Served('apis/apps/v1'), undefined);
});

/** kubectl's QueryParamVerifierV3: the first PATCH operation of the kind decides, by its parameters. */
function supportsQueryParam(doc: Obj, kind: string, param: string): boolean {
  for (const item of Object.values(doc.paths as Obj)) {
    const op = item.patch;
    const gvk = op?.['x-kubernetes-group-version-kind'];
    if (!gvk || gvk.group !== '' || gvk.version !== 'v1' || gvk.kind !== kind) continue;
    return (op.parameters as Obj[]).some((p) => p.name === param);
  }
  return false;
}

test('api/v1: kubectl finds fieldValidation on the PATCH of every kind, and on every POST and PUT', () => {
  const doc = openapiV3Doc('api/v1') as Obj;
  assert.equal(doc.openapi, '3.0.0');
  for (const kind of ['Pod', 'ConfigMap', 'Secret', 'Event', 'Node', 'Namespace'])
    assert.ok(supportsQueryParam(doc, kind, 'fieldValidation'), kind);
  const ops: [string, string, Obj][] = [];
  for (const [path, item] of Object.entries(doc.paths as Obj))
    for (const [method, op] of Object.entries(item as Obj)) if (method !== 'parameters') ops.push([path, method, op]);
  for (const [path, method, op] of ops) {
    const params = ((op.parameters ?? []) as Obj[]).map((p) => p.name);
    if (['post', 'put', 'patch'].includes(method)) {
      for (const p of ['fieldValidation', 'fieldManager', 'dryRun']) assert.ok(params.includes(p), `${method} ${path} lacks ${p}`);
      assert.ok(op.requestBody?.content, `${method} ${path} has no request body`);
    }
    if (method === 'patch') {
      assert.ok(params.includes('force'), `patch ${path} lacks force`);
      assert.deepEqual(Object.keys(op.requestBody.content), [
        'application/json-patch+json',
        'application/merge-patch+json',
        'application/strategic-merge-patch+json',
        'application/apply-patch+yaml',
      ]);
    }
    for (const p of (op.parameters ?? []) as Obj[]) assert.ok(p.schema?.type, `${method} ${path} ${p.name} has no schema type`);
  }
  const methods = (path: string) => Object.keys((doc.paths as Obj)[path]).sort();
  assert.deepEqual(methods('/api/v1/namespaces/{namespace}/pods'), ['delete', 'get', 'parameters', 'post']);
  assert.deepEqual(methods('/api/v1/namespaces/{namespace}/pods/{name}'), ['delete', 'get', 'parameters', 'patch', 'put']);
  assert.deepEqual(methods('/api/v1/pods'), ['get', 'parameters']);
  assert.deepEqual(methods('/api/v1/nodes/{name}'), ['delete', 'get', 'parameters', 'patch', 'put']);
});

test('api/v1: the schemas are components with v3 refs, and kubectl explain pod.spec.containers resolves to types', () => {
  const doc = openapiV3Doc('api/v1') as Obj;
  const text = JSON.stringify(doc);
  assert.doesNotMatch(text, /#\/definitions\//);
  const schemas = doc.components.schemas as Obj;
  for (const ref of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) assert.ok(schemas[ref[1]], `dangling ${ref[1]}`);
  const deref = (s: Obj): Obj => (s.$ref ? schemas[s.$ref.split('/').pop()] : s.allOf?.length === 1 ? deref(s.allOf[0]) : s);
  // explain finds the kind among the components by its group-version-kind.
  const [podName] = Object.entries(schemas).find(([, s]) =>
    (s['x-kubernetes-group-version-kind'] ?? []).some((g: Obj) => g.group === '' && g.version === 'v1' && g.kind === 'Pod'),
  )!;
  assert.equal(podName, POD);
  const containers = deref(deref(schemas[POD].properties.spec).properties.containers);
  assert.equal(containers.type, 'array');
  assert.equal(containers['x-kubernetes-patch-merge-key'], 'name');
  const container = deref(containers.items);
  assert.deepEqual(container.required, ['name']);
  assert.equal(container.properties.image.type, 'string');
  assert.equal(
    deref(container.properties.resources).properties.limits.additionalProperties.$ref,
    '#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity',
  );
  assert.equal(deref(deref(schemas[POD].properties.metadata).properties.creationTimestamp).format, 'date-time');
});

test('the api, apis and version documents hold their one path and its schema', () => {
  const cases: [string, string, string][] = [
    ['api', '/api/', 'io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions'],
    ['apis', '/apis/', 'io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList'],
    ['version', '/version/', 'io.k8s.apimachinery.pkg.version.Info'],
  ];
  for (const [name, path, schema] of cases) {
    const doc = openapiV3Doc(name) as Obj;
    assert.deepEqual(Object.keys(doc.paths), [path]);
    assert.ok(doc.components.schemas[schema], `${name} lacks ${schema}`);
    assert.equal(doc.components.schemas[POD], undefined);
  }
});

/** Each field of a protobuf message: number, wire type and, for length-delimited ones, the bytes (a wire walk, no schema). */
function wireFields(buf: Uint8Array): { no: number; bytes?: Uint8Array; value?: number }[] {
  const r = protobuf.Reader.create(buf);
  const out: { no: number; bytes?: Uint8Array; value?: number }[] = [];
  while (r.pos < r.len) {
    const tag = r.uint32();
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 2) out.push({ no, bytes: r.bytes() });
    else if (wire === 0) out.push({ no, value: r.uint64() as unknown as number });
    else r.skipType(wire);
  }
  return out;
}
const text = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('utf8');
const field = (fields: ReturnType<typeof wireFields>, no: number) => fields.filter((f) => f.no === no);

test("/openapi/v2 in protobuf carries gnostic's field numbers: swagger 1, paths 8, definitions 9; a schema's type 22, properties 25, extensions 31", () => {
  const served = openapiV2Served(OPENAPI_V2_PROTOBUF);
  assert.equal(served.contentType, 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
  const doc = wireFields(served.body);
  assert.equal(text(field(doc, 1)[0]?.bytes), '2.0');
  assert.equal(field(doc, 8).length, 1);
  // Definitions (9) holds NamedSchema (1): name 1, Schema 2.
  const named = wireFields(field(doc, 9)[0]!.bytes!).map((f) => wireFields(f.bytes!));
  const pod = named.find((n) => text(field(n, 1)[0]?.bytes) === POD);
  assert.ok(pod, 'the Pod definition');
  const schema = wireFields(field(pod, 2)[0]!.bytes!);
  assert.equal(text(wireFields(field(schema, 22)[0]!.bytes!)[0]?.bytes), 'object', 'TypeItem.value');
  const props = wireFields(field(schema, 25)[0]!.bytes!).map((f) => text(field(wireFields(f.bytes!), 1)[0]?.bytes));
  assert.deepEqual(props.sort(), ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
  // The GVK extension: NamedAny (name 1, Any 2) whose Any carries YAML at 2.
  const ext = field(schema, 31).map((f) => wireFields(f.bytes!));
  const gvk = ext.find((e) => text(field(e, 1)[0]?.bytes) === 'x-kubernetes-group-version-kind');
  assert.deepEqual(JSON.parse(text(field(wireFields(field(gvk!, 2)[0]!.bytes!), 2)[0]?.bytes)), [
    { group: '', kind: 'Pod', version: 'v1' },
  ]);
  // A $ref is Schema field 1: PodSpec's containers' items.
  const spec = named.find((n) => text(field(n, 1)[0]?.bytes) === 'io.k8s.api.core.v1.PodSpec')!;
  const specProps = wireFields(field(wireFields(field(spec, 2)[0]!.bytes!), 25)[0]!.bytes!).map((f) => wireFields(f.bytes!));
  const containers = wireFields(
    field(
      specProps.find((p) => text(field(p, 1)[0]?.bytes) === 'containers')!,
      2,
    )[0]!.bytes!,
  );
  const items = wireFields(wireFields(field(containers, 23)[0]!.bytes!)[0]!.bytes!);
  assert.equal(text(field(items, 1)[0]?.bytes), '#/definitions/io.k8s.api.core.v1.Container');
});

test('/openapi/v2 in protobuf says what the JSON says: every definition and path, and a PATCH with its fieldValidation parameter', () => {
  const json = JSON.parse(openapiV2Served('application/json').body.toString('utf8')) as Obj;
  const type = documentType();
  const doc = type.toObject(type.decode(openapiV2Served(OPENAPI_V2_PROTOBUF).body)) as Obj;
  assert.deepEqual(
    doc.definitions.additionalProperties.map((d: Obj) => d.name),
    Object.keys(json.definitions),
  );
  const pods = doc.paths.path.find((p: Obj) => p.name === '/api/v1/namespaces/{namespace}/pods/{name}').value;
  const params = pods.patch.parameters.map((p: Obj) => p.parameter.nonBodyParameter?.queryParameterSubSchema?.name).filter(Boolean);
  assert.ok(params.includes('fieldValidation'), params.join(','));
  const ext = Object.fromEntries(pods.patch.vendorExtension.map((e: Obj) => [e.name, JSON.parse(e.value.yaml)]));
  assert.deepEqual(ext['x-kubernetes-group-version-kind'], { group: '', kind: 'Pod', version: 'v1' });
  assert.equal(ext['x-kubernetes-action'], 'patch');
});
