import type { IContainer } from 'kubernetes-models/v1';

/** What replaces a value that may come from a Secret. */
export const REDACTED = '<redacted: may come from a Secret>';

/**
 * Which environment variables of a container may carry a Secret's value:
 * those named by a secretKeyRef, and, when the container takes a whole
 * Secret (envFrom secretRef, whose keys podctl cannot list without the
 * Secret), every variable its spec does not set to a literal value.
 */
export function secretEnvPredicate(container: IContainer | undefined): (name: string) => boolean {
  if (!container) return () => false;
  const fromSecret = new Set((container.env ?? []).filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.name));
  const wholeSecret = (container.envFrom ?? []).some((e) => e.secretRef);
  if (!wholeSecret) return (name) => fromSecret.has(name);
  const literal = new Set((container.env ?? []).filter((e) => !e.valueFrom).map((e) => e.name));
  return (name) => fromSecret.has(name) || !literal.has(name);
}

/**
 * A Secret value shorter than this is redacted only where it is a whole value (an environment
 * value, an argument): "1" or "a" inside other text would redact most of a document, and says
 * little about the secret.
 */
export const MIN_SUBSTRING_SECRET = 4;

/** The split of an OCI `process.env` entry ("KEY=VALUE"); undefined for one without a key. */
function splitEnv(e: string): [string, string] | undefined {
  const eq = e.indexOf('=');
  return eq > 0 ? [e.slice(0, eq), e.slice(eq + 1)] : undefined;
}

/**
 * The values of the secret variables in a runtime inspect document: from the CRI config's `envs`
 * (what the kubelet set), or, for a runtime that shows none, from OCI `process.env` (which adds the
 * image's environment).
 */
function secretValues(doc: unknown, isSecret: (name: string) => boolean): string[] {
  const cri: string[] = [];
  const oci: string[] = [];
  let criSeen = false;
  const walk = (d: unknown): void => {
    if (Array.isArray(d)) return d.forEach(walk);
    if (!d || typeof d !== 'object') return;
    for (const [k, v] of Object.entries(d as Record<string, unknown>)) {
      if (k === 'envs' && Array.isArray(v)) {
        criSeen = true;
        for (const e of v as { key?: unknown; value?: unknown }[])
          if (e && typeof e.key === 'string' && typeof e.value === 'string' && isSecret(e.key)) cri.push(e.value);
      } else if (k === 'env' && Array.isArray(v) && v.every((e) => typeof e === 'string')) {
        for (const e of v as string[]) {
          const kv = splitEnv(e);
          if (kv && isSecret(kv[0])) oci.push(kv[1]);
        }
      } else {
        walk(v);
      }
    }
  };
  walk(doc);
  return [...new Set(criSeen ? cri : oci)].filter((v) => v !== '');
}

/**
 * A copy of a runtime inspect document with what may carry a Secret's value replaced, wherever the
 * runtime repeats the container's environment and command line: the secret variables' values in CRI
 * config `envs` ({key, value}) and OCI `process.env` ("KEY=VALUE"), and any other environment value,
 * argument or command word that holds one of those values, however it got there (a `$(VAR)`
 * expansion, a literal copy): whole, or as a part of it when at least MIN_SUBSTRING_SECRET long.
 */
export function redactEnv(doc: unknown, isSecret: (name: string) => boolean): unknown {
  const secrets = secretValues(doc, isSecret);
  const holdsSecret = (v: unknown) =>
    typeof v === 'string' && secrets.some((s) => v === s || (s.length >= MIN_SUBSTRING_SECRET && v.includes(s)));
  const walk = (d: unknown): unknown => {
    if (Array.isArray(d)) return d.map(walk);
    if (!d || typeof d !== 'object') return d;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(d as Record<string, unknown>)) {
      if (k === 'envs' && Array.isArray(v)) {
        out[k] = v.map((e: { key?: string; value?: string }) =>
          e && typeof e.key === 'string' && (isSecret(e.key) || holdsSecret(e.value)) ? { ...e, value: REDACTED } : e,
        );
      } else if (k === 'env' && Array.isArray(v) && v.every((e) => typeof e === 'string')) {
        out[k] = (v as string[]).map((e) => {
          const kv = splitEnv(e);
          return kv && (isSecret(kv[0]) || holdsSecret(kv[1])) ? `${kv[0]}=${REDACTED}` : e;
        });
      } else if ((k === 'args' || k === 'command') && Array.isArray(v) && v.every((e) => typeof e === 'string')) {
        // CRI config command and args, OCI process.args: the kubelet expanded $(VAR) in them.
        out[k] = (v as string[]).map((a) => (holdsSecret(a) ? REDACTED : a));
      } else {
        out[k] = walk(v);
      }
    }
    return out;
  };
  return walk(doc);
}

/** How many values redactEnv replaced in a document (what podctl says it left out). */
export function countRedacted(doc: unknown): number {
  return (JSON.stringify(doc).match(new RegExp(REDACTED.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g')) ?? []).length;
}
