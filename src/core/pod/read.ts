import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { PodctlError } from '../errors.js';
import type { ManifestProblem, PodSource } from './types.js';

/**
 * Reading manifests, apart from parsing them (load.ts, which loads the API validators): a command
 * that hands its manifests to the agent reads them with this alone and sends the texts.
 */

/** One manifest text as read: a file (its absolute path and the name the user gave) or stdin. */
export interface ManifestText {
  kind: Extract<PodSource['kind'], 'file' | 'stdin'>;
  /** Absolute file path, or '-'. */
  path: string;
  /** As the user named it (relative stays relative), or <stdin>. */
  display: string;
  text: string;
}

/** What the paths named, in order: each text read, and each problem of reading one (an error). */
export interface ReadManifests {
  entries: (ManifestText | { problem: ManifestProblem })[];
}

const MANIFEST_EXT = new Set(['.yaml', '.yml', '.json']);

/** The kubelet's file source rules: no hidden files, no editor leftovers. */
export function isManifestFileName(name: string): boolean {
  if (name.startsWith('.') || name.endsWith('~') || (name.startsWith('#') && name.endsWith('#'))) return false;
  if (name.endsWith('.swp') || name.endsWith('.swx')) return false;
  return MANIFEST_EXT.has(extname(name).toLowerCase());
}

function errnoWords(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    case 'EISDIR':
      return 'is a directory';
    default:
      return (err as Error).message;
  }
}

/**
 * The files a path names: itself, or the manifest files directly inside a directory, sorted.
 * Read synchronously, as the file reads below: a command reads a few small files as it starts,
 * and each asynchronous read was thread-pool round trips with the process idle between them.
 */
function expand(path: string, problems: { push(p: ManifestProblem): void }): { abs: string; display: string }[] {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    problems.push({ file: path, index: -1, field: '', message: `cannot read: ${errnoWords(err)}`, severity: 'error' });
    return [];
  }
  if (!st.isDirectory()) return [{ abs: resolve(path), display: path }];
  let names: string[];
  try {
    names = readdirSync(path);
  } catch (err) {
    problems.push({ file: path, index: -1, field: '', message: `cannot list directory: ${errnoWords(err)}`, severity: 'error' });
    return [];
  }
  const files = names.filter(isManifestFileName).sort();
  if (files.length === 0) {
    problems.push({
      file: path,
      index: -1,
      field: '',
      message: 'the directory has no manifest files (.yaml, .yml or .json)',
      severity: 'error',
    });
  }
  const out: { abs: string; display: string }[] = [];
  for (const name of files) {
    const full = join(path, name);
    try {
      if (statSync(full).isFile()) out.push({ abs: resolve(full), display: full });
    } catch (err) {
      problems.push({ file: full, index: -1, field: '', message: `cannot read: ${errnoWords(err)}`, severity: 'error' });
    }
  }
  return out;
}

/** Reads what the paths name (files, the manifest files of directories, - for stdin), in order. */
export async function readManifests(paths: string[], opts: { readStdin?: () => Promise<string> }): Promise<ReadManifests> {
  const out: ReadManifests = { entries: [] };
  const problems = { push: (problem: ManifestProblem) => out.entries.push({ problem }) };
  for (const path of paths) {
    if (path === '-') {
      if (!opts.readStdin) throw new PodctlError('reading manifests from stdin (-) is not possible here', { exitCode: 2 });
      out.entries.push({ kind: 'stdin', path: '-', display: '<stdin>', text: await opts.readStdin() });
      continue;
    }
    for (const file of expand(path, problems)) {
      try {
        out.entries.push({ kind: 'file', path: file.abs, display: file.display, text: readFileSync(file.abs, 'utf8') });
      } catch (err) {
        problems.push({ file: file.display, index: -1, field: '', message: `cannot read: ${errnoWords(err)}`, severity: 'error' });
      }
    }
  }
  return out;
}
