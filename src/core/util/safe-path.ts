import { lstat, realpath, rm } from 'node:fs/promises';
import { isAbsolute, resolve, sep } from 'node:path';

/**
 * The one place podctl turns manifest data (a UID, a namespace, a name, a
 * container or volume name, an item path, a subPath) into a host path. Every
 * path is checked to stay inside its root before anything is created or
 * removed there: a component that would climb out (`..`), start again at `/`,
 * or smuggle a separator or a NUL is refused, whatever validation let through.
 */
export class UnsafePathError extends Error {
  override readonly name = 'UnsafePathError';
}

/** Linux NAME_MAX: longer than this cannot be one path element. */
const NAME_MAX = 255;
/** Linux PATH_MAX. */
const PATH_MAX = 4096;

/** True when p is root itself or below it (both made absolute; the prefix check has a trailing separator). */
export function isInside(root: string, p: string): boolean {
  const r = resolve(root);
  const t = resolve(p);
  return t === r || t.startsWith(r.endsWith(sep) ? r : `${r}${sep}`);
}

/** One path element from manifest data: not empty, not . or .., no separator, no NUL, at most NAME_MAX bytes. */
export function checkComponent(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw new UnsafePathError(`${what} is empty; expected one path element`);
  if (value === '.' || value === '..') throw new UnsafePathError(`${what} ${JSON.stringify(value)} is not allowed in a path`);
  if (value.includes('/')) throw new UnsafePathError(`${what} ${JSON.stringify(value)} must not contain "/"`);
  if (value.includes('\0')) throw new UnsafePathError(`${what} ${JSON.stringify(value)} must not contain a NUL byte`);
  if (Buffer.byteLength(value) > NAME_MAX) throw new UnsafePathError(`${what} is longer than ${NAME_MAX} bytes`);
  return value;
}

/** A relative path from manifest data (item path, subPath): not absolute, no `..` element, no NUL, not empty. */
export function checkRelativePath(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') throw new UnsafePathError(`${what} is empty; expected a relative path`);
  if (value.includes('\0')) throw new UnsafePathError(`${what} ${JSON.stringify(value)} must not contain a NUL byte`);
  if (isAbsolute(value)) throw new UnsafePathError(`${what} ${JSON.stringify(value)} must be a relative path`);
  if (Buffer.byteLength(value) > PATH_MAX) throw new UnsafePathError(`${what} is longer than ${PATH_MAX} bytes`);
  for (const part of value.split('/')) {
    if (part === '..') throw new UnsafePathError(`${what} ${JSON.stringify(value)} must not contain '..'`);
    if (Buffer.byteLength(part) > NAME_MAX) throw new UnsafePathError(`${what} has an element longer than ${NAME_MAX} bytes`);
  }
  return value;
}

/** Throws unless p is strictly below root (root itself is refused too: nothing of a pod is the root). */
export function assertBelow(root: string, p: string, what = 'path'): string {
  if (!root) throw new UnsafePathError(`${what}: no root to check ${JSON.stringify(p)} against`);
  if (!isInside(root, p) || resolve(p) === resolve(root)) throw new UnsafePathError(`${what} ${JSON.stringify(p)} is outside ${root}`);
  return resolve(p);
}

/**
 * root joined with path elements, each one checked as a single element from
 * manifest data, with the result checked to be below root.
 */
export function safeJoin(root: string, components: [string, unknown][]): string {
  if (!root) throw new UnsafePathError('no root directory to build a path under');
  const parts = components.map(([what, value]) => checkComponent(value, what));
  return assertBelow(root, resolve(root, ...parts), components.map(([what]) => what).join('/'));
}

/** root joined with a relative path from manifest data (several elements allowed), checked to be below root. */
export function safeJoinRelative(root: string, rel: unknown, what: string): string {
  return assertBelow(root, resolve(root, checkRelativePath(rel, what)), what);
}

/**
 * rm -r of a directory of a pod, only when it lies strictly below one of
 * podctl's roots, also once symlinks are resolved (rm never follows the last
 * element; a symlinked parent would lead it elsewhere). A path that is absent
 * is fine. Returns false, removing nothing, when the path is refused.
 */
export async function removeBelow(roots: string[], p: string): Promise<boolean> {
  const root = roots.find((r) => r && isAbsolute(r) && isInside(r, p) && resolve(p) !== resolve(r));
  if (!root || !isAbsolute(p) || resolve(p) !== p) return false;
  try {
    await lstat(p);
  } catch {
    return true;
  }
  if (!isInside(await realpath(root), await realpath(p))) return false;
  await rm(p, { recursive: true, force: true });
  return true;
}
