import { closeSync, constants as fsc, fstatSync, openSync } from 'node:fs';
import { chmod, lstat, mkdir, realpath, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { checkRelativePath } from '../util/safe-path.js';
import { PayloadError } from './errors.js';
import { bindMount, isMountPoint, unmount } from './mount.js';

/**
 * The kubelet's expansion of subPathExpr: $(VAR) from the container's environment, $$ for a literal $,
 * anything else kept as written. A variable that is unset or empty is an error, as in the kubelet.
 */
export function expandSubPathExpr(expr: string, env: Record<string, string>): string {
  let out = '';
  const missing = new Set<string>();
  for (let i = 0; i < expr.length; i++) {
    const ch = expr[i]!;
    if (ch !== '$' || i + 1 >= expr.length) {
      out += ch;
      continue;
    }
    const next = expr[i + 1]!;
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = expr.indexOf(')', i + 2);
      if (close < 0) {
        out += '$(';
        i++;
      } else {
        const name = expr.slice(i + 2, close);
        const value = env[name];
        if (!value) missing.add(name);
        out += value ?? '';
        i = close;
      }
    } else {
      out += `$${next}`;
      i++;
    }
  }
  if (missing.size) throw new PayloadError(`missing value for ${[...missing].sort().join(', ')}`);
  return out;
}

function within(base: string, p: string): boolean {
  return p === base || p.startsWith(base.endsWith('/') ? base : `${base}/`);
}

/**
 * Resolves subPath inside the volume at volumePath and returns its real host path. Refuses an absolute path,
 * a '..' element, and any symlink (at any depth) that leads out of the volume. Creates missing directories with
 * the volume root's mode, as the kubelet's SafeMakeDir does, so an fsGroup volume's setgid and group bits carry on.
 */
export async function prepareSubPath(volumePath: string, subPath: string): Promise<string> {
  if (isAbsolute(subPath)) throw new PayloadError(`error SubPath \`${subPath}\` must not be an absolute path`);
  if (subPath.split('/').includes('..')) throw new PayloadError(`unable to provision SubPath \`${subPath}\`: must not contain '..'`);
  try {
    checkRelativePath(subPath, 'subPath');
  } catch (err) {
    throw new PayloadError((err as Error).message);
  }
  const base = await realpath(volumePath);
  const perm = (await stat(base)).mode & 0o7777;
  let cur = base;
  for (const part of subPath.split('/')) {
    if (part === '' || part === '.') continue;
    const next = join(cur, part);
    let st;
    try {
      st = await lstat(next);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      try {
        await mkdir(next, { mode: perm });
        await chmod(next, perm);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      st = await lstat(next);
    }
    if (st.isSymbolicLink()) {
      let target: string;
      try {
        target = await realpath(next);
      } catch {
        throw new PayloadError(`subpath "${join(cur, part)}" is a symlink to nothing`);
      }
      if (!within(base, target)) throw new PayloadError(`subpath "${target}" not within volume path "${base}"`);
      cur = target;
    } else {
      cur = next;
    }
  }
  const real = await realpath(cur);
  if (!within(base, real)) throw new PayloadError(`subpath "${real}" not within volume path "${base}"`);
  return real;
}

/** Linux O_PATH (the same value on x86, arm and riscv): a handle to a file without opening its content. */
const O_PATH = 0o10000000;

/**
 * Opens rel under base one element at a time without following any symlink (an openat walk through
 * /proc/self/fd), so a directory swapped for a symlink after prepareSubPath checked it is refused.
 * Returns an O_PATH descriptor; the caller closes it.
 */
export function openInside(base: string, rel: string): number {
  let fd = openSync(base, O_PATH | fsc.O_NOFOLLOW | fsc.O_DIRECTORY);
  try {
    for (const part of rel.split('/')) {
      if (part === '' || part === '.') continue;
      if (part === '..') throw new PayloadError(`unable to provision SubPath: must not contain '..'`);
      const next = openSync(`/proc/self/fd/${fd}/${part}`, O_PATH | fsc.O_NOFOLLOW);
      closeSync(fd);
      fd = next;
      if (fstatSync(fd).isSymbolicLink()) throw new PayloadError(`subpath element "${part}" changed into a symlink`);
    }
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/**
 * The kubelet's answer to a container racing its own subPath (swapping a checked directory for a symlink before
 * the runtime mounts it): the checked path is opened without following symlinks and bind-mounted, through its
 * descriptor, at target; the runtime then mounts target, which no container can change. Reuses a bind already
 * at target when it is the same file. Returns target.
 */
export async function bindSubPath(volumePath: string, subPath: string, target: string): Promise<string> {
  const real = await prepareSubPath(volumePath, subPath);
  const base = await realpath(volumePath);
  const fd = openInside(base, relative(base, real));
  try {
    const src = fstatSync(fd);
    if (await isMountPoint(target)) {
      const cur = await stat(target);
      if (cur.dev === src.dev && cur.ino === src.ino) return target;
      await unmount(target);
    }
    await mkdir(dirname(target), { recursive: true, mode: 0o750 });
    try {
      await lstat(target);
    } catch {
      if (src.isDirectory()) await mkdir(target, { mode: 0o750 });
      else await writeFile(target, '', { mode: 0o640 });
    }
    // --no-canonicalize: mount(8) must hand the kernel the descriptor's magic link, not a path resolved anew.
    await bindMount(`/proc/${process.pid}/fd/${fd}`, target);
    return target;
  } finally {
    closeSync(fd);
  }
}
