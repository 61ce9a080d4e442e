import type { IncomingMessage } from 'node:http';
import type { IPod } from 'kubernetes-models/v1';
import type { NodeInfo } from '../admission.js';
import { ApiError, type NodeAgent } from '../node/agent.js';
import { parseManifestText } from '../pod/index.js';
import { referencedObjects } from '../pod/references.js';
import { validatePodUpdate } from './pod-update.js';
import { isDryRun, parseJSONObject, secondsParam, type ResourcePath } from './request.js';
import { KubeStatusError, alreadyExists, badRequest, invalid, notFound } from './status.js';
import type { WatchCache } from './store.js';
import type { ObjectFiles } from './object-files.js';
import { POD_META } from './feed.js';
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

const POD_SCHEMA = 'io.k8s.api.core.v1.Pod';

export interface PodWriteContext {
  agent: NodeAgent;
  cache: WatchCache;
  /** Where what the API server would keep of a pod and the agent does not (managedFields, creationTimestamp) is kept. */
  files: ObjectFiles;
  nodeName: string;
  admission: { allowPrivileged: boolean; node: NodeInfo };
  now: () => number;
}

export interface WriteAnswer {
  code: number;
  object: unknown;
  warnings: string[];
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Fields the API server sets and a manifest handed to the agent must not carry; ephemeral containers
 * are the runtime's (pods/ephemeralcontainers), never part of the pod a source describes.
 */
function forTheAgent(pod: KubeObject): KubeObject {
  const { status: _status, ...rest } = pod;
  const { resourceVersion: _rv, ...metadata } = rest.metadata ?? {};
  const spec = rest.spec as Record<string, unknown> | undefined;
  if (spec && 'ephemeralContainers' in spec) {
    const { ephemeralContainers: _ephemeral, ...others } = spec;
    return { ...rest, spec: others, apiVersion: 'v1', kind: 'Pod', metadata };
  }
  return { ...rest, apiVersion: 'v1', kind: 'Pod', metadata };
}

/** Drops each unknown field (a path such as spec.containers[0].foo) from a copy of obj, as the API server's decoder drops them. */
function dropFields(obj: KubeObject, paths: string[]): KubeObject {
  const copy = structuredClone(obj);
  for (const path of paths) {
    const steps = path.match(/[^.[\]]+/g) ?? [];
    let at: unknown = copy;
    for (const step of steps.slice(0, -1)) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[step] : undefined;
    if (at && typeof at === 'object') delete (at as Record<string, unknown>)[steps.at(-1)!];
  }
  return copy;
}

/**
 * The pod validated as podctl validates a manifest, answered as the API server answers: a field
 * error is a 422 Invalid naming it; an unknown field is a 400 strict decoding error under
 * fieldValidation=Strict, a warning under Warn (the default), dropped either way.
 */
function validatePod(pod: KubeObject, url: URL, nodeName: string, live?: KubeObject): { pod: KubeObject; warnings: string[] } {
  const mode = url.searchParams.get('fieldValidation') ?? 'Warn';
  if (!['Strict', 'Warn', 'Ignore'].includes(mode))
    throw badRequest(`fieldValidation: Unsupported value: ${JSON.stringify(mode)}: supported values: "Ignore", "Strict", "Warn"`);
  const name = String(pod.metadata?.name ?? '');
  const parsed = parseManifestText(
    JSON.stringify(pod),
    { kind: 'file', path: 'request', display: 'request' },
    { nodeName, unknownFields: 'warn' },
  );
  const unknown = parsed.problems.filter((p) => p.message.startsWith('unknown field')).map((p) => p.field);
  if (unknown.length && mode === 'Strict')
    throw badRequest(
      `Pod in version "v1" cannot be handled as a Pod: strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`,
    );
  const errors = parsed.problems.filter((p) => p.severity === 'error' && !p.message.startsWith('unknown field'));
  if (errors.length)
    throw invalid(
      'Pod',
      name,
      errors.map((p) => ({ field: p.field || 'metadata', message: p.message })),
    );
  const serverSet =
    /^metadata\.(creationTimestamp|managedFields|uid|resourceVersion|generation|deletionTimestamp|deletionGracePeriodSeconds)\b/;
  const warnings = [
    ...(mode === 'Warn' ? unknown.map((f) => `unknown field "${f}"`) : []),
    ...parsed.problems
      .filter((p) => p.severity === 'warning' && !p.message.startsWith('unknown field') && !serverSet.test(p.field))
      .map((p) => `${p.field}: ${p.message}`),
  ];
  // An update is warned of what it brings, not of what the live pod already had (its defaults among them).
  const had = live
    ? new Set(validatePod(forTheAgent(live), new URL('https://podctl/?fieldValidation=Ignore'), nodeName).warnings)
    : undefined;
  return { pod: unknown.length ? dropFields(pod, unknown) : pod, warnings: had ? warnings.filter((w) => !had.has(w)) : warnings };
}

/** The ConfigMaps and Secrets of its namespace a pod names, from the API's store: they go with it into its applied file. */
function objectsFor(ctx: PodWriteContext, pod: KubeObject): KubeObject[] {
  const ns = String(pod.metadata?.namespace);
  const refs = referencedObjects((pod as IPod).spec!);
  const found: KubeObject[] = [];
  for (const name of refs.configMaps) {
    const o = ctx.cache.get('configmaps', ns, name);
    if (o) found.push({ ...(o as KubeObject), apiVersion: 'v1', kind: 'ConfigMap' });
  }
  for (const name of refs.secrets) {
    const o = ctx.cache.get('secrets', ns, name);
    if (o) found.push({ ...(o as KubeObject), apiVersion: 'v1', kind: 'Secret' });
  }
  return found;
}

/** The agent's refusals, in the API server's words. */
function fromApiError(err: unknown, name: string): never {
  if (!(err instanceof ApiError)) throw err;
  if (err.status === 400) throw invalid('Pod', name, [{ field: 'spec', message: err.message }]);
  if (err.status === 403) {
    const rejected = (err.details.rejected as { reason: string; message: string }[] | undefined)?.[0];
    throw new KubeStatusError(
      403,
      'Forbidden',
      `pods "${name}" is forbidden: ${rejected ? `${rejected.reason}: ${rejected.message}` : err.message}`,
      {
        name,
        kind: 'pods',
      },
    );
  }
  if (err.status === 404) throw notFound('pods', name);
  if (err.status === 409)
    throw new KubeStatusError(409, 'Conflict', `Operation cannot be fulfilled on pods "${name}": ${err.message}`, { name, kind: 'pods' });
  throw new KubeStatusError(err.status, 'InternalError', err.message);
}

/**
 * Hands the pod to the agent as `run --detach` hands one over (the applied store, admission, events),
 * with the ConfigMaps and Secrets it names; the cache shows the new version at once, and the agent's
 * own changes of it follow through its watch.
 */
async function handOver(ctx: PodWriteContext, pod: KubeObject, user: string): Promise<KubeObject> {
  const meta = pod.metadata!;
  const text = [forTheAgent(pod), ...objectsFor(ctx, pod)].map((d) => JSON.stringify(d)).join('\n---\n');
  try {
    const answer = await ctx.agent.applyManifests({
      manifests: { entries: [{ kind: 'file', path: `the Kubernetes API (${user})`, display: `the Kubernetes API (${user})`, text }] },
      nodeName: ctx.nodeName,
      admission: ctx.admission,
    });
    const ref = answer.pods[0]!;
    const running = ctx.agent.pods().find((p) => p.metadata?.namespace === meta.namespace && p.metadata?.name === meta.name);
    const previous = ctx.cache.get('pods', String(meta.namespace), String(meta.name)) as KubeObject | undefined;
    const object: KubeObject =
      running && running.metadata?.generation === ref.generation
        ? ({ ...running, metadata: { ...running.metadata, creationTimestamp: meta['creationTimestamp'] } } as KubeObject)
        : {
            ...forTheAgent(pod),
            metadata: { ...forTheAgent(pod).metadata, uid: ref.uid, generation: ref.generation },
            status: (previous?.status as object | undefined) ?? { phase: 'Pending' },
          };
    const m = object.metadata!;
    const kept = {
      metadata: {
        namespace: m.namespace,
        name: m.name,
        uid: m.uid,
        creationTimestamp: meta['creationTimestamp'] ?? m['creationTimestamp'],
        managedFields: meta.managedFields,
      },
    };
    ctx.files.save(POD_META, kept);
    ctx.cache.put(POD_META, kept);
    return ctx.cache.put('pods', {
      ...object,
      metadata: { ...object.metadata, managedFields: meta.managedFields },
    }) as KubeObject;
  } catch (err) {
    fromApiError(err, String(meta.name));
  }
}

/** POST .../pods */
export async function createPod(
  ctx: PodWriteContext,
  req: IncomingMessage,
  path: ResourcePath,
  url: URL,
  text: string,
  user: string,
): Promise<WriteAnswer> {
  const body = parseJSONObject(text) as KubeObject;
  checkKind(body, 'Pod');
  checkIdentity(body, path.namespace, undefined);
  const meta = { ...body.metadata };
  if (!meta.name && meta.generateName) meta.name = generatedName(String(meta.generateName));
  if (!meta.name)
    throw invalid('Pod', '', [
      { field: 'metadata.name', message: 'Required value: name or generateName is required', reason: 'FieldValueRequired' },
    ]);
  if (ctx.cache.get('pods', path.namespace!, meta.name)) throw alreadyExists('pods', meta.name);
  const now = iso(ctx.now());
  let pod: KubeObject = { ...body, metadata: { ...meta, namespace: path.namespace, creationTimestamp: now } };
  pod = recordWrite(req, url, undefined, pod, POD_SCHEMA, now);
  const checked = validatePod(pod, url, ctx.nodeName);
  if (isDryRun(url)) return { code: 201, object: checked.pod, warnings: checked.warnings };
  return { code: 201, object: await handOver(ctx, checked.pod, user), warnings: checked.warnings };
}

function livePod(ctx: PodWriteContext, path: ResourcePath): KubeObject {
  const live = ctx.cache.get('pods', path.namespace!, path.name!) as KubeObject | undefined;
  if (!live) throw notFound('pods', path.name!);
  return live;
}

/** A new version of a live pod: the API server's update rules, then handed over (nothing when nothing changed). */
async function updatePod(ctx: PodWriteContext, live: KubeObject, next: KubeObject, url: URL, user: string): Promise<WriteAnswer> {
  // Status and what the server set come from the live pod: an update changes the spec and metadata only.
  const meta = live.metadata!;
  const merged: KubeObject = {
    ...next,
    metadata: { ...next.metadata, namespace: meta.namespace, name: meta.name, uid: meta.uid, creationTimestamp: meta['creationTimestamp'] },
    status: live.status,
  };
  validatePodUpdate(live, merged, { allowResize: true });
  const checked = validatePod(forTheAgent(merged), url, ctx.nodeName, live);
  if (isDryRun(url)) return { code: 200, object: { ...checked.pod, status: live.status }, warnings: checked.warnings };
  return { code: 200, object: await handOver(ctx, checked.pod, user), warnings: checked.warnings };
}

/** PUT .../pods/NAME */
export async function replacePod(
  ctx: PodWriteContext,
  req: IncomingMessage,
  path: ResourcePath,
  url: URL,
  text: string,
  user: string,
): Promise<WriteAnswer> {
  const body = parseJSONObject(text) as KubeObject;
  checkKind(body, 'Pod');
  checkIdentity(body, path.namespace, path.name);
  const live = livePod(ctx, path);
  checkResourceVersion('pods', live, body);
  const next = recordWrite(req, url, live, body, POD_SCHEMA, iso(ctx.now()));
  return updatePod(ctx, live, next, url, user);
}

/** PATCH .../pods/NAME: strategic merge (kubectl apply), JSON merge, JSON patch, or server-side apply (which may create). */
export async function patchPod(
  ctx: PodWriteContext,
  req: IncomingMessage,
  path: ResourcePath,
  url: URL,
  body: { text: string; contentType: string },
  user: string,
): Promise<WriteAnswer> {
  const live = ctx.cache.get('pods', path.namespace!, path.name!) as KubeObject | undefined;
  const now = iso(ctx.now());
  const { object, created } = patchObject({
    req,
    url,
    contentType: body.contentType,
    text: body.text,
    live,
    kind: 'Pod',
    schema: POD_SCHEMA,
    resource: 'pods',
    name: path.name!,
    now,
  });
  checkIdentity(object, path.namespace, path.name);
  if (created) {
    const pod: KubeObject = {
      ...object,
      metadata: { ...object.metadata, name: path.name, namespace: path.namespace, creationTimestamp: now },
    };
    const checked = validatePod(pod, url, ctx.nodeName);
    if (isDryRun(url)) return { code: 201, object: checked.pod, warnings: checked.warnings };
    return { code: 201, object: await handOver(ctx, checked.pod, user), warnings: checked.warnings };
  }
  return updatePod(ctx, live!, object, url, user);
}

/**
 * DELETE .../pods/NAME: the agent forgets the pod and terminates it with its grace period (or the one
 * given); the answer is the pod with its deletionTimestamp, and the watch says DELETED once it is gone.
 */
export async function deletePod(ctx: PodWriteContext, path: ResourcePath, url: URL, text: string): Promise<WriteAnswer> {
  const live = livePod(ctx, path);
  let grace = secondsParam(url, 'gracePeriodSeconds');
  const opts = deleteOptions(text, live);
  if (opts.gracePeriodSeconds !== undefined) grace = opts.gracePeriodSeconds;
  if (isDryRun(url)) return { code: 200, object: live, warnings: [] };
  if (grace !== undefined && grace < 0) grace = undefined;
  let deleted;
  try {
    deleted = await ctx.agent.delete(path.namespace!, path.name!, grace);
  } catch (err) {
    fromApiError(err, path.name!);
  }
  const spec = live.spec as { terminationGracePeriodSeconds?: number } | undefined;
  const seconds = grace ?? spec?.terminationGracePeriodSeconds ?? 30;
  if (!deleted.uid) {
    ctx.cache.remove('pods', path.namespace!, path.name!);
    return { code: 200, object: live, warnings: [] };
  }
  const meta = live.metadata as Record<string, unknown>;
  const generation = meta['generation'] as number | undefined;
  const terminating: KubeObject = {
    ...live,
    metadata: {
      ...meta,
      deletionTimestamp: meta['deletionTimestamp'] ?? iso(ctx.now() + seconds * 1000),
      deletionGracePeriodSeconds: seconds,
      // The API server's first graceful deletion is a new generation: what the pod is meant to do has changed.
      ...(!meta['deletionTimestamp'] && generation && generation > 0 ? { generation: generation + 1 } : {}),
    },
  };
  return { code: 200, object: ctx.cache.put('pods', terminating), warnings: [] };
}
