import WebSocket from 'ws';

/**
 * The Kubernetes remote-command protocol over WebSocket, as the CRI streaming
 * server (the URL an Exec call returns) speaks it. containerd 1.6 answers
 * "v4.channel.k8s.io" (and the older "channel.k8s.io"); it refuses
 * "v5.channel.k8s.io", so a client cannot half-close stdin there. Every
 * binary frame starts with its channel number.
 */
export const EXEC_PROTOCOL = 'v4.channel.k8s.io';

const STDIN_HIGH_WATER = 1024 * 1024;

export const Channel = {
  Stdin: 0,
  Stdout: 1,
  Stderr: 2,
  /** v4: a metav1.Status as JSON once the command ended. */
  Error: 3,
  Resize: 4,
} as const;

export interface TerminalSize {
  width: number;
  height: number;
}

export interface ExecStreams {
  stdin?: NodeJS.ReadableStream;
  /**
   * Stdin as frames instead (cp's archive): byte 0 of each is left for the channel, so that it is
   * sent as it is; the next one is asked for once the previous one was sent, so they can be reused.
   */
  stdinFrames?: AsyncIterator<Buffer, void, undefined>;
  stdout: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  /** The terminal's size now, and a way to hear when it changes (returns the unsubscribe). */
  size?: () => TerminalSize;
  onResize?: (listener: () => void) => () => void;
}

interface Status {
  status?: string;
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}

export class ExecStreamError extends Error {}

/** The exit code a v4 status carries: 0 on Success, the ExitCode cause on NonZeroExitCode; an error otherwise. */
export function exitCodeFromStatus(text: string): number {
  let status: Status;
  try {
    status = JSON.parse(text) as Status;
  } catch {
    throw new ExecStreamError(text.trim() || 'the runtime ended the exec without a status');
  }
  if (status.status === 'Success') return 0;
  if (status.reason === 'NonZeroExitCode') {
    const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return code;
  }
  throw new ExecStreamError(status.message || `exec failed: ${text}`);
}

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

/** Whether the streaming server's URL names this host's loopback (containerd's listens on 127.0.0.1). */
function isLoopback(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return false;
  }
  return LOOPBACK_HOSTS.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Masking keeps a browser's script from steering what proxies and caches on the way see; on
 * loopback there is nothing on the way, so the mask is all zero, and ws then sends each frame as
 * it is instead of copying it to mask it (cp sends hundreds of MB).
 */
const zeroMask = (mask: Buffer) => mask.fill(0);

/** Sends stdin and resizes, prints stdout and stderr, and resolves with the remote command's exit code. */
export function streamExec(url: string, io: ExecStreams): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, [EXEC_PROTOCOL], isLoopback(url) ? { generateMask: zeroMask } : {});
    let exitCode: number | undefined;
    let failure: Error | undefined;
    const cleanups: (() => void)[] = [];
    const send = (channel: number, data: Buffer) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(Buffer.concat([Buffer.from([channel]), data]));
    };
    // Backpressure: the socket is not read while an output stream is full, so the remote command waits.
    const write = (out: NodeJS.WritableStream, data: Buffer) => {
      if (out.write(data) || ws.isPaused) return;
      ws.pause();
      out.once('drain', () => ws.resume());
    };
    const sendSize = () => {
      const s = io.size?.();
      if (s) send(Channel.Resize, Buffer.from(JSON.stringify({ Width: s.width, Height: s.height })));
    };

    // One frame in ws at a time: the socket takes it at once on loopback, and the frame is then reused.
    const pumpFrames = async (frames: AsyncIterator<Buffer, void, undefined>) => {
      try {
        for (;;) {
          const next = await frames.next();
          if (next.done || ws.readyState !== WebSocket.OPEN) break;
          next.value[0] = Channel.Stdin;
          // A send that fails found the socket closed, which the close handler reports.
          if (!(await new Promise<boolean>((resolve) => ws.send(next.value, (err) => resolve(!err))))) break;
        }
      } catch (err) {
        // A local file that changed under cp ends the exec rather than leave it waiting for input.
        failure ??= err as Error;
        ws.terminate();
      } finally {
        await frames.return?.();
      }
    };

    ws.on('open', () => {
      if (ws.protocol !== EXEC_PROTOCOL) {
        failure = new ExecStreamError(`the runtime's streaming server answered protocol "${ws.protocol}", not ${EXEC_PROTOCOL}`);
        ws.close();
        return;
      }
      sendSize();
      if (io.onResize) cleanups.push(io.onResize(sendSize));
      if (io.stdinFrames) pumpFrames(io.stdinFrames).catch((err: Error) => (failure ??= err));
      if (io.stdin) {
        const stdin = io.stdin;
        // Backpressure: stdin waits while the socket holds more than a little unsent (cp's archives are large).
        let held = false;
        const onSent = () => {
          if (held && ws.bufferedAmount < STDIN_HIGH_WATER) {
            held = false;
            stdin.resume();
          }
        };
        const onData = (d: Buffer | string) => {
          if (ws.readyState !== WebSocket.OPEN) return;
          ws.send(Buffer.concat([Buffer.from([Channel.Stdin]), Buffer.isBuffer(d) ? d : Buffer.from(d)]), onSent);
          if (!held && ws.bufferedAmount >= STDIN_HIGH_WATER) {
            held = true;
            stdin.pause();
          }
        };
        // A stdin that fails (a local file that changed under cp) ends the exec rather than leave it waiting for input.
        const onError = (err: Error) => {
          failure ??= err;
          ws.terminate();
        };
        stdin.on('data', onData);
        stdin.on('error', onError);
        cleanups.push(() => {
          stdin.off('data', onData);
          stdin.off('error', onError);
        });
      }
    });
    ws.on('message', (data: Buffer) => {
      if (data.length === 0) return;
      const body = data.subarray(1);
      switch (data[0]) {
        case Channel.Stdout:
          if (body.length) write(io.stdout, body);
          break;
        case Channel.Stderr:
          if (body.length) write(io.stderr ?? io.stdout, body);
          break;
        case Channel.Error:
          try {
            exitCode = exitCodeFromStatus(body.toString('utf8'));
          } catch (err) {
            failure = err as Error;
          }
          break;
      }
    });
    ws.on('unexpected-response', (_req, res) => {
      failure = new ExecStreamError(`the runtime's streaming server refused the exec: HTTP ${res.statusCode}`);
      ws.terminate();
    });
    ws.on('error', (err) => (failure ??= err));
    ws.on('close', () => {
      for (const c of cleanups) c();
      if (failure) reject(failure);
      else if (exitCode === undefined) reject(new ExecStreamError('the exec stream closed before the command reported its exit'));
      else resolve(exitCode);
    });
  });
}

/** What a bridge hears from the runtime's side of a remote command. */
export interface RuntimeCommandHandlers {
  /** stdout (1) or stderr (2); false: the reader is full, the runtime's stream is paused until resume(). */
  output(channel: typeof Channel.Stdout | typeof Channel.Stderr, data: Buffer): boolean;
  /** The v4 status (a metav1.Status as JSON) the runtime sent when the command ended. */
  status(text: string): void;
}

/** The runtime's side of a remote command, for a bridge (the kube API's exec and attach). */
export interface RuntimeCommand {
  stdin(data: Buffer): void;
  /** The end of stdin, which the command sees as EOF (possible only over SPDY: v4 WebSocket has no such signal). */
  closeStdin(): void;
  /** A resize message as the client sent it: `{"Width":W,"Height":H}`. */
  resize(body: Buffer): void;
  resume(): void;
  close(): void;
  /** Settles once the runtime's side is closed: rejected when it failed before a status. */
  readonly done: Promise<void>;
}
