/**
 * Server-side apply and the managedFields every write records, as the API server's field manager
 * (apiserver/pkg/endpoints/handlers/fieldmanager over structured-merge-diff) keeps them: an applier owns the
 * fields of its configuration, drops what it no longer applies unless someone else owns it, and conflicts
 * with any other manager whose field it would change unless forced; a non-apply write takes over the fields it
 * changed. Status is never written through the main resource, nor the main resource through status.
 */
import { KubeStatusError, type StatusCause } from '../status.js';
import {
  type Comparison,
  type FieldPath,
  FieldPathError,
  FieldSet,
  type ListInfo,
  type PathElement,
  Walker,
  clone,
  deepEqual,
  isKeyField,
  isObject,
  mergeValue,
  pathString,
  removePath,
  stableJson,
} from './fieldpath.js';

type Obj = Record<string, unknown>;
export type { ListInfo } from './fieldpath.js';

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time?: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Obj;
  subresource?: string;
}

interface Managed {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time?: string;
  subresource?: string;
  set: FieldSet;
}
type Managers = Map<string, Managed>;

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const BEFORE_FIRST_APPLY = 'before-first-apply';

/** The manager's identity as BuildManagerIdentifier encodes it: no time, and no apiVersion for an applier. */
function managerId(m: Pick<Managed, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  return JSON.stringify({
    manager: m.manager,
    operation: m.operation,
    ...(m.operation === 'Update' ? { apiVersion: m.apiVersion } : {}),
    ...(m.subresource ? { subresource: m.subresource } : {}),
  });
}

/** How a conflict names the other manager (fieldmanager's printManager). */
function printManager(m: Managed): string {
  let s = JSON.stringify(m.manager);
  if (m.subresource) s += ` with subresource ${JSON.stringify(m.subresource)}`;
  return m.operation === 'Update' ? `${s} using ${m.apiVersion}` : s;
}

/** Reads metadata.managedFields; throws an Error naming the entry that is not one. */
export function decodeManagedFields(entries: unknown): Managers {
  const out: Managers = new Map();
  if (entries === undefined || entries === null) return out;
  if (!Array.isArray(entries)) throw new Error('metadata.managedFields is not a list');
  entries.forEach((e, i) => {
    const at = `metadata.managedFields[${i}]`;
    if (!isObject(e)) throw new Error(`${at} is not an object`);
    if (typeof e.manager !== 'string') throw new Error(`${at}.manager is not a string`);
    if (e.operation !== 'Apply' && e.operation !== 'Update') throw new Error(`${at}.operation must be Apply or Update`);
    if (e.fieldsType !== undefined && e.fieldsType !== 'FieldsV1') throw new Error(`${at}.fieldsType must be FieldsV1`);
    let set: FieldSet;
    try {
      set = FieldSet.fromFieldsV1(e.fieldsV1 ?? {});
    } catch (err) {
      throw new Error(`${at}.fieldsV1: ${(err as Error).message}`);
    }
    const m: Managed = {
      manager: e.manager,
      operation: e.operation,
      apiVersion: typeof e.apiVersion === 'string' ? e.apiVersion : '',
      ...(typeof e.time === 'string' ? { time: e.time } : {}),
      ...(typeof e.subresource === 'string' && e.subresource ? { subresource: e.subresource } : {}),
      set,
    };
    const id = managerId(m);
    const prev = out.get(id);
    out.set(id, prev ? { ...m, set: prev.set.union(set) } : m);
  });
  return out;
}

const seconds = (t?: string) => (t ? Math.floor(Date.parse(t) / 1000) || 0 : 0);
const cmpStr = (a = '', b = '') => (a < b ? -1 : a > b ? 1 : 0);

/** The entries in the API server's order: appliers first, then by time, manager, apiVersion and subresource. */
export function encodeManagedFields(managers: Managers): ManagedFieldsEntry[] {
  return [...managers.values()]
    .filter((m) => !m.set.empty())
    .sort(
      (p, q) =>
        cmpStr(p.operation, q.operation) ||
        seconds(p.time) - seconds(q.time) ||
        cmpStr(p.manager, q.manager) ||
        cmpStr(p.apiVersion, q.apiVersion) ||
        cmpStr(p.subresource, q.subresource),
    )
    .map((m) => ({
      manager: m.manager,
      operation: m.operation,
      apiVersion: m.apiVersion,
      ...(m.time !== undefined ? { time: m.time } : {}),
      fieldsType: 'FieldsV1' as const,
      fieldsV1: m.set.toFieldsV1(),
      ...(m.subresource ? { subresource: m.subresource } : {}),
    }));
}

// What the field manager never records (its stripMeta set: exact paths only).
const STRIPPED = new Set(
  [[], ['name'], ['namespace'], ['creationTimestamp'], ['selfLink'], ['uid'], ['clusterName'], ['generation'], ['managedFields']]
    .map((p) => ['f:metadata', ...p.map((f) => `f:${f}`)].join('\u0000'))
    .concat(['f:apiVersion', 'f:kind', 'f:metadata\u0000f:resourceVersion']),
);
// What a write through the main resource or the status subresource resets (the pod strategies' reset fields).
const RESET: Record<string, FieldPath[]> = {
  '': [['f:status']],
  status: [['f:spec'], ['f:metadata', 'f:deletionTimestamp'], ['f:metadata', 'f:ownerReferences']],
};
const startsWith = (p: FieldPath, prefix: FieldPath) => prefix.length <= p.length && prefix.every((pe, i) => p[i] === pe);
const tracked = (subresource?: string) => (p: FieldPath) =>
  !STRIPPED.has(p.join('\u0000')) && !(RESET[subresource ?? ''] ?? []).some((r) => startsWith(p, r));
const filterComparison = (c: Comparison, keep: (p: FieldPath) => boolean): Comparison => ({
  added: c.added.filter(keep),
  modified: c.modified.filter(keep),
  removed: c.removed.filter(keep),
});

function withoutManagedFields(o: Obj): Obj {
  const c = clone(o);
  if (isObject(c.metadata)) delete c.metadata.managedFields;
  return c;
}

function fieldSetOf(obj: Obj, walker: Walker): FieldSet {
  const s = new FieldSet();
  walker.collectFields(obj, [], [], s);
  return s;
}

/** Drops what the applier applied before and no longer does, unless a manager (the applier included) still owns it. */
function prune(merged: Obj, lastSet: FieldSet, managers: Managers, walker: Walker): Obj {
  let owned = new FieldSet();
  for (const m of managers.values()) owned = owned.union(m.set);
  const out = clone(merged);
  for (const p of lastSet.paths()) {
    if (owned.has(p) || owned.hasUnder(p) || isKeyField(p)) continue;
    removePath(out, p, walker);
  }
  return out;
}

interface Conflict {
  manager: Managed;
  id: string;
  path: PathElement[];
}
class Conflicts extends Error {
  constructor(readonly conflicts: Conflict[]) {
    super('conflicts');
  }
}

/** The 409 the API server answers a conflicting apply with (fieldmanager's NewConflictError). */
function conflictStatus(conflicts: Conflict[]): KubeStatusError {
  const causes: StatusCause[] = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${printManager(c.manager)}`,
    field: pathString(c.path),
  }));
  if (conflicts.length === 1) {
    const c = conflicts[0]!;
    return new KubeStatusError(
      409,
      'Conflict',
      `Apply failed with 1 conflict: conflict with ${printManager(c.manager)}: ${pathString(c.path)}`,
      {
        causes,
      },
    );
  }
  const lines: string[] = [];
  for (const id of [...new Set(conflicts.map((c) => c.id))].sort()) {
    const mine = conflicts.filter((c) => c.id === id);
    lines.push(`conflicts with ${printManager(mine[0]!.manager)}:`, ...mine.map((c) => `- ${pathString(c.path)}`));
  }
  return new KubeStatusError(409, 'Conflict', `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`, { causes });
}

export interface ApplyOptions {
  live: object | undefined;
  applied: object;
  manager: string;
  force: boolean;
  /** RFC 3339, the time the entry records. */
  now: string;
  listInfo: ListInfo;
  operationVersion: 'v1';
  /** When given, an applied object of another kind or version is refused as the API server does. */
  kind?: string;
}
export interface ApplyResult {
  object: Obj;
  managedFields: ManagedFieldsEntry[];
}

function objectRef(o: Obj, version: string, kind: string | undefined): string {
  const md = isObject(o.metadata) ? o.metadata : {};
  return `${String(md.namespace ?? '')}/${String(md.name ?? '')}; /${version}, Kind=${kind ?? String(o.kind ?? '')}`;
}

function applyOnce(o: ApplyOptions, force: boolean): ApplyResult {
  const walker = new Walker(o.listInfo);
  const applied = o.applied as Obj;
  const keep = tracked();
  const liveObj = o.live ? withoutManagedFields(o.live as Obj) : {};
  const liveMd = isObject((o.live as Obj | undefined)?.metadata) ? ((o.live as Obj).metadata as Obj) : {};
  const cfg = clone(applied);
  delete cfg.status;
  let set: FieldSet;
  try {
    set = fieldSetOf(cfg, new Walker(o.listInfo, true)).filter(keep);
  } catch (err) {
    if (!(err instanceof FieldPathError)) throw err;
    throw new KubeStatusError(
      500,
      '',
      `failed to create typed patch object (${objectRef(applied, o.operationVersion, o.kind)}): ${err.message}`,
    );
  }
  let managers: Managers;
  try {
    managers = decodeManagedFields(liveMd.managedFields);
  } catch {
    managers = new Map();
  }
  if (o.live && managers.size === 0) {
    // An object nobody's writes were recorded for: all of it belongs to one Update manager, so an apply may conflict with it.
    const m: Managed = { manager: BEFORE_FIRST_APPLY, operation: 'Update', apiVersion: o.operationVersion, set: new FieldSet() };
    try {
      m.set = fieldSetOf(liveObj, walker).filter(keep);
    } catch (err) {
      if (!(err instanceof FieldPathError)) throw err;
    }
    managers.set(managerId(m), m);
  }
  const selfId = managerId({ manager: o.manager, operation: 'Apply', apiVersion: o.operationVersion });
  const previous = managers.get(selfId);
  const self: Managed = { manager: o.manager, operation: 'Apply', apiVersion: o.operationVersion, time: previous?.time, set };
  managers.set(selfId, self);
  let merged: Obj;
  let cmp: Comparison;
  try {
    merged = mergeValue(liveObj, cfg, [], [], walker) as Obj;
    if (previous) merged = prune(merged, previous.set, managers, walker);
    cmp = filterComparison(walker.compare(liveObj, merged), keep);
  } catch (err) {
    if (!(err instanceof FieldPathError)) throw err;
    throw new KubeStatusError(
      500,
      '',
      `failed to create typed live object (${objectRef(applied, o.operationVersion, o.kind)}): ${err.message}`,
    );
  }
  const changed = cmp.added.union(cmp.modified);
  const conflicts: Conflict[] = [];
  for (const [id, m] of managers) {
    if (id === selfId) continue;
    const taken = m.set.intersection(changed);
    for (const path of taken.paths()) conflicts.push({ manager: m, id, path });
    m.set = m.set.difference(taken).difference(cmp.removed);
    if (m.set.empty()) managers.delete(id);
  }
  if (conflicts.length > 0 && !force) throw new Conflicts(conflicts);
  if (!o.live || !deepEqual(liveObj, merged) || self.time === undefined) self.time = o.now;

  const md = isObject(merged.metadata) ? merged.metadata : (merged.metadata = {});
  const annotations = isObject(md.annotations) ? md.annotations : undefined;
  if (o.manager === 'kubectl' && annotations && typeof annotations[LAST_APPLIED] === 'string') {
    // kubectl's server-side apply keeps a client-side apply annotation it finds in step (fieldmanager's lastAppliedUpdater).
    const config = clone(applied);
    if (isObject(config.metadata) && isObject(config.metadata.annotations)) delete config.metadata.annotations[LAST_APPLIED];
    annotations[LAST_APPLIED] = `${stableJson(config)}\n`;
  }
  const managedFields = encodeManagedFields(managers);
  md.managedFields = managedFields;
  return { object: merged, managedFields };
}

/**
 * A PATCH with `application/apply-patch+yaml`: the live object (undefined to create) with the applied
 * configuration merged in and managedFields updated, or a KubeStatusError (409 Conflict, 400 BadRequest).
 */
export function serverSideApply(o: ApplyOptions): ApplyResult {
  const applied = o.applied as Obj;
  if (!isObject(applied)) throw new KubeStatusError(400, 'BadRequest', 'the applied configuration is not an object');
  if (o.kind && (applied.apiVersion !== o.operationVersion || applied.kind !== o.kind)) {
    const version = typeof applied.apiVersion === 'string' ? applied.apiVersion : '';
    const gv = version.includes('/') ? version : `/${version}`;
    throw new KubeStatusError(400, 'BadRequest', `invalid object type: ${gv}, Kind=${String(applied.kind ?? '')}`);
  }
  if (isObject(applied.metadata) && applied.metadata.managedFields !== undefined && applied.metadata.managedFields !== null)
    throw new KubeStatusError(400, 'BadRequest', 'metadata.managedFields must be nil');
  try {
    return applyOnce(o, o.force);
  } catch (err) {
    if (!(err instanceof Conflicts)) throw err;
    // kubectl moving from client-side to server-side apply may take over what its last-applied-configuration held
    // (fieldmanager's lastAppliedManager).
    const allowed = o.manager === 'kubectl' ? lastAppliedSet(o.live as Obj | undefined, o.listInfo) : undefined;
    if (!allowed) throw conflictStatus(err.conflicts);
    const left = err.conflicts.filter((c) => !allowed.has(c.path));
    if (left.length > 0) throw conflictStatus(left);
    return applyOnce(o, true);
  }
}

function lastAppliedSet(live: Obj | undefined, listInfo: ListInfo): FieldSet | undefined {
  const md = isObject(live?.metadata) ? live.metadata : undefined;
  const text = isObject(md?.annotations) ? md.annotations[LAST_APPLIED] : undefined;
  if (typeof text !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? fieldSetOf(parsed, new Walker(listInfo)) : undefined;
  } catch {
    return undefined;
  }
}

export interface UpdateOptions {
  before: object | undefined;
  after: object;
  manager: string;
  now: string;
  listInfo: ListInfo;
  /** 'status' for a write through the status subresource. */
  subresource?: string;
}

/** The managedFields a write sent in, unless it sent none or ones that do not decode; `[]` or `[{}]` resets them. */
function managedForUpdate(before: Obj | undefined, after: Obj, subresource?: string): Managers {
  const live = () => {
    try {
      return decodeManagedFields(isObject(before?.metadata) ? before.metadata.managedFields : undefined);
    } catch {
      return new Map() as Managers;
    }
  };
  if (subresource) return live();
  const sent = isObject(after.metadata) ? after.metadata.managedFields : undefined;
  if (Array.isArray(sent) && (sent.length === 0 || (sent.length === 1 && isObject(sent[0]) && Object.keys(sent[0]).length === 0)))
    return new Map();
  try {
    const m = decodeManagedFields(sent);
    if (m.size > 0) return m;
  } catch {
    // fall back to the live object's, so a client that does not know managedFields cannot drop them
  }
  return live();
}

/**
 * A create, update or non-apply patch by manager (the fieldManager parameter, else the User-Agent's first word):
 * after, with an Update entry owning what the write changed, taken from whoever owned it.
 */
export function recordUpdate(o: UpdateOptions): Obj {
  const walker = new Walker(o.listInfo);
  const before = o.before as Obj | undefined;
  const after = clone(o.after) as Obj;
  const managers = managedForUpdate(before, after, o.subresource);
  let cmp: Comparison;
  try {
    cmp = filterComparison(walker.compare(before ? withoutManagedFields(before) : {}, withoutManagedFields(after)), tracked(o.subresource));
  } catch (err) {
    if (!(err instanceof FieldPathError)) throw err;
    // As the API server's UpdateNoErrors: a write whose fields cannot be tracked goes through, without managedFields.
    return withoutManagedFields(after);
  }
  const taken = cmp.added.union(cmp.modified);
  for (const [id, m] of managers) {
    m.set = m.set.difference(taken).difference(cmp.removed);
    if (m.set.empty()) managers.delete(id);
  }
  if (!taken.empty()) {
    const self: Managed = {
      manager: o.manager,
      operation: 'Update',
      apiVersion: 'v1',
      time: o.now,
      subresource: o.subresource,
      set: taken,
    };
    const id = managerId(self);
    const prev = managers.get(id);
    if (prev) self.set = prev.set.union(taken);
    managers.set(id, self);
  }
  const md = isObject(after.metadata) ? after.metadata : (after.metadata = {});
  md.managedFields = encodeManagedFields(managers);
  return after;
}

/** The manager a non-apply write is recorded under (the API server's fieldManager or User-Agent prefix). */
export function fieldManagerFor(q: { fieldManager?: string | null; userAgent?: string | null }): string {
  if (q.fieldManager) return q.fieldManager;
  return (q.userAgent ?? '').split('/')[0]!;
}

/** The API server's check of a PATCH's options: apply needs a fieldManager, and only apply may force. */
export function validatePatchOptions(q: { apply: boolean; fieldManager?: string | null; force?: string | null }): void {
  const causes: StatusCause[] = [];
  if (!q.apply && q.force !== undefined && q.force !== null)
    causes.push({ reason: 'FieldValueForbidden', message: 'Forbidden: may not be specified for non-apply patch', field: 'force' });
  if (q.apply && !q.fieldManager)
    causes.push({ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' });
  if (causes.length === 0) return;
  const errs = causes.map((c) => `${c.field}: ${c.message}`);
  const message = `PatchOptions.meta.k8s.io "" is invalid: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`;
  throw new KubeStatusError(422, 'Invalid', message, { group: 'meta.k8s.io', kind: 'PatchOptions', causes });
}
