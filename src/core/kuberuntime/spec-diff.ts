import type { IContainer } from 'kubernetes-models/v1';
import { canonicalJSON } from '../util/canonical-json.js';
import { containerSpecForHash } from './hash.js';

/** One field that differs between a running container's spec and the desired one. */
export interface SpecChange {
  /** e.g. `containers[app].image`, `containers[app].env[MODE].value`. */
  field: string;
  /** Absent when the field was not set. */
  from?: unknown;
  to?: unknown;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Names the fields that changed a container's hash: the running container's
 * spec copy (spec-copy.ts) against the spec now. Lists
 * of named objects (env, ports, volumeMounts) are matched by name, other
 * lists compared whole. Undefined when the running container has no copy.
 */
export function diffContainerSpec(
  runningSpecJSON: string | undefined,
  container: IContainer,
  prefix = `containers[${container.name}]`,
): SpecChange[] | undefined {
  if (!runningSpecJSON) return undefined;
  let before: Json;
  try {
    before = JSON.parse(runningSpecJSON) as Json;
  } catch {
    return undefined;
  }
  // The same canonical form the hash and the annotation are made from.
  const after = JSON.parse(canonicalJSON(containerSpecForHash(container))) as Json;
  const changes: SpecChange[] = [];
  diff(before, after, prefix, changes);
  return changes;
}

function isObject(v: Json | undefined): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function named(list: Json[]): Map<string, Json> | undefined {
  const map = new Map<string, Json>();
  for (const item of list) {
    if (!isObject(item) || typeof item.name !== 'string' || map.has(item.name)) return undefined;
    map.set(item.name, item);
  }
  return map;
}

function diff(a: Json | undefined, b: Json | undefined, path: string, out: SpecChange[]): void {
  if (a === undefined && b === undefined) return;
  if (isObject(a) && isObject(b)) {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) diff(a[key], b[key], `${path}.${key}`, out);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const na = named(a);
    const nb = named(b);
    if (na && nb && (na.size > 0 || nb.size > 0)) {
      for (const name of [...new Set([...na.keys(), ...nb.keys()])]) diff(na.get(name), nb.get(name), `${path}[${name}]`, out);
      return;
    }
  }
  if (canonicalJSON(a) === canonicalJSON(b)) return;
  out.push({ field: path, ...(a === undefined ? {} : { from: a }), ...(b === undefined ? {} : { to: b }) });
}

/** `containers[app].image: busybox:1.36 → busybox:1.37`; unset values read `(unset)`. */
export function formatSpecChange(c: SpecChange): string {
  const show = (v: unknown) => (v === undefined ? '(unset)' : typeof v === 'string' ? v : JSON.stringify(v));
  return `${c.field}: ${show(c.from)} → ${show(c.to)}`;
}
