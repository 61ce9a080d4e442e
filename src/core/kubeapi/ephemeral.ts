import type { IncomingMessage } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import type { IEphemeralContainer, IPod } from 'kubernetes-models/v1';
import { ApiError, type NodeAgent } from '../node/agent.js';
import { parseManifestText } from '../pod/index.js';
import { isDryRun, parseJSONObject, type ResourcePath } from './request.js';
import { KubeStatusError, invalid, notFound } from './status.js';
import type { WatchCache } from './store.js';
import { checkIdentity, checkKind, checkResourceVersion, patchObject, type KubeObject } from './writes.js';

const POD_SCHEMA = 'io.k8s.api.core.v1.Pod';

export interface EphemeralContext {
  agent: NodeAgent;
  cache: WatchCache;
  nodeName: string;
  now: () => number;
}

type FieldError = { field: string; message: string; reason: string };

/**
 * Fields an ephemeral container may not set (the API server's allowedEphemeralContainerFields, its
 * false entries): it must not be relied on for the pod's own services.
 */
const NOT_ALLOWED = ['ports', 'resources', 'resizePolicy', 'restartPolicy', 'livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle'];

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

const forbidden = (field: string, detail: string): FieldError => ({
  field,
  message: `Forbidden: ${detail}`,
  reason: 'FieldValueForbidden',
});

/** A field as Go's reflect.IsZero sees a decoded one: absent, null, false, 0, "" or an empty object or list count as unset. */
function isSet(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/**
 * ValidatePodEphemeralContainersUpdate over what the write leaves of spec.ephemeralContainers: the
 * existing ones unchanged and none removed; each added one valid as a container of the pod
 * (podctl's own manifest checks), named uniquely among all its containers, targeting one of its
 * containers, and setting none of the fields an ephemeral container may not have.
 */
export function validateEphemeralContainers(live: IPod, next: IEphemeralContainer[], nodeName: string): FieldError[] {
  const errors: FieldError[] = [];
  const spec = live.spec!;
  const old = spec.ephemeralContainers ?? [];
  const byName = new Map(next.map((c) => [c?.name, c]));
  for (const o of old) {
    const n = byName.get(o.name);
    if (!n)
      errors.push(forbidden('spec.ephemeralContainers', `existing ephemeral containers ${JSON.stringify(o.name)} may not be removed`));
    else if (!isDeepStrictEqual(o, n))
      errors.push(
        forbidden(`spec.ephemeralContainers[${o.name}]`, `existing ephemeral containers ${JSON.stringify(o.name)} may not be changed`),
      );
  }
  const others = new Set([...(spec.initContainers ?? []), ...spec.containers].map((c) => c.name));
  const names = new Set(others);
  next.forEach((ec, i) => {
    const at = `spec.ephemeralContainers[${i}]`;
    if (!ec || typeof ec !== 'object' || Array.isArray(ec)) {
      errors.push({ field: at, message: 'Invalid value: expected an EphemeralContainer object', reason: 'FieldValueInvalid' });
      return;
    }
    const existing = old.find((o) => o.name === ec.name);
    if (!existing) errors.push(...asContainerOfPod(live, ec, at, nodeName));
    if (names.has(ec.name))
      errors.push({ field: `${at}.name`, message: `Duplicate value: ${JSON.stringify(ec.name)}`, reason: 'FieldValueDuplicate' });
    else names.add(ec.name);
    if (existing) return;
    const target = ec.targetContainerName;
    if (target && !others.has(target))
      errors.push({ field: `${at}.targetContainerName`, message: `Not found: ${JSON.stringify(target)}`, reason: 'FieldValueNotFound' });
    for (const f of NOT_ALLOWED)
      if (isSet((ec as unknown as Record<string, unknown>)[f]))
        errors.push(forbidden(`${at}.${f}`, 'cannot be set for an Ephemeral Container'));
    (ec.volumeMounts ?? []).forEach((vm, j) => {
      if (vm?.subPath) errors.push(forbidden(`${at}.volumeMounts[${j}].subPath`, 'cannot be set for an Ephemeral Container'));
      if (vm?.subPathExpr) errors.push(forbidden(`${at}.volumeMounts[${j}].subPathExpr`, 'cannot be set for an Ephemeral Container'));
    });
  });
  return errors;
}

/**
 * The container checked as podctl checks a pod's container (name, image, env, its mounts of the pod's
 * volumes, securityContext), its errors named at its place in spec.ephemeralContainers. The fields
 * only an ephemeral container may not set are left to the allow list, which words them as the API server does.
 */
function asContainerOfPod(live: IPod, ec: IEphemeralContainer, at: string, nodeName: string): FieldError[] {
  const { targetContainerName: _target, ...common } = ec as IEphemeralContainer & Record<string, unknown>;
  for (const f of NOT_ALLOWED) delete common[f];
  const probe = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: live.metadata?.name, namespace: live.metadata?.namespace },
    spec: { containers: [common], volumes: live.spec?.volumes, securityContext: live.spec?.securityContext },
  };
  const parsed = parseManifestText(
    JSON.stringify(probe),
    { kind: 'file', path: 'request', display: 'request' },
    { nodeName, unknownFields: 'warn' },
  );
  const own = 'spec.containers[0]';
  return parsed.problems
    .filter((p) => p.severity === 'error' && (p.field === own || p.field.startsWith(`${own}.`) || p.field.startsWith(`${own}[`)))
    .map((p) => ({ field: `${at}${p.field.slice(own.length)}`, message: p.message, reason: 'FieldValueInvalid' }));
}

/**
 * PATCH or PUT of pods/NAME/ephemeralcontainers (kubectl debug's strategic merge patch adding to
 * spec.ephemeralContainers): only that list is taken from the write, as the API server's
 * ephemeralcontainers strategy takes it; each container added is handed to the agent, which starts it
 * in the pod's sandbox, and the pod is answered with it listed in spec and status.
 */
export async function updateEphemeralContainers(
  ctx: EphemeralContext,
  req: IncomingMessage,
  path: ResourcePath,
  url: URL,
  body: { text: string; contentType: string },
): Promise<{ code: number; object: unknown; warnings: string[] }> {
  const name = path.name!;
  const live = ctx.cache.get('pods', path.namespace!, name) as KubeObject | undefined;
  if (!live) throw notFound('pods', name);
  let next: KubeObject;
  if (req.method === 'PUT') {
    next = parseJSONObject(body.text) as KubeObject;
    checkKind(next, 'Pod');
    checkIdentity(next, path.namespace, name);
    checkResourceVersion('pods', live, next);
  } else {
    next = patchObject({
      req,
      url,
      contentType: body.contentType,
      text: body.text,
      live,
      kind: 'Pod',
      schema: POD_SCHEMA,
      resource: 'pods',
      name,
      now: iso(ctx.now()),
    }).object;
    checkIdentity(next, path.namespace, name);
  }
  const pod = live as IPod;
  const given = (next.spec as { ephemeralContainers?: unknown } | undefined)?.ephemeralContainers ?? [];
  if (!Array.isArray(given))
    throw invalid('Pod', name, [
      { field: 'spec.ephemeralContainers', message: 'Invalid value: expected a list', reason: 'FieldValueInvalid' },
    ]);
  const wanted = given as IEphemeralContainer[];
  const errors = validateEphemeralContainers(pod, wanted, ctx.nodeName);
  if (errors.length) throw invalid('Pod', name, errors);
  const added = wanted.filter((c) => !(pod.spec?.ephemeralContainers ?? []).some((o) => o.name === c.name));
  if (isDryRun(url) || !added.length)
    return { code: 200, object: { ...live, spec: { ...(live.spec as object), ephemeralContainers: wanted } }, warnings: [] };
  let kept: IPod | undefined;
  for (const ec of added) {
    try {
      kept = await ctx.agent.addEphemeralContainer(path.namespace!, name, ec);
    } catch (err) {
      throw fromAgent(err, name);
    }
  }
  // The agent's watch has brought the new version already; a version without the container is never answered.
  const cached = ctx.cache.get('pods', path.namespace!, name) as IPod | undefined;
  const listed = (p: IPod | undefined) => added.every((c) => p?.spec?.ephemeralContainers?.some((e) => e.name === c.name));
  const object = listed(cached)
    ? cached
    : ctx.cache.put('pods', { ...((cached ?? live) as KubeObject), spec: kept!.spec, status: kept!.status });
  return { code: 200, object, warnings: [] };
}

function fromAgent(err: unknown, name: string): KubeStatusError {
  if (!(err instanceof ApiError)) return err instanceof KubeStatusError ? err : new KubeStatusError(500, 'InternalError', String(err));
  if (err.status === 404) return notFound('pods', name);
  if (err.status === 409)
    return new KubeStatusError(409, 'Conflict', `Operation cannot be fulfilled on pods "${name}": ${err.message}`, { name, kind: 'pods' });
  return new KubeStatusError(500, 'InternalError', `Internal error occurred: ${err.message}`);
}
