import {
  chmod,
  chown,
  lchown,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { removeBelow, safeJoin, safeJoinRelative } from '../util/safe-path.js';
import { PayloadError } from './errors.js';

/** One file of a volume: its bytes and its permission bits. */
export interface FileProjection {
  data: Buffer;
  mode: number;
}

/** Relative path -> content, as the kubelet's payload for AtomicWriter. */
export type Payload = Map<string, FileProjection>;

export const DATA_DIR_NAME = '..data';
const DATA_DIR_TMP_NAME = '..data_tmp';

/**
 * Checks a key-to-path item path as AtomicWriter's validatePath (same words): relative, no '..' element, and a
 * first element not starting with '..' (that prefix is reserved for ..data and the timestamped directories).
 * Returns the cleaned path.
 */
export function cleanItemPath(p: string): string {
  if (p === '') throw new PayloadError('invalid path: must not be empty: ""');
  if (p.startsWith('/')) throw new PayloadError(`invalid path: must be relative path: ${p}`);
  if (p.length > 4096) throw new PayloadError('invalid path: must be less than or equal to 4096 characters');
  const parts = p.split('/');
  for (const part of parts) {
    if (part === '..') throw new PayloadError(`invalid path: must not contain '..': ${p}`);
    if (part.length > 255) throw new PayloadError('invalid path: filenames must be less than or equal to 255 characters');
  }
  if (parts[0]!.startsWith('..') && parts[0]!.length > 2) throw new PayloadError(`invalid path: must not start with '..': ${p}`);
  const clean = posix.normalize(p).replace(/\/+$/, '');
  if (clean === '.' || clean === '') throw new PayloadError(`invalid path: names no file: ${p}`);
  return clean;
}

export interface WriteOptions {
  /** Group of every file and directory, with group read and setgid directories (SetVolumeOwnership for a read-only volume). */
  fsGroup?: number;
}

/** Go's time layout 2006_01_02_15_04_05, in UTC, as the kubelet names its timestamped directories. */
function timestamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const parts = [d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()];
  return [String(d.getUTCFullYear()), ...parts.map(p)].join('_');
}

function fileMode(mode: number, opts: WriteOptions): number {
  // Permission bits only, as Go's os.Chmod with a numeric mode: never setuid, setgid or sticky on a file.
  return (mode & 0o777) | (opts.fsGroup === undefined ? 0 : 0o440);
}

function dirMode(opts: WriteOptions): number {
  return opts.fsGroup === undefined ? 0o755 : 0o2755;
}

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else out.push(rel);
  }
  return out;
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** True when the current ..data already holds exactly this payload (content, mode, group) and every visible link exists. */
async function isCurrent(targetDir: string, tsDir: string | undefined, payload: Payload, opts: WriteOptions): Promise<boolean> {
  if (tsDir === undefined) return false;
  const base = join(targetDir, tsDir);
  let files: string[];
  try {
    files = await listFiles(base);
  } catch {
    return false;
  }
  if (files.length !== payload.size) return false;
  for (const f of files) {
    const want = payload.get(f);
    if (!want) return false;
    const st = await lstat(join(base, f));
    if (!st.isFile() || (st.mode & 0o7777) !== fileMode(want.mode, opts)) return false;
    if (opts.fsGroup !== undefined && st.gid !== opts.fsGroup) return false;
    if (!want.data.equals(await readFile(join(base, f)))) return false;
  }
  for (const top of topLevel(payload)) if (!(await exists(join(targetDir, top)))) return false;
  return true;
}

function topLevel(payload: Payload): Set<string> {
  return new Set([...payload.keys()].map((p) => p.split('/')[0]!));
}

/**
 * Writes the payload into targetDir the way the kubelet's AtomicWriter does, so that a reader in the container
 * sees either the old or the new set of files, never a mix: the files go to a fresh ..<timestamp> directory,
 * ..data is switched to it by rename, and every top-level name is a symlink through ..data.
 * Returns false, touching nothing, when the payload is already what is on disk.
 */
export async function writePayload(targetDir: string, payload: Payload, opts: WriteOptions = {}, now: Date = new Date()): Promise<boolean> {
  let oldTsDir: string | undefined;
  try {
    oldTsDir = await readlink(join(targetDir, DATA_DIR_NAME));
  } catch {
    oldTsDir = undefined;
  }
  if (await isCurrent(targetDir, oldTsDir, payload, opts)) return false;
  const oldTop = new Set<string>();
  if (oldTsDir !== undefined) {
    try {
      for (const f of await listFiles(join(targetDir, oldTsDir))) oldTop.add(f.split('/')[0]!);
    } catch {
      // A missing old directory has nothing to clean up.
    }
  }

  const tsPath = await mkdtemp(join(targetDir, `..${timestamp(now)}.`));
  const tsName = tsPath.slice(targetDir.length + 1);
  const dmode = dirMode(opts);
  await chmod(tsPath, dmode);
  if (opts.fsGroup !== undefined) await chown(tsPath, -1, opts.fsGroup);
  for (const [rel, f] of payload) {
    const full = safeJoinRelative(tsPath, rel, 'items[].path');
    const parent = dirname(full);
    if (parent !== tsPath) {
      // mkdir with recursive returns the first directory it created; set modes on each one.
      const created = await mkdir(parent, { recursive: true, mode: dmode });
      if (created) {
        for (let d = parent; d.length >= created.length; d = dirname(d)) {
          await chmod(d, dmode);
          if (opts.fsGroup !== undefined) await chown(d, -1, opts.fsGroup);
        }
      }
    }
    const mode = fileMode(f.mode, opts);
    await writeFile(full, f.data, { mode });
    // The umask trims the mode given to open(2); set it exactly.
    await chmod(full, mode);
    if (opts.fsGroup !== undefined) await chown(full, -1, opts.fsGroup);
  }

  const newTop = topLevel(payload);
  for (const top of newTop) {
    const link = safeJoin(targetDir, [['items[].path', top]]);
    let st;
    try {
      st = await lstat(link);
    } catch {
      await symlink(join(DATA_DIR_NAME, top), link);
      if (opts.fsGroup !== undefined) await lchown(link, -1, opts.fsGroup);
      continue;
    }
    if (!st.isSymbolicLink()) throw new PayloadError(`cannot write "${top}": something that is not the writer's link is in the way`);
  }

  const tmpLink = join(targetDir, DATA_DIR_TMP_NAME);
  await rm(tmpLink, { force: true });
  await symlink(tsName, tmpLink);
  if (opts.fsGroup !== undefined) await lchown(tmpLink, -1, opts.fsGroup);
  await rename(tmpLink, join(targetDir, DATA_DIR_NAME));

  for (const top of oldTop) {
    if (newTop.has(top)) continue;
    try {
      const st = await lstat(join(targetDir, top));
      if (st.isSymbolicLink()) await unlink(join(targetDir, top));
    } catch {
      // Already gone.
    }
  }
  // The previous timestamped directory, and any left by an interrupted write.
  for (const e of await readdir(targetDir)) {
    if (e.startsWith('..') && e !== DATA_DIR_NAME && e !== tsName) await removeBelow([targetDir], join(targetDir, e));
  }
  return true;
}
