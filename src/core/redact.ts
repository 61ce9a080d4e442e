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
 * A copy of a runtime inspect document with the values of the secret
 * variables replaced, wherever the runtime repeats them: CRI config `envs`
 * ({key, value}) and OCI `process.env` ("KEY=VALUE").
 */
export function redactEnv(doc: unknown, isSecret: (name: string) => boolean): unknown {
  if (Array.isArray(doc)) return doc.map((d) => redactEnv(d, isSecret));
  if (!doc || typeof doc !== 'object') return doc;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
    if (k === 'envs' && Array.isArray(v)) {
      out[k] = v.map((e: { key?: string; value?: string }) => (e && typeof e.key === 'string' && isSecret(e.key) ? { ...e, value: REDACTED } : e));
    } else if (k === 'env' && Array.isArray(v) && v.every((e) => typeof e === 'string')) {
      out[k] = (v as string[]).map((e) => {
        const eq = e.indexOf('=');
        return eq > 0 && isSecret(e.slice(0, eq)) ? `${e.slice(0, eq)}=${REDACTED}` : e;
      });
    } else {
      out[k] = redactEnv(v, isSecret);
    }
  }
  return out;
}

/** How many values redactEnv replaced in a document (what podctl says it left out). */
export function countRedacted(doc: unknown): number {
  return (JSON.stringify(doc).match(new RegExp(REDACTED.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g')) ?? []).length;
}
