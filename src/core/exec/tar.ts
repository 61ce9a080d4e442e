import { once } from 'node:events';
import { constants } from 'node:fs';
import { link, lstat, mkdir, mkdtemp, open, readdir, readlink, realpath, rename, rm, symlink, unlink } from 'node:fs/promises';
import { isAbsolute, join, posix, relative, sep } from 'node:path';
import { Writable } from 'node:stream';
import { extract as tarExtract, pack as tarPack, type Header, type Pack } from 'tar-stream';

/**
 * `cp`'s archives, streamed through tar-stream both ways (ustar, pax and GNU
 * long names): neither side holds more than a few chunks of an archive.
 */
export class TarError extends Error {}

const CHUNK = 64 * 1024;
const BLOCK = 512;
/** The bytes before each of packLocal's frames that are left to its caller. */
export const FRAME_HEAD = 1;

/** A local file, directory or symlink to pack, by the name it gets in the archive. */
interface LocalEntry {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'symlink';
  mode: number;
  size: number;
  mtime: Date;
  linkname?: string;
}

async function localEntries(path: string, name: string, out: LocalEntry[] = []): Promise<LocalEntry[]> {
  const st = await lstat(path);
  const base = { name, path, mode: st.mode & 0o7777, size: 0, mtime: st.mtime };
  if (st.isSymbolicLink()) out.push({ ...base, type: 'symlink', mode: 0o777, linkname: await readlink(path) });
  else if (st.isFile()) out.push({ ...base, type: 'file', size: st.size });
  else if (st.isDirectory()) {
    out.push({ ...base, type: 'directory', name: `${name}/` });
    for (const child of (await readdir(path)).sort()) await localEntries(join(path, child), `${name}/${child}`, out);
  } else throw new TarError(`${path}: not a regular file, directory or symlink`);
  return out;
}

function headerOf(e: LocalEntry, size = e.size): Parameters<Pack['entry']>[0] {
  return { name: e.name, type: e.type, mode: e.mode, uid: 0, gid: 0, mtime: e.mtime, size, linkname: e.linkname };
}

/**
 * The archive's exact length, which the container's `head -c` needs before the first byte (v4 exec
 * cannot close stdin): tar-stream packs the headers alone (their length depends only on the names,
 * which decide whether a pax header is needed), and each file adds its data padded to a block.
 */
async function archiveSize(entries: LocalEntry[]): Promise<number> {
  const dry = tarPack();
  let length = 0;
  const counted = (async () => {
    for await (const chunk of dry as AsyncIterable<Buffer>) length += chunk.length;
  })();
  for (const e of entries) {
    if (e.type === 'file') dry.entry(headerOf(e, 0), Buffer.alloc(0));
    else dry.entry(headerOf(e, 0));
  }
  dry.finalize();
  await counted;
  return entries.reduce((n, e) => n + Math.ceil(e.size / BLOCK) * BLOCK, length);
}

/**
 * The frames a file's data is read into, reused: two, so that one is read while the other is sent.
 * A frame goes back to the pool once the caller has asked for the next one (it was sent by then).
 */
class FramePool {
  private readonly free: Buffer[] = [Buffer.allocUnsafe(FRAME_HEAD + CHUNK), Buffer.allocUnsafe(FRAME_HEAD + CHUNK)];
  private waiter: ((frame: Buffer) => void) | undefined;
  private closed = false;
  private abandon: (() => void) | undefined;

  /** A free frame (feed is the only taker); rejected once the pool is closed. */
  take(): Promise<Buffer> {
    const frame = this.free.pop();
    if (frame) return Promise.resolve(frame);
    if (this.closed) return Promise.reject(new TarError('the copy was abandoned'));
    return new Promise((resolve, reject) => {
      this.waiter = resolve;
      this.abandon = () => reject(new TarError('the copy was abandoned'));
    });
  }

  give(frame: Buffer): void {
    const waiter = this.waiter;
    this.waiter = this.abandon = undefined;
    if (waiter) waiter(frame);
    else this.free.push(frame);
  }

  close(): void {
    this.closed = true;
    const abandon = this.abandon;
    this.waiter = this.abandon = undefined;
    abandon?.();
  }
}

async function feed(pack: Pack, entries: LocalEntry[], pool: FramePool, framed: WeakMap<Buffer, Buffer>): Promise<void> {
  for (const e of entries) {
    if (e.type !== 'file') {
      await new Promise<void>((resolve, reject) => pack.entry(headerOf(e), (err) => (err ? reject(err) : resolve())));
      continue;
    }
    // O_NOFOLLOW: the path was a file when it was listed; a symlink put there since is not followed.
    const fh = await open(e.path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      let sink!: ReturnType<Pack['entry']>;
      const done = new Promise<void>((resolve, reject) => {
        sink = pack.entry(headerOf(e), (err) => (err ? reject(err) : resolve()));
      });
      // Rejected too when a read below fails and the pack is destroyed: the read's error is the one thrown.
      done.catch(() => undefined);
      // The header announced this size: a file that shrank fails the copy rather than corrupting the archive.
      for (let left = e.size; left > 0;) {
        const frame = await pool.take();
        const { bytesRead } = await fh.read(frame, FRAME_HEAD, Math.min(CHUNK, left), null);
        if (bytesRead === 0) throw new TarError(`${e.path} became shorter while it was read`);
        left -= bytesRead;
        // tar-stream passes an entry's data through as the same Buffer, so the reader knows its frame.
        const data = frame.subarray(FRAME_HEAD, FRAME_HEAD + bytesRead);
        framed.set(data, frame);
        if (!sink.write(data)) await once(sink, 'drain');
      }
      sink.end(undefined);
      await done;
    } finally {
      await fh.close();
    }
  }
  pack.finalize();
}

/**
 * The local file or directory at `path` as a tar archive whose entries are named under `name`
 * (symlinks kept as symlinks), and the archive's length in bytes. The archive comes as frames
 * whose first FRAME_HEAD bytes are the caller's (the exec stream's channel byte goes there) and
 * the rest the archive's next bytes. A frame is the caller's only until it asks for the next one:
 * a file's data is read into frames that are reused, so that sending it makes no garbage.
 */
export async function packLocal(
  path: string,
  name: string,
): Promise<{ size: number; frames: () => AsyncGenerator<Buffer, void, undefined> }> {
  const entries = await localEntries(path, name);
  const size = await archiveSize(entries);
  async function* frames(): AsyncGenerator<Buffer, void, undefined> {
    const pack = tarPack();
    const pool = new FramePool();
    const framed = new WeakMap<Buffer, Buffer>();
    const fed = feed(pack, entries, pool, framed).catch((err: Error) => pack.destroy(err));
    let sent = 0;
    try {
      for await (const chunk of pack as AsyncIterable<Buffer>) {
        sent += chunk.length;
        const frame = framed.get(chunk);
        if (frame) {
          yield frame.subarray(0, FRAME_HEAD + chunk.length);
          pool.give(frame);
        } else {
          // tar-stream's own blocks (headers, padding, the end): small, copied behind a head.
          const own = Buffer.allocUnsafe(FRAME_HEAD + chunk.length);
          chunk.copy(own, FRAME_HEAD);
          yield own;
        }
      }
      await fed;
    } finally {
      pool.close();
      pack.destroy();
    }
    if (sent !== size)
      throw new TarError(`the archive came to ${sent} bytes, not the ${size} announced (did a file change while it was read?)`);
  }
  return { size, frames };
}

function within(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;

async function lstatOrNone(path: string) {
  try {
    return await lstat(path);
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** tar-stream's complaint about the stream itself (a bad header, data that ends early). */
const notWhole = (err: unknown) => new TarError(`the container's tar output is not a whole tar archive: ${(err as Error).message}`);

const REFUSED_TYPES: Record<string, string> = {
  'character-device': 'a character device',
  'block-device': 'a block device',
  fifo: 'a FIFO',
};

/**
 * Unpacks a tar stream (what the container's `tar cf -` prints) under `dest`, as kubectl cp does:
 * files get the archive's permission bits only (mode & 0o777, less the umask: never setuid,
 * setgid or sticky) and belong to whoever runs podctl; directories are made 0755 less the umask;
 * device nodes and FIFOs are refused. An entry that would land outside `dest` (an absolute name,
 * a `..` that climbs out, a symlink whose target leads out, an entry under a symlink) is refused.
 *
 * Nothing is written to `dest` unless the whole archive is accepted: entries are unpacked as they
 * arrive into a staging directory podctl makes inside `dest` (mode 0700, same file system, so the
 * final step is renames, not copies). Only podctl writes there, so the only symlinks in it are
 * the archive's own, which are checked as they come. Once the archive ended and the container's
 * tar exited 0, every staged path is checked against what `dest` already holds (a symlink there
 * leading out, a file where a directory goes), and only if all pass is the tree renamed into
 * place, each parent looked at again before it is used. A refusal at any point removes the
 * staging directory and leaves `dest` as it was (short of a local process racing the renames).
 * `rename` maps the archive's top-level name to another (cp's `POD:/a local/b`).
 */
export class Extraction {
  private readonly extract = tarExtract();
  private failure: Error | undefined;
  private pending: (() => void) | undefined;
  private readonly consumed: Promise<void>;
  /** The archive's name of each staged path (for messages), and which staged paths are regular files (hard link targets). */
  private readonly names = new Map<string, string>();
  private readonly files = new Set<string>();
  /** What the remote tar's output is written to; it never pushes back an error (a refusal ends the copy when the exec has). */
  readonly input: Writable;

  private constructor(
    private readonly root: string,
    private readonly dest: string,
    private readonly staging: string,
    private readonly renameTop?: { from: string; to: string },
  ) {
    this.extract.on('drain', () => this.release());
    this.input = new Writable({
      highWaterMark: CHUNK,
      write: (chunk: Buffer, _enc, cb) => {
        if (this.failure || this.extract.write(chunk)) return cb();
        this.pending = cb;
      },
      final: (cb) => {
        if (!this.failure) this.extract.end(undefined);
        cb();
      },
    });
    this.consumed = this.consume().catch((err: Error) => this.fail(err));
  }

  static async open(dest: string, rename?: { from: string; to: string }): Promise<Extraction> {
    const root = await realpath(dest);
    const staging = await mkdtemp(join(root, '.podctl-cp-'));
    return new Extraction(root, dest, staging, rename);
  }

  private release(): void {
    const cb = this.pending;
    this.pending = undefined;
    cb?.();
  }

  private fail(err: Error): void {
    this.failure ??= err;
    this.extract.destroy();
    // The rest of the archive is read and dropped, so that the container's tar ends as it would.
    this.release();
  }

  /** Once the remote tar has exited 0: the archive checked whole, then moved into `dest`. Throws TarError on a refusal. */
  async finish(): Promise<void> {
    if (!this.input.writableEnded) this.input.end();
    if (!this.input.writableFinished && !this.failure) await once(this.input, 'finish');
    await this.consumed;
    if (this.failure) throw this.failure;
    const tops = await readdir(this.staging);
    for (const top of tops) await this.place(top, false);
    for (const top of tops) await this.place(top, true);
  }

  /** Removes the staging directory (with whatever of a refused archive it holds). */
  async discard(): Promise<void> {
    if (!this.failure) this.fail(new TarError('the copy was abandoned'));
    await rm(this.staging, { recursive: true, force: true });
  }

  private refuse(name: string, why: string): TarError {
    return new TarError(`refusing archive entry "${name}": ${why}`);
  }

  /** An archive name as a path relative to `dest` ('' for `dest` itself), or a refusal if it leads out. */
  private relPath(name: string): string {
    if (isAbsolute(name) || /^[a-zA-Z]:/.test(name)) throw this.refuse(name, `an absolute path would be written outside ${this.dest}`);
    let rel = posix.normalize(name).replace(/\/$/, '');
    if (rel === '..' || rel.startsWith('../')) throw this.refuse(name, `it would be written outside ${this.dest}`);
    const r = this.renameTop;
    if (r && (rel === r.from || rel.startsWith(`${r.from}/`))) rel = r.to + rel.slice(r.from.length);
    return rel === '.' ? '' : rel;
  }

  private async consume(): Promise<void> {
    const entries = this.extract[Symbol.asyncIterator]();
    for (;;) {
      let next: Awaited<ReturnType<typeof entries.next>>;
      try {
        next = await entries.next();
      } catch (err) {
        if (this.failure) return;
        throw notWhole(err);
      }
      if (next.done) return;
      try {
        await this.unpack(next.value.header, next.value);
      } finally {
        next.value.resume();
      }
    }
  }

  private async unpack(h: Header, data: AsyncIterable<unknown>): Promise<void> {
    const name = h.name;
    // tar-stream gives a type it does not know (GNU sparse, volume labels) as null.
    const type: string = (h.type as string | null) ?? 'unknown';
    if (REFUSED_TYPES[type]) throw new TarError(`archive entry "${name}" is ${REFUSED_TYPES[type]}, which podctl cp does not copy`);
    if (!['file', 'contiguous-file', 'directory', 'symlink', 'link'].includes(type))
      throw new TarError(`archive entry "${name}" has a type podctl cp does not copy (${type})`);
    const rel = this.relPath(name);
    if (rel.split('/')[0] === posix.basename(this.staging)) throw this.refuse(name, `${rel} is where podctl stages the copy`);
    if (rel === '') {
      if (type === 'directory') return;
      throw this.refuse(name, `it would replace ${this.dest} itself`);
    }
    await this.stageParents(name, rel);
    const staged = join(this.staging, rel);
    const existing = await lstatOrNone(staged);
    if (existing?.isDirectory()) {
      if (type === 'directory') return;
      throw this.refuse(name, `${rel} is a directory earlier in the archive`);
    }
    // A later entry replaces an earlier one of the same name, as tar does.
    if (existing) {
      await unlink(staged);
      this.files.delete(rel);
    }
    this.names.set(rel, name);
    if (type === 'directory') {
      await mkdir(staged, { mode: 0o755 });
    } else if (type === 'symlink') {
      const target = h.linkname ?? '';
      if (isAbsolute(target)) throw this.refuse(name, `a symlink to the absolute path ${target}`);
      const to = posix.normalize(posix.join(posix.dirname(rel), target));
      if (to === '..' || to.startsWith('../')) throw this.refuse(name, `a symlink to ${target}, outside ${this.dest}`);
      await symlink(target, staged);
    } else if (type === 'link') {
      // Only to a file this archive put in the destination (kubectl cp writes nothing that leads out).
      const target = h.linkname ?? '';
      let to: string | undefined;
      try {
        to = this.relPath(target);
      } catch {
        to = undefined;
      }
      if (to === undefined || !this.files.has(to))
        throw this.refuse(name, `a hard link to "${target}", which is not a file earlier in the archive`);
      await link(join(this.staging, to), staged);
      this.files.add(rel);
    } else {
      // O_EXCL: never through anything already there. The mode is only the permission bits, and open() applies the umask.
      const fh = await open(
        staged,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        (h.mode ?? 0) & 0o777 || 0o644,
      );
      try {
        const chunks = data[Symbol.asyncIterator]();
        for (;;) {
          let next: IteratorResult<unknown>;
          try {
            next = await chunks.next();
          } catch {
            // The entry's stream fails only when the archive does (tar-stream destroys it with the archive).
            throw notWhole(new Error(`it ends inside "${name}"`));
          }
          if (next.done) break;
          await fh.write(next.value as Buffer);
        }
      } finally {
        await fh.close();
      }
      this.files.add(rel);
    }
  }

  /** Each missing parent of `rel` in the staging directory, made after the one above it was looked at. */
  private async stageParents(name: string, rel: string): Promise<void> {
    const parts = rel.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      const st = await lstatOrNone(join(this.staging, dir));
      if (!st) await mkdir(join(this.staging, dir), { mode: 0o755 });
      else if (st.isSymbolicLink()) throw this.refuse(name, `it would be written through the symlink ${dir}`);
      else if (!st.isDirectory()) throw this.refuse(name, `${dir} is not a directory in the archive`);
    }
  }

  /**
   * Checks (apply false) or moves (apply true) the staged `rel` into `dest`: renamed whole where
   * nothing is there yet, a staged directory merged into an existing one (or into a symlink to a
   * directory inside `dest`), a staged file or symlink over an existing file.
   */
  private async place(rel: string, apply: boolean): Promise<void> {
    const staged = join(this.staging, rel);
    const final = join(this.root, rel);
    const name = this.names.get(rel) ?? rel;
    const [st, existing] = await Promise.all([lstat(staged), lstatOrNone(final)]);
    if (st.isDirectory() && existing) {
      if (existing.isSymbolicLink()) {
        let real: string;
        try {
          real = await realpath(final);
        } catch {
          throw this.refuse(name, `${final} is a symlink that leads nowhere`);
        }
        if (!within(this.root, real)) throw this.refuse(name, `its directory leads outside ${this.dest} through a symlink`);
        if (!(await lstat(real)).isDirectory()) throw this.refuse(name, `${final} exists and is not a directory`);
      } else if (!existing.isDirectory()) {
        throw this.refuse(name, `${final} exists and is not a directory`);
      }
      for (const child of await readdir(staged)) await this.place(`${rel}/${child}`, apply);
      return;
    }
    if (existing?.isSymbolicLink()) throw this.refuse(name, `${final} is a symlink already`);
    if (existing?.isDirectory()) throw this.refuse(name, `${final} is a directory already`);
    if (apply) await rename(staged, final);
  }
}
