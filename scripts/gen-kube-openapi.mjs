// Reduces a Kubernetes OpenAPI v2 document (the API server's swagger.json) to what the agent's Kubernetes API
// serves: the core/v1 kinds it has, the meta/v1 types they use, and the CRUD paths of their resources. It keeps
// the schema structure (types, refs, required, enums) and every x-kubernetes-* extension, which carry the patch
// strategies and merge keys the strategic merge patch reads, and drops all descriptions.
//
//   node scripts/gen-kube-openapi.mjs <swagger.json>   -> src/core/kubeapi/openapi/core-v1.json
//
// Not part of `npm run build`: the output is committed, since CI has no network to fetch the swagger from.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'src/core/kubeapi/openapi/core-v1.json');
const [source] = process.argv.slice(2);
if (!source) {
  console.error('usage: node scripts/gen-kube-openapi.mjs <swagger.json>  (a Kubernetes OpenAPI v2 document)');
  process.exit(2);
}
const swagger = JSON.parse(readFileSync(source, 'utf8'));
if (swagger.swagger !== '2.0' || typeof swagger.definitions !== 'object' || typeof swagger.paths !== 'object') {
  console.error(`${source}: not an OpenAPI v2 document (expected "swagger": "2.0" with definitions and paths)`);
  process.exit(1);
}

const KINDS = ['Pod', 'ConfigMap', 'Secret', 'Event', 'Node', 'Namespace'];
const RESOURCES = { pods: true, configmaps: true, secrets: true, events: true, namespaces: false, nodes: false };
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.';
const EXTRA_DEFINITIONS = ['Status', 'DeleteOptions', 'WatchEvent', 'Patch', 'APIResourceList'].map((n) => META + n);

// The served paths: list (all namespaces), namespaced collection and item, and the cluster-scoped ones.
const paths = ['/api/', '/apis/', '/version/'];
for (const [resource, namespaced] of Object.entries(RESOURCES)) {
  if (namespaced)
    paths.push(`/api/v1/${resource}`, `/api/v1/namespaces/{namespace}/${resource}`, `/api/v1/namespaces/{namespace}/${resource}/{name}`);
  else paths.push(`/api/v1/${resource}`, `/api/v1/${resource}/{name}`);
}

const SCHEMA_KEYS = new Set(['type', 'format', 'items', '$ref', 'properties', 'required', 'additionalProperties', 'enum', 'allOf']);
function schema(s) {
  if (Array.isArray(s)) return s.map(schema);
  if (!s || typeof s !== 'object') return s;
  const o = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'properties') o[k] = Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, schema(ps)]));
    else if (k === 'x-kubernetes-group-version-kind') o[k] = v.filter((g) => g.group === '' && g.version === 'v1');
    else if (SCHEMA_KEYS.has(k) || k.startsWith('x-kubernetes-')) o[k] = schema(v);
  }
  return o;
}

function parameter(p) {
  const resolved = p.$ref ? swagger.parameters[p.$ref.replace('#/parameters/', '')] : p;
  if (!resolved) throw new Error(`${source}: parameter ${p.$ref} is not defined`);
  const o = { name: resolved.name, in: resolved.in };
  for (const k of ['required', 'type', 'uniqueItems']) if (resolved[k] !== undefined) o[k] = resolved[k];
  if (resolved.schema) o.schema = schema(resolved.schema);
  return o;
}

// The agent speaks JSON (and YAML to apply), not protobuf or CBOR: those media types are not advertised.
const NOT_SERVED = /protobuf|cbor/;
const OPERATION_KEYS = ['operationId', 'consumes', 'produces', 'tags', 'x-kubernetes-action', 'x-kubernetes-group-version-kind'];
function operation(op) {
  const o = {};
  for (const k of OPERATION_KEYS) if (op[k] !== undefined) o[k] = op[k];
  for (const k of ['consumes', 'produces']) if (o[k]) o[k] = o[k].filter((t) => !NOT_SERVED.test(t));
  if (op.parameters) o.parameters = op.parameters.map(parameter);
  o.responses = Object.fromEntries(
    Object.entries(op.responses).map(([code, r]) => [
      code,
      { description: r.description, ...(r.schema ? { schema: schema(r.schema) } : {}) },
    ]),
  );
  return o;
}

const outPaths = {};
for (const p of paths) {
  const item = swagger.paths[p];
  if (!item) throw new Error(`${source}: has no path ${p}`);
  const o = {};
  for (const [method, op] of Object.entries(item)) o[method] = method === 'parameters' ? op.map(parameter) : operation(op);
  outPaths[p] = o;
}

// Every definition reachable from the kinds, their lists and the paths.
const wanted = new Set(EXTRA_DEFINITIONS);
for (const [name, d] of Object.entries(swagger.definitions)) {
  const gvks = d['x-kubernetes-group-version-kind'] ?? [];
  if (gvks.some((g) => g.group === '' && g.version === 'v1' && KINDS.some((k) => g.kind === k || g.kind === k + 'List'))) wanted.add(name);
}
const refs = (v, acc) => {
  if (Array.isArray(v)) v.forEach((x) => refs(x, acc));
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref') acc.push(x);
      else refs(x, acc);
    }
  return acc;
};
const queue = [...wanted, ...refs(outPaths, []).map((r) => r.replace('#/definitions/', ''))];
const definitions = {};
while (queue.length) {
  const name = queue.shift();
  if (definitions[name]) continue;
  const d = swagger.definitions[name];
  if (!d) throw new Error(`${source}: definition ${name} is referenced but not defined`);
  definitions[name] = schema(d);
  for (const r of refs(definitions[name], [])) queue.push(r.replace('#/definitions/', ''));
}
const sorted = Object.fromEntries(
  Object.keys(definitions)
    .sort()
    .map((k) => [k, definitions[k]]),
);

const doc = {
  'x-podctl-source':
    'Generated by scripts/gen-kube-openapi.mjs from the Kubernetes 1.35 OpenAPI v2 document (descriptions dropped). Do not edit by hand.',
  definitions: sorted,
  paths: outPaths,
};
const text = JSON.stringify(doc) + '\n';
writeFileSync(out, text);
console.log(`kube openapi: ${Object.keys(sorted).length} definitions, ${paths.length} paths, ${text.length} bytes -> ${out}`);
