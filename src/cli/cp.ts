import { Writable } from 'node:stream';
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
