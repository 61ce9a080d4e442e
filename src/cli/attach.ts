import type { CriClient } from '../core/cri/client.js';
import { PodctlError } from '../core/errors.js';
import { streamExec } from '../core/exec/stream.js';

/**
 * CRI Attach to a container, this terminal's stdio on the other end: raw mode while a local
 * terminal is attached to a remote one, stdin let go afterwards so the process can exit.
 */
export async function streamAttach(
  client: CriClient,
  containerId: string,
  opts: { stdin: boolean; tty: boolean; what: string },
): Promise<void> {
  const url = await client.attach({ containerId, stdin: opts.stdin, tty: opts.tty, stdout: true, stderr: !opts.tty });
  const input = process.stdin;
  const raw = opts.tty && input.isTTY;
  if (raw) input.setRawMode(true);
  try {
    await streamExec(url, { stdin: opts.stdin ? input : undefined, stdout: process.stdout, stderr: process.stderr });
  } catch (err) {
    throw new PodctlError(`${opts.what}: ${(err as Error).message}`, { cause: err });
  } finally {
    if (raw) input.setRawMode(false);
    input.pause();
  }
}
