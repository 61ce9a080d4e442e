import { existsSync, statSync } from 'node:fs';
import { basename, dirname, posix, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import type { CriClient } from '../core/cri/client.js';
import { PodctlError } from '../core/errors.js';

export interface Location {
  namespace?: string;
  pod?: string;
  path: string;
}

/** `[NS/]POD:PATH` names a path in a pod; anything else (./a:b, /x, a) is local, as kubectl reads it. */
export function parseLocation(arg: string): Location {
  const m = /^(?:([a-z0-9][-a-z0-9.]*)\/)?([a-z0-9][-a-z0-9.]*):(.*)$/.exec(arg);
  if (!m) return { path: arg };
  if (!m[3]) throw new PodctlError(`${arg}: no path after the pod name`, { hint: 'e.g. web:/tmp/file', exitCode: 2 });
  return { namespace: m[1], pod: m[2], path: m[3] };
}

/** A copy's two ends as cp's arguments name them: exactly one is in a pod. */
export interface CopyPlan {
  /** The pod's end; `toPod` says which way the copy goes. */
  remote: Location & { pod: string };
  local: string;
  toPod: boolean;
}

export function planCopy(srcArg: string, destArg: string): CopyPlan {
  const src = parseLocation(srcArg);
  const dest = parseLocation(destArg);
  if (!!src.pod === !!dest.pod) {
    throw new PodctlError('exactly one of SRC and DEST must be POD:PATH', {
      hint: 'e.g. `podctl cp web:/etc/hosts ./hosts` or `podctl cp ./f web:/tmp/f`',
      exitCode: 2,
    });
  }
  const [remote, local] = src.pod ? [src, dest] : [dest, src];
  return { remote: remote as CopyPlan['remote'], local: local.path, toPod: !src.pod };
}

/** A small stream's text (the remote tar's messages), kept to its first 64 KiB. */
export function collectText(): { stream: Writable; text: () => string } {
  const kept: Buffer[] = [];
  let size = 0;
  const stream = new Writable({
    write: (c: Buffer, _e, cb) => {
      if (size < 64 * 1024) kept.push(c);
      size += c.length;
      cb();
    },
  });
  return { stream, text: () => Buffer.concat(kept).toString('utf8') };
}

/** What this host's filesystem can refuse a copy (no space, read-only, permission, a file where a directory is). */
const LOCAL_FS_CODES = new Set('ENOSPC EDQUOT EFBIG EROFS EACCES EPERM ENOTDIR EISDIR ENAMETOOLONG ELOOP EIO EMFILE ENFILE'.split(' '));

/**
 * A local filesystem's refusal said as cp's error on `path` (the copy's local end): "cp: /data: no
 * space left on device (ENOSPC)". Anything else (a socket's reset, a bug) is undefined, and stays
 * an unexpected error.
 */
export function localFsError(err: unknown, path: string): PodctlError | undefined {
  const e = err as NodeJS.ErrnoException | undefined;
  if (!(e instanceof Error) || typeof e.code !== 'string' || !LOCAL_FS_CODES.has(e.code)) return undefined;
  // Node's message is "ENOSPC: no space left on device, write": the words between the code and the call.
  const reason = /^[A-Z0-9_]+: ([^,]+)/.exec(e.message)?.[1] ?? e.code;
  return new PodctlError(`cp: ${path}: ${reason} (${e.code})`, { cause: e });
}

/** The remote path without a trailing slash, and its last name, which must name something. */
function remoteName(remotePath: string, what: string): { clean: string; base: string } {
  const clean = posix.normalize(remotePath).replace(/(.)\/$/, '$1');
  const base = posix.basename(clean);
  if (!base || base === '..' || base === '.') throw new PodctlError(`${remotePath}: ${what}`, { exitCode: 2 });
  return { clean, base };
}

/**
 * POD:PATH to `local`: the container's `tar cf -` unpacked as it arrives (see Extraction). An
 * existing local directory receives the copy under its own name; otherwise `local` is its new name.
 */
export async function copyFromPod(client: CriClient, containerId: string, remotePath: string, local: string): Promise<void> {
  const { clean, base } = remoteName(remotePath, 'name a file or directory to copy');
  const target = resolve(local);
  const intoDir = existsSync(target) && statSync(target).isDirectory();
  const destDir = intoDir ? target : dirname(target);
  if (!existsSync(destDir)) throw new PodctlError(`cp: ${dirname(local)}: no such directory`);
  if (!statSync(destDir).isDirectory()) throw new PodctlError(`cp: ${dirname(local)}: not a directory`);
  const cmd = ['tar', 'cf', '-', '-C', posix.dirname(clean), base];
  const { url } = await client.exec({ containerId, cmd, stdout: true, stderr: true });
  const result = await receiveInWorker({ url, destDir, rename: intoDir ? undefined : { from: base, to: basename(target) } });
  if ('refused' in result) throw new PodctlError(result.refused.message, result.refused);
  if ('error' in result) throw Object.assign(new Error(result.error.message), { stack: result.error.stack });
}

/** What copyFromPod hands the worker that receives the archive (cp-receive.ts). */
export interface ReceiveJob {
  url: string;
  destDir: string;
  rename?: { from: string; to: string };
}

/** The worker's answer: done; a refusal, said as cp's error; or an error of another kind, with its stack for --debug. */
export type ReceiveResult =
  { done: true } | { refused: { message: string; hint?: string; exitCode: number } } | { error: { message: string; stack?: string } };

/**
 * Node reads a socket into a new buffer each time, which V8 frees only at a scavenge; a stream that
 * allocates little else reaches one only after 32 MB of such buffers (V8's fixed external-memory
 * trigger), so a copy from a pod in this thread peaks some 40 MB above its start. A worker with a small
 * young generation (a documented resource limit) scavenges every few MB instead.
 */
const RECEIVE_YOUNG_GENERATION_MB = 2;

function receiveInWorker(job: ReceiveJob): Promise<ReceiveResult> {
  const worker = new Worker(new URL('./cp-receive.js', import.meta.url), {
    workerData: job,
    resourceLimits: { maxYoungGenerationSizeMb: RECEIVE_YOUNG_GENERATION_MB },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', (err: Error & { code?: string }) => {
      if (err.code !== 'ERR_WORKER_OUT_OF_MEMORY') return reject(err);
      reject(new PodctlError(`cp: the copy ran out of memory in its worker (${err.message})`, { cause: err }));
    });
    worker.once('exit', (code) => reject(new Error(`the copy's worker exited ${code} without an answer`)));
  });
}

/** `local` to POD:PATH: packed as it is sent, and unpacked by the container's own tar (`sh`, `head` and `tar` in its image). */
export async function copyToPod(client: CriClient, containerId: string, local: string, remotePath: string): Promise<void> {
  if (!existsSync(local)) throw new PodctlError(`cp: ${local}: no such file or directory`);
  const { clean, base } = remoteName(remotePath, "name the copy's path in the container");
  // ws and tar-stream are loaded here, not with this module: a copy from a pod receives in its worker.
  const [{ streamExec }, { packLocal, TarError }] = await Promise.all([import('../core/exec/stream.js'), import('../core/exec/tar.js')]);
  // A refusal of a local file said as cp's error; anything else as it is.
  const asCpError = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      if (err instanceof TarError) throw new PodctlError(`cp: ${err.message}`, { cause: err });
      throw localFsError(err, local) ?? err;
    }
  };
  const archive = await asCpError(() => packLocal(local, base));
  // v4 cannot close the remote stdin: head reads exactly the archive, so tar sees its end.
  const script = 'mkdir -p "$1" && head -c "$2" | tar xf - -C "$1"';
  const cmd = ['sh', '-c', script, 'sh', posix.dirname(clean), String(archive.size)];
  const { url } = await client.exec({ containerId, cmd, stdin: true, stdout: true, stderr: true });
  const stderr = collectText();
  const exitCode = await asCpError(() =>
    streamExec(url, { stdinFrames: archive.frames(), stdout: collectText().stream, stderr: stderr.stream }),
  );
  if (exitCode !== 0) throw new PodctlError(`cp: unpacking in the container exited ${exitCode}: ${stderr.text().trim() || 'no message'}`);
}
