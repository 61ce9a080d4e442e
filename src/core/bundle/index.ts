import { gzipSync } from 'node:zlib';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { writeTar, type TarEntry } from '../exec/tar.js';

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
