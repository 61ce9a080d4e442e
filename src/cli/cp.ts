import { existsSync, statSync } from 'node:fs';
import { basename, dirname, posix, resolve } from 'node:path';
import { Writable } from 'node:stream';
import type { CriClient } from '../core/cri/client.js';
import { PodctlError } from '../core/errors.js';
import { streamExec } from '../core/exec/stream.js';
import { Extraction, packLocal, TarError } from '../core/exec/tar.js';

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

/** The remote path without a trailing slash, and its last name, which must name something. */
function remoteName(remotePath: string, what: string): { clean: string; base: string } {
  const clean = posix.normalize(remotePath).replace(/(.)\/$/, '$1');
  const base = posix.basename(clean);
  if (!base || base === '..' || base === '.') throw new PodctlError(`${remotePath}: ${what}`, { exitCode: 2 });
  return { clean, base };
}

/** A refusal of the archive (or of a local file) said as cp's error; anything else as it is. */
async function asCpError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof TarError) throw new PodctlError(`cp: ${err.message}`, { cause: err });
    throw err;
  }
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
  const cmd = ['tar', 'cf', '-', '-C', posix.dirname(clean), base];
  const { url } = await client.exec({ containerId, cmd, stdout: true, stderr: true });
  const extraction = await Extraction.open(destDir, intoDir ? undefined : { from: base, to: basename(target) });
  try {
    await asCpError(async () => {
      const stderr = collectText();
      const exitCode = await streamExec(url, { stdout: extraction.input, stderr: stderr.stream });
      if (exitCode !== 0) throw new PodctlError(`cp: tar in the container exited ${exitCode}: ${stderr.text().trim() || 'no message'}`);
      await extraction.finish();
    });
  } finally {
    await extraction.discard();
  }
}

/** `local` to POD:PATH: packed as it is sent, and unpacked by the container's own tar (`sh`, `head` and `tar` in its image). */
export async function copyToPod(client: CriClient, containerId: string, local: string, remotePath: string): Promise<void> {
  if (!existsSync(local)) throw new PodctlError(`cp: ${local}: no such file or directory`);
  const { clean, base } = remoteName(remotePath, "name the copy's path in the container");
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
