import { lstat, mkdtemp, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { pack as tarPack } from 'tar-stream';

/** The container of a spec by name (app, init or ephemeral). */
export function specContainer(spec: IPodSpec, name: string): IContainer | undefined {
  return [...spec.containers, ...(spec.initContainers ?? []), ...((spec.ephemeralContainers ?? []) as IContainer[])].find(
    (c) => c.name === name,
  );
}

export class BundleOutputError extends Error {}

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

  /** The uncompressed archive as a stream (tar-stream's pack). */
  private tar(): Readable {
    const dirs = new Set<string>();
    for (const f of this.files) {
      const parts = f.path.split('/').slice(0, -1);
      for (let i = 1; i <= parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
    }
    const pack = tarPack();
    const mtime = new Date();
    pack.entry({ name: `${this.top}/`, type: 'directory', mode: 0o755, mtime });
    for (const d of [...dirs].sort()) pack.entry({ name: `${this.top}/${d}/`, type: 'directory', mode: 0o755, mtime });
    for (const f of this.files) pack.entry({ name: `${this.top}/${f.path}`, type: 'file', mode: 0o644, mtime }, f.data);
    pack.finalize();
    return Readable.from(pack as AsyncIterable<Buffer>);
  }

  /**
   * Writes the archive to `output`. It may hold what a Secret-bearing pod's runtime repeats, so it
   * is a new file of mode 0600 whatever was there: written whole into a directory made beside
   * `output` (O_EXCL, so nothing there is followed), then renamed over `output` (a symlink there is
   * replaced, not followed; an existing file's mode is not kept). A failure leaves `output` as it was.
   */
  async writeTo(output: string): Promise<void> {
    const target = resolve(output);
    if ((await lstat(target).catch(() => undefined))?.isDirectory())
      throw new BundleOutputError(`${output} is a directory: name the archive file to write`);
    const staging = await mkdtemp(join(dirname(target), `.${basename(target)}.`)).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? new BundleOutputError(`${dirname(output)}: no such directory`) : err;
    });
    try {
      const tmp = join(staging, 'bundle.tar.gz');
      // The write stream closes the file when it ends or fails.
      const fh = await open(tmp, 'wx', 0o600);
      await pipeline(this.tar(), createGzip(), fh.createWriteStream());
      await rename(tmp, target);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
}
