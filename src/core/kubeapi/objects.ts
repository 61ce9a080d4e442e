import type { IncomingMessage } from 'node:http';
import type { ObjectFiles } from './object-files.js';
import { isDryRun, parseJSONObject, type ResourcePath } from './request.js';
import { alreadyExists, badRequest, invalid, notFound } from './status.js';
import type { WatchCache } from './store.js';
import { uidOf } from './feed.js';
import {
  checkIdentity,
  checkKind,
  deleteOptions,
  checkResourceVersion,
  generatedName,
  patchObject,
  recordWrite,
  type KubeObject,
} from './writes.js';
import type { WriteAnswer } from './pods.js';

/** The kinds the API itself keeps (the objects pods refer to, the Namespaces clients make), persisted under the root dir. */
const KINDS = {
  configmaps: { kind: 'ConfigMap', schema: 'io.k8s.api.core.v1.ConfigMap' },
  secrets: { kind: 'Secret', schema: 'io.k8s.api.core.v1.Secret' },
  namespaces: { kind: 'Namespace', schema: 'io.k8s.api.core.v1.Namespace' },
} as const;

export type ObjectResource = keyof typeof KINDS;

export interface ObjectWriteContext {
  cache: WatchCache;
  files: ObjectFiles;
  now: () => number;
  /** After a write: namespaces in use may have changed, and the agent reads the objects anew. */
  changed?: () => void;
  /** The Namespaces clients made (the rest are those in use): kept until deleted, in use or not. */
  declared?: Set<string>;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DATA_KEY = /^[-._a-zA-Z0-9]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The API server's validation of a ConfigMap or Secret (name, keys, base64 data, size), as its messages word it. */
function validate(resource: ObjectResource, obj: KubeObject, live?: KubeObject): KubeObject {
  const { kind } = KINDS[resource];
  const name = String(obj.metadata?.name ?? '');
  const causes: { field: string; message: string; reason?: string }[] = [];
  if (!name)
    causes.push({ field: 'metadata.name', message: 'Required value: name or generateName is required', reason: 'FieldValueRequired' });
  else if (resource === 'namespaces') {
    if (name.length > 63 || !DNS_LABEL.test(name))
      causes.push({
        field: 'metadata.name',
        message:
          `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or ` +
          `'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is ` +
          `'[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
      });
  } else if (name.length > 253 || !DNS_SUBDOMAIN.test(name))
    causes.push({
      field: 'metadata.name',
      message:
        `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, ` +
        `'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is ` +
        `'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    });
  let out = obj;
  if (resource === 'namespaces') {
    // As the API server's: the name label its admission sets, the kubernetes finalizer, Active until deleted.
    const meta = obj.metadata ?? {};
    out = {
      ...obj,
      metadata: { ...meta, labels: { ...(meta.labels as Record<string, string> | undefined), 'kubernetes.io/metadata.name': name } },
      spec: { finalizers: ['kubernetes'] },
      status: (live?.status as object | undefined) ?? { phase: 'Active' },
    };
  }
  if (resource === 'secrets') {
    // stringData is write-only: merged into data, base64-encoded, as the API server does.
    const { stringData, ...rest } = obj as KubeObject & { stringData?: Record<string, string>; data?: Record<string, string> };
    const data = { ...(rest.data as Record<string, string> | undefined) };
    for (const [k, v] of Object.entries(stringData ?? {})) data[k] = Buffer.from(String(v)).toString('base64');
    out = { ...rest, type: (rest.type as string | undefined) ?? 'Opaque', ...(Object.keys(data).length ? { data } : {}) };
    for (const [k, v] of Object.entries(data))
      if (typeof v !== 'string' || !BASE64.test(v))
        causes.push({ field: `data[${k}]`, message: 'Invalid value: "<secret contents redacted>": illegal base64 data' });
    if (live && live.type !== out.type)
      causes.push({ field: 'type', message: `Invalid value: ${JSON.stringify(out.type)}: field is immutable` });
  }
  for (const field of resource === 'secrets' ? ['data'] : ['data', 'binaryData']) {
    for (const k of Object.keys((out[field] as object | undefined) ?? {}))
      if (!DATA_KEY.test(k) || k.length > 253)
        causes.push({
          field: `${field}[${k}]`,
          message: `Invalid value: ${JSON.stringify(k)}: a valid config key must consist of alphanumeric characters, '-', '_' or '.'`,
        });
  }
  if (live?.immutable === true) {
    const same = (f: string) => JSON.stringify(live[f] ?? null) === JSON.stringify(out[f] ?? null);
    for (const f of ['data', 'binaryData'].filter((x) => !same(x)))
      causes.push({ field: f, message: 'Forbidden: field is immutable when `immutable` is set' });
    if (out.immutable !== true) causes.push({ field: 'immutable', message: 'Forbidden: field is immutable when `immutable` is set' });
  }
  if (Buffer.byteLength(JSON.stringify({ d: out.data ?? {}, b: out.binaryData ?? {} })) > 1 << 20)
    causes.push({ field: 'data', message: 'Too long: must have at most 1048576 bytes', reason: 'FieldValueTooLong' });
  if (causes.length) throw invalid(kind, name, causes);
  return out;
}

function store(ctx: ObjectWriteContext, resource: ObjectResource, obj: KubeObject): KubeObject {
  const stored = ctx.cache.put(resource, obj) as KubeObject;
  // A terminating namespace stays that, whatever a client writes on it, and goes once its content is gone: not kept.
  if (resource !== 'namespaces' || !stored.metadata?.deletionTimestamp) {
    ctx.files.save(resource, stored);
    if (resource === 'namespaces') ctx.declared?.add(String(stored.metadata?.name));
  }
  ctx.changed?.();
  return stored;
}

/** POST .../configmaps|secrets */
export function createObject(
  ctx: ObjectWriteContext,
  resource: ObjectResource,
  req: IncomingMessage,
  path: ResourcePath,
  url: URL,
  text: string,
): WriteAnswer {
  const { kind, schema } = KINDS[resource];
  const body = parseJSONObject(text) as KubeObject;
  checkKind(body, kind);
  checkIdentity(body, path.namespace, undefined);
  const meta = { ...body.metadata };
  if (!meta.name && meta.generateName) meta.name = generatedName(String(meta.generateName));
  if (meta.name && ctx.cache.get(resource, path.namespace, meta.name)) throw alreadyExists(resource, meta.name);
  const now = iso(ctx.now());
  const { resourceVersion: _rv, ...clean } = meta;
  let obj: KubeObject = {
    ...body,
    apiVersion: 'v1',
    kind,
    metadata: {
      ...clean,
      ...(path.namespace === undefined ? {} : { namespace: path.namespace }),
      uid: uidOf(`${resource}/${path.namespace}/${meta.name}/${now}/${Math.random()}`),
      creationTimestamp: now,
    },
  };
  obj = validate(resource, recordWrite(req, url, undefined, obj, schema, now));
  if (isDryRun(url)) return { code: 201, object: obj, warnings: [] };
  return { code: 201, object: store(ctx, resource, obj), warnings: [] };
}

function live(ctx: ObjectWriteContext, resource: ObjectResource, path: ResourcePath): KubeObject {
  const o = ctx.cache.get(resource, path.namespace, path.name!) as KubeObject | undefined;
  if (!o) throw notFound(resource, path.name!);
  return o;
}

/** The server's own metadata stays the live object's whatever an update sends. */
function keepServerFields(old: KubeObject, next: KubeObject): KubeObject {
  const m = old.metadata!;
  return {
    ...next,
    metadata: { ...next.metadata, namespace: m.namespace, name: m.name, uid: m.uid, creationTimestamp: m['creationTimestamp'] },
  };
}

/** PUT .../configmaps|secrets/NAME */
export function replaceObject(
  ctx: ObjectWriteContext,
  resource: ObjectResource,
  req: IncomingMessage,
  path: ResourcePath,
  url: URL,
  text: string,
): WriteAnswer {
  const { kind, schema } = KINDS[resource];
  const body = parseJSONObject(text) as KubeObject;
  checkKind(body, kind);
  checkIdentity(body, path.namespace, path.name);
  const old = live(ctx, resource, path);
  checkResourceVersion(resource, old, body);
  const obj = validate(
    resource,
    keepServerFields(old, recordWrite(req, url, old, { ...body, apiVersion: 'v1', kind }, schema, iso(ctx.now()))),
    old,
  );
  if (isDryRun(url)) return { code: 200, object: obj, warnings: [] };
  return { code: 200, object: store(ctx, resource, obj), warnings: [] };
}

/** PATCH .../configmaps|secrets/NAME (server-side apply may create). */
export function patchObjectWrite(
  ctx: ObjectWriteContext,
  resource: ObjectResource,
  req: IncomingMessage,
  path: ResourcePath,
  url: URL,
  body: { text: string; contentType: string },
): WriteAnswer {
  const { kind, schema } = KINDS[resource];
  const old = ctx.cache.get(resource, path.namespace, path.name!) as KubeObject | undefined;
  const now = iso(ctx.now());
  const { object, created } = patchObject({
    req,
    url,
    contentType: body.contentType,
    text: body.text,
    live: old,
    kind,
    schema,
    resource,
    name: path.name!,
    now,
  });
  checkIdentity(object, path.namespace, path.name);
  let obj: KubeObject = { ...object, apiVersion: 'v1', kind };
  obj = created
    ? {
        ...obj,
        metadata: {
          ...obj.metadata,
          name: path.name,
          ...(path.namespace === undefined ? {} : { namespace: path.namespace }),
          uid: uidOf(`${resource}/${path.namespace}/${path.name}/${now}`),
          creationTimestamp: now,
        },
      }
    : keepServerFields(old!, obj);
  obj = validate(resource, obj, old);
  if (isDryRun(url)) return { code: created ? 201 : 200, object: obj, warnings: [] };
  return { code: created ? 201 : 200, object: store(ctx, resource, obj), warnings: [] };
}

/** DELETE .../configmaps|secrets/NAME: gone at once (they have no finalizers here); the answer is a Success Status, as the API server's. */
export function deleteObject(ctx: ObjectWriteContext, resource: ObjectResource, path: ResourcePath, url: URL, text = ''): WriteAnswer {
  const old = live(ctx, resource, path);
  deleteOptions(text, old);
  if (isDryRun(url)) return { code: 200, object: old, warnings: [] };
  ctx.cache.remove(resource, path.namespace!, path.name!);
  ctx.files.delete(resource, path.namespace!, path.name!);
  ctx.changed?.();
  return {
    code: 200,
    object: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: { name: path.name, kind: resource, uid: old.metadata?.uid },
    },
    warnings: [],
  };
}

export function isObjectResource(resource: string): resource is ObjectResource {
  return resource in KINDS;
}

export { badRequest };
