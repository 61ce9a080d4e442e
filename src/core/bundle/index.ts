import { gzipSync } from 'node:zlib';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { writeTar, type TarEntry } from '../exec/tar.js';

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

/** The container of a spec by name (app, init or ephemeral). */
export function specContainer(spec: IPodSpec, name: string): IContainer | undefined {
  return [...spec.containers, ...(spec.initContainers ?? []), ...((spec.ephemeralContainers ?? []) as IContainer[])].find((c) => c.name === name);
}

/** One incident bundle: files under a top directory, as a .tar.gz. */
export class Bundle {
  private readonly files: { path: string; data: Buffer }[] = [];

  constructor(private readonly top: string) {}

  add(path: string, content: string | Buffer): void {
    this.files.push({ path, data: Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8') });
  }

  get contents(): readonly { path: string; size: number }[] {
    return this.files.map((f) => ({ path: f.path, size: f.data.length }));
  }

  toTarGz(): Buffer {
    const dirs = new Set<string>();
    for (const f of this.files) {
      const parts = f.path.split('/').slice(0, -1);
      for (let i = 1; i <= parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
    }
    const entries: TarEntry[] = [
      { name: `${this.top}/`, type: 'directory', mode: 0o755 },
      ...[...dirs].sort().map((d): TarEntry => ({ name: `${this.top}/${d}/`, type: 'directory', mode: 0o755 })),
      ...this.files.map((f): TarEntry => ({ name: `${this.top}/${f.path}`, type: 'file', mode: 0o644, data: f.data })),
    ];
    return gzipSync(writeTar(entries));
  }
}
