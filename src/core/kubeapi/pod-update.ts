/**
 * The API server's rules for updating a pod (pkg/apis/core/validation ValidatePodUpdate, Kubernetes 1.32): of the
 * spec only container images, activeDeadlineSeconds (set, or lowered), tolerations (added to), scheduling gates
 * (removed) and a negative terminationGracePeriodSeconds set to 1 may change; resources only through resize.
 * Fields are compared as the API server's semantic equality does: an absent field equals its empty value.
 */
import { KubeStatusError, type StatusCause } from './status.js';
import { parseQuantity } from '../util/quantity.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

const UPDATABLE_POD_SPEC_FIELDS = [
  '`spec.containers[*].image`',
  '`spec.initContainers[*].image`',
  '`spec.activeDeadlineSeconds`',
  '`spec.tolerations` (only additions to existing tolerations)',
  '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
];
const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';
const MAX_INT32 = 2147483647;

interface FieldError {
  type: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired';
  field: string;
  detail: string;
  value?: unknown;
}

/** field.Error's ErrorBody: the type, the bad value for Invalid (nil as "null"), and the detail. */
function errorBody(e: FieldError): string {
  let s: string;
  if (e.type === 'FieldValueForbidden') s = 'Forbidden';
  else if (e.type === 'FieldValueRequired') s = 'Required value';
  else {
    const v = e.value ?? 'null';
    s = `Invalid value: ${typeof v === 'string' ? JSON.stringify(v) : typeof v === 'object' ? JSON.stringify(v) : String(v)}`;
  }
  return e.detail ? `${s}: ${e.detail}` : s;
}

/** Drops what Go would read as a zero value (absent, null, "", [], {}); quantities compare by value. */
function normalize(v: unknown, key = ''): unknown {
  if (Array.isArray(v)) {
    const a = v.map((x) => normalize(x) ?? {});
    return a.length ? a : undefined;
  }
  if (isObject(v)) {
    const out: Obj = {};
    const quantities = key === 'limits' || key === 'requests' || key === 'overhead';
    for (const [k, x] of Object.entries(v)) {
      const n = quantities && (typeof x === 'string' || typeof x === 'number') ? (parseQuantity(x) ?? x) : normalize(x, k);
      if (n !== undefined) out[k] = n;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return v === null || v === '' ? undefined : v;
}

function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(sortKeys(normalize(a))) === JSON.stringify(sortKeys(normalize(b)));
}
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isObject(v)) return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortKeys(v[k])]),
  );
}

const list = (v: unknown): Obj[] => (Array.isArray(v) ? (v as unknown[]).map((x) => (isObject(x) ? x : {})) : []);
const meta = (p: Obj): Obj => (isObject(p.metadata) ? p.metadata : {});
const spec = (p: Obj): Obj => (isObject(p.spec) ? p.spec : {});

function metadataErrors(oldPod: Obj, newPod: Obj): FieldError[] {
  const errs: FieldError[] = [];
  const o = meta(oldPod);
  const n = meta(newPod);
  for (const f of ['name', 'namespace', 'uid']) {
    // An update that leaves out the UID keeps the old one (the registry fills it in before validating).
    if (f === 'uid' && !n.uid) continue;
    if ((n[f] ?? '') !== (o[f] ?? ''))
      errs.push({ type: 'FieldValueInvalid', field: `metadata.${f}`, value: n[f] ?? '', detail: 'field is immutable' });
  }
  const oa = isObject(o.annotations) ? o.annotations : {};
  const na = isObject(n.annotations) ? n.annotations : {};
  const field = `metadata.annotations[${MIRROR_ANNOTATION}]`;
  if (MIRROR_ANNOTATION in oa && na[MIRROR_ANNOTATION] !== oa[MIRROR_ANNOTATION])
    errs.push({ type: 'FieldValueForbidden', field, detail: 'may not remove or update mirror pod annotation' });
  if (!(MIRROR_ANNOTATION in oa) && MIRROR_ANNOTATION in na)
    errs.push({ type: 'FieldValueForbidden', field, detail: 'may not add mirror pod annotation' });
  return errs;
}

/** ValidateContainerUpdates: the same number of containers, each with an image; stop when the number differs. */
function containerErrors(newList: Obj[], oldList: Obj[], field: string): { errs: FieldError[]; stop: boolean } {
  if (newList.length !== oldList.length)
    return { errs: [{ type: 'FieldValueForbidden', field, detail: 'pod updates may not add or remove containers' }], stop: true };
  const errs: FieldError[] = [];
  newList.forEach((c, i) => {
    const image = typeof c.image === 'string' ? c.image : '';
    if (image.length === 0) errs.push({ type: 'FieldValueRequired', field: `${field}[${i}].image`, detail: '' });
    if (image.trim().length !== image.length)
      errs.push({
        type: 'FieldValueInvalid',
        field: `${field}[${i}].image`,
        value: image,
        detail: 'must not have leading or trailing whitespace',
      });
  });
  return { errs, stop: false };
}

function tolerationErrors(newT: Obj[], oldT: Obj[]): FieldError[] {
  // An existing toleration may only have its tolerationSeconds changed.
  for (const old of oldT) {
    if (!newT.some((t) => equal({ ...old, tolerationSeconds: t.tolerationSeconds }, t)))
      return [
        {
          type: 'FieldValueForbidden',
          field: 'spec.tolerations',
          detail: 'existing toleration can not be modified except its tolerationSeconds',
        },
      ];
  }
  return [];
}

function schedulingGateErrors(newG: Obj[], oldG: Obj[]): FieldError[] {
  const old = new Set(oldG.map((g) => g.name));
  return newG.flatMap((g, i) =>
    old.has(g.name)
      ? []
      : [
          {
            type: 'FieldValueForbidden' as const,
            field: `spec.schedulingGates[${i}].name`,
            detail: `only deletion is allowed, but found new scheduling gate '${String(g.name)}'`,
          },
        ],
  );
}

const CPU_MEMORY = ['cpu', 'memory'];

/** newResources with cpu and memory taken from oldResources: what resize may change, put back. */
function withOldCpuMemory(newRes: unknown, oldRes: unknown): Obj {
  const n = isObject(newRes) ? clone(newRes) : {};
  const o = isObject(oldRes) ? oldRes : {};
  for (const part of ['limits', 'requests']) {
    const np: Obj = isObject(n[part]) ? (n[part] as Obj) : {};
    const op: Obj = isObject(o[part]) ? (o[part] as Obj) : {};
    for (const r of CPU_MEMORY) {
      if (op[r] === undefined) delete np[r];
      else np[r] = op[r];
    }
    n[part] = np;
  }
  return n;
}

/** A readable diff of the changed fields (the API server prints a cmp.Diff of the PodSpec here). */
function specDiff(oldSpec: unknown, newSpec: unknown): string {
  const lines: string[] = [];
  const show = (v: unknown) => JSON.stringify(v);
  const walk = (a: unknown, b: unknown, path: string) => {
    if (equal(a, b)) return;
    if (isObject(a) && isObject(b)) {
      for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) walk(a[k], b[k], path ? `${path}.${k}` : k);
      return;
    }
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x) => isObject(x))) {
      a.forEach((x, i) => walk(x, b[i], `${path}[${i}]`));
      return;
    }
    const na = normalize(a);
    const nb = normalize(b);
    if (na !== undefined) lines.push(`- \t${path}: ${show(a)},`);
    if (nb !== undefined) lines.push(`+ \t${path}: ${show(b)},`);
  };
  walk(oldSpec, newSpec, '');
  return ['  core.PodSpec{', ...lines, '  }'].join('\n');
}

export interface PodUpdateOptions {
  /** Resources may change: the caller carries the change out as an in-place resize. */
  allowResize?: boolean;
}

/** The field errors ValidatePodUpdate finds, in its order. */
export function podUpdateErrors(oldPod: Obj, newPod: Obj, opts: PodUpdateOptions = {}): FieldError[] {
  const errs = metadataErrors(oldPod, newPod);
  const os = spec(oldPod);
  const ns = spec(newPod);
  for (const f of ['containers', 'initContainers']) {
    const r = containerErrors(list(ns[f]), list(os[f]), `spec.${f}`);
    errs.push(...r.errs);
    if (r.stop) return errs;
  }
  const nd = ns.activeDeadlineSeconds;
  const od = os.activeDeadlineSeconds;
  const deadline = 'spec.activeDeadlineSeconds';
  if (nd !== undefined && nd !== null) {
    if (typeof nd !== 'number' || nd < 0 || nd > MAX_INT32) {
      errs.push({ type: 'FieldValueInvalid', field: deadline, value: nd, detail: `must be between 0 and ${MAX_INT32}, inclusive` });
      return errs;
    }
    if (typeof od === 'number' && od < nd) {
      errs.push({ type: 'FieldValueInvalid', field: deadline, value: nd, detail: 'must be less than or equal to previous value' });
      return errs;
    }
  } else if (od !== undefined && od !== null) {
    errs.push({ type: 'FieldValueInvalid', field: deadline, value: null, detail: 'must not update from a positive integer to nil value' });
  }
  errs.push(...tolerationErrors(list(ns.tolerations), list(os.tolerations)));
  errs.push(...schedulingGateErrors(list(ns.schedulingGates), list(os.schedulingGates)));
  if (equal(ns, os)) return errs;

  const munged = clone(ns);
  for (const f of ['containers', 'initContainers']) {
    const olds = list(os[f]);
    munged[f] = list(munged[f]).map((c, i) => {
      const m: Obj = { ...c, image: olds[i]!.image };
      if (opts.allowResize && f === 'containers') m.resources = withOldCpuMemory(c.resources, olds[i]!.resources);
      return m;
    });
  }
  munged.activeDeadlineSeconds = os.activeDeadlineSeconds;
  munged.schedulingGates = os.schedulingGates;
  munged.tolerations = os.tolerations;
  const oldGrace = os.terminationGracePeriodSeconds;
  if (typeof oldGrace === 'number' && oldGrace < 0 && munged.terminationGracePeriodSeconds === 1)
    munged.terminationGracePeriodSeconds = oldGrace;
  if (!equal(munged, os)) {
    const detail = `pod updates may not change fields other than ${UPDATABLE_POD_SPEC_FIELDS.join(',')}\n${specDiff(os, munged)}`;
    errs.push({ type: 'FieldValueForbidden', field: 'spec', detail });
  }
  return errs;
}

/** The 422 Invalid the API server answers a field error list with (errors.NewInvalid). */
export function invalidStatus(kind: string, name: string, errs: FieldError[]): KubeStatusError {
  const causes: StatusCause[] = errs.map((e) => ({ reason: e.type, message: errorBody(e), field: e.field }));
  const messages = [...new Set(errs.map((e) => `${e.field}: ${errorBody(e)}`))];
  const joined = messages.length === 1 ? messages[0] : `[${messages.join(', ')}]`;
  return new KubeStatusError(422, 'Invalid', `${kind} ${JSON.stringify(name)} is invalid: ${joined}`, { name, kind, causes });
}

/** Throws the API server's 422 when newPod is not an update the API server would take. */
export function validatePodUpdate(oldPod: object, newPod: object, opts: PodUpdateOptions = {}): void {
  const errs = podUpdateErrors(oldPod as Obj, newPod as Obj, opts);
  if (errs.length > 0) throw invalidStatus('Pod', String(meta(oldPod as Obj).name ?? ''), errs);
}

export interface PodUpdateChanges {
  /** Containers (and init containers) whose image changed: the kubelet replaces them. */
  images: string[];
  /** Containers whose cpu or memory changed: an in-place resize. */
  resized: string[];
  /** Other spec fields changed that need no container action (activeDeadlineSeconds, tolerations, ...). */
  spec: string[];
  /** Labels, annotations or other metadata changed. */
  metadata: boolean;
}

/** What an allowed update changes, for the caller to carry out. */
export function podUpdateChanges(oldPod: object, newPod: object): PodUpdateChanges {
  const os = spec(oldPod as Obj);
  const ns = spec(newPod as Obj);
  const images: string[] = [];
  const resized: string[] = [];
  for (const f of ['initContainers', 'containers']) {
    const olds = new Map(list(os[f]).map((c) => [c.name, c]));
    for (const c of list(ns[f])) {
      const o = olds.get(c.name);
      if (!o) continue;
      if (c.image !== o.image) images.push(String(c.name));
      const cpuMem = (r: unknown, part: string) => CPU_MEMORY.map((k) => (isObject(r) && isObject(r[part]) ? r[part][k] : undefined));
      if (!['limits', 'requests'].every((p) => equal(cpuMem(c.resources, p), cpuMem(o.resources, p)))) resized.push(String(c.name));
    }
  }
  const other = ['activeDeadlineSeconds', 'tolerations', 'terminationGracePeriodSeconds', 'schedulingGates'].filter(
    (f) => !equal(os[f], ns[f]),
  );
  const ignored = ['resourceVersion', 'managedFields', 'generation', 'creationTimestamp', 'uid'];
  const m = (p: object) => Object.fromEntries(Object.entries(meta(p as Obj)).filter(([k]) => !ignored.includes(k)));
  return { images, resized, spec: other, metadata: !equal(m(oldPod), m(newPod)) };
}

export type PodUpdateKind = 'none' | 'metadata' | 'spec' | 'resize' | 'image';

/**
 * The most consequential part of an allowed update: 'image' (containers are replaced, with their new resources),
 * 'resize' (in place), 'spec' (recorded, no container action), 'metadata', or 'none'.
 */
export function podUpdateKind(oldPod: object, newPod: object): PodUpdateKind {
  const c = podUpdateChanges(oldPod, newPod);
  if (c.images.length > 0) return 'image';
  if (c.resized.length > 0) return 'resize';
  if (c.spec.length > 0) return 'spec';
  return c.metadata ? 'metadata' : 'none';
}
