import type { IncomingMessage } from 'node:http';
import yaml from 'js-yaml';
import { applyPatch } from './patch/index.js';
import { fieldManagerFor, recordUpdate, serverSideApply, validatePatchOptions } from './patch/apply.js';
import { listInfoFor } from './list-info.js';
import { parseJSONObject } from './request.js';
import { KubeStatusError, badRequest, conflict } from './status.js';

export type KubeObject = Record<string, unknown> & {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown> & {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    generateName?: string;
    managedFields?: unknown[];
  };
};

/** The field manager of a write: ?fieldManager, else the client's name from its User-Agent (kubectl's "kubectl-client-side-apply"). */
export function fieldManager(req: IncomingMessage, url: URL): string {
  return fieldManagerFor({ fieldManager: url.searchParams.get('fieldManager'), userAgent: req.headers['user-agent'] });
}

/** What kind and apiVersion a body must have on this path, as the API server decodes it. */
export function checkKind(obj: KubeObject, kind: string): void {
  if (obj.apiVersion !== undefined && obj.apiVersion !== 'v1')
    throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (v1)`);
  if (obj.kind !== undefined && obj.kind !== kind)
    throw badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${kind})`);
}

/** The body's namespace and name against the URL's, as the API server checks them. */
export function checkIdentity(obj: KubeObject, namespace: string | undefined, name: string | undefined): void {
  const meta = obj.metadata ?? {};
  if (namespace !== undefined && meta.namespace && meta.namespace !== namespace)
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  if (name !== undefined && meta.name && meta.name !== name)
    throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${name})`);
}

/** A write's preconditions: an update from an older resourceVersion than the stored one is refused. */
export function checkResourceVersion(resource: string, live: KubeObject, next: KubeObject): void {
  const given = next.metadata?.resourceVersion;
  if (given && given !== live.metadata?.resourceVersion)
    throw conflict(
      resource,
      String(live.metadata?.name),
      'the object has been modified; please apply your changes to the latest version and try again',
    );
}

/** A name made from generateName, as the API server's (five random lowercase letters and digits). */
export function generatedName(prefix: string): string {
  const chars = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (let i = 0; i < 5; i++) s += chars[Math.floor(Math.random() * chars.length)];
  return `${prefix}${s}`;
}

export interface PatchResult {
  object: KubeObject;
  /** An apply that made the object. */
  created: boolean;
}

/**
 * The object a PATCH makes of the live one, by the patch's content type: server-side apply
 * (apply-patch+yaml; it may create), or a strategic merge, JSON merge or JSON patch, recorded as an
 * Update by its field manager.
 */
export function patchObject(opts: {
  req: IncomingMessage;
  url: URL;
  contentType: string;
  text: string;
  live: KubeObject | undefined;
  kind: string;
  schema: string;
  resource: string;
  name: string;
  now: string;
}): PatchResult {
  const { contentType, live } = opts;
  const listInfo = listInfoFor(opts.schema);
  const apply = contentType === 'application/apply-patch+yaml' || contentType === 'application/apply-patch+json';
  validatePatchOptions({ apply, fieldManager: opts.url.searchParams.get('fieldManager'), force: opts.url.searchParams.get('force') });
  if (apply) {
    let applied: unknown;
    try {
      applied = yaml.load(opts.text);
    } catch (err) {
      throw badRequest(`error decoding YAML: ${(err as Error).message}`);
    }
    if (!applied || typeof applied !== 'object' || Array.isArray(applied)) throw badRequest('the apply patch must be an object');
    const manager = opts.url.searchParams.get('fieldManager')!;
    const force = opts.url.searchParams.get('force') === 'true';
    const { object } = serverSideApply({
      live,
      applied: applied as object,
      manager,
      force,
      now: opts.now,
      listInfo,
      operationVersion: 'v1',
      kind: opts.kind,
    });
    return { object: object as KubeObject, created: !live };
  }
  if (!live)
    throw new KubeStatusError(404, 'NotFound', `${opts.resource} "${opts.name}" not found`, { name: opts.name, kind: opts.resource });
  const patched = applyPatch(contentType, live, opts.text, opts.schema) as KubeObject;
  const after = recordUpdate({ before: live, after: patched, manager: fieldManager(opts.req, opts.url), now: opts.now, listInfo });
  return { object: after as KubeObject, created: false };
}

/** A create or replace recorded in managedFields for its manager (operation Update). */
export function recordWrite(
  req: IncomingMessage,
  url: URL,
  before: KubeObject | undefined,
  after: KubeObject,
  schema: string,
  now: string,
): KubeObject {
  return recordUpdate({ before, after, manager: fieldManager(req, url), now, listInfo: listInfoFor(schema) }) as KubeObject;
}

export { parseJSONObject };

/** A DELETE's options (its body, when it has one), its preconditions checked against the live object as the API server checks them. */
export function deleteOptions(text: string, live: KubeObject): { gracePeriodSeconds?: number } {
  if (!text.trim()) return {};
  const opts = parseJSONObject(text) as { gracePeriodSeconds?: number; preconditions?: { uid?: string; resourceVersion?: string } };
  const pre = opts.preconditions;
  if (pre?.uid && pre.uid !== live.metadata?.uid)
    throw new KubeStatusError(
      409,
      'Conflict',
      `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${String(live.metadata?.uid)}`,
    );
  if (pre?.resourceVersion && pre.resourceVersion !== live.metadata?.resourceVersion)
    throw new KubeStatusError(
      409,
      'Conflict',
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ` +
        `ResourceVersion in object meta: ${String(live.metadata?.resourceVersion)}`,
    );
  return opts.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: opts.gracePeriodSeconds };
}
