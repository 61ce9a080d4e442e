import type { Duplex } from 'node:stream';
import WebSocket from 'ws';

/**
 * The CRI streaming server's port-forward over WebSocket: the port goes in the
 * URL's query (`?port=N`), and each port gets two channels, data (0) and error
 * (1), whose first frame is the port as two little-endian bytes. One
 * WebSocket carries one connection (the URL is single-use, so each local
 * connection asks the runtime for a new one). containerd 1.6 accepts
 * "v4.channel.k8s.io" here as for exec, so no SPDY is needed.
 */
export const PORTFORWARD_PROTOCOL = 'v4.channel.k8s.io';

const DATA = 0;
const ERROR = 1;

export class PortForwardError extends Error {}

export interface ForwardOptions {
  /**
   * Takes the runtime's error text as it comes (the kubelet's "error forwarding port ..."); the
   * connection then ends as usual and the promise resolves. Without it the promise rejects with it.
   */
  onError?: (message: string) => void;
  /** Bytes queued toward the runtime before reading from `socket` pauses. */
  highWaterMark?: number;
}

const HIGH_WATER_MARK = 1 << 20;

/**
 * Pipes `socket` to `port` in the sandbox until either side ends; rejects with the runtime's error
 * text (unless `onError` takes it) or with why the runtime's stream could not be had. Neither way
 * buffers without bound: `socket` is paused while the WebSocket's send buffer is over the mark,
 * and the WebSocket while `socket` is not draining.
 */
export function forwardConnection(url: string, port: number, socket: Duplex, opts: ForwardOptions = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const highWaterMark = opts.highWaterMark ?? HIGH_WATER_MARK;
    const target = new URL(url);
    target.searchParams.append('port', String(port));
    const ws = new WebSocket(target, [PORTFORWARD_PROTOCOL]);
    const seenPort = [false, false];
    let failure: Error | undefined;
    let draining = false;
    // Nothing is read from the local side until the runtime's side is open.
    socket.pause();
    const send = (d: Buffer) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      ws.send(Buffer.concat([Buffer.from([DATA]), d]), () => {
        if (ws.bufferedAmount < highWaterMark && ws.readyState === WebSocket.OPEN) socket.resume();
      });
      if (ws.bufferedAmount >= highWaterMark) socket.pause();
    };
    socket.on('data', send);
    // The local side closing ends the stream; a half-close alone does not (the remote still answers).
    const onClose = () => (ws.readyState === WebSocket.CONNECTING || draining ? ws.terminate() : ws.close());
    socket.on('close', onClose);
    const onError = () => ws.terminate();
    socket.on('error', onError);
    if (socket.destroyed) onClose();
    ws.on('open', () => socket.resume());
    ws.on('message', (data: Buffer) => {
      const channel = data[0];
      if (channel !== DATA && channel !== ERROR) return;
      const body = data.subarray(1);
      if (!seenPort[channel]) {
        seenPort[channel] = true;
        return;
      }
      if (channel === DATA) {
        if (body.length && !socket.write(body) && !draining) {
          draining = true;
          ws.pause();
          socket.once('drain', () => {
            draining = false;
            ws.resume();
          });
        }
      } else if (body.length) {
        const text = body.toString('utf8').trim();
        if (opts.onError) opts.onError(text);
        else failure = new PortForwardError(text);
      }
    });
    ws.on('unexpected-response', (_req, res) => {
      failure = new PortForwardError(`the runtime's streaming server refused the port-forward: HTTP ${res.statusCode}`);
      ws.terminate();
    });
    ws.on('error', (err) => (failure ??= err));
    ws.on('close', () => {
      socket.off('data', send);
      socket.off('close', onClose);
      socket.off('error', onError);
      if (failure) {
        socket.destroy();
        reject(failure);
      } else {
        socket.end();
        resolve();
      }
    });
  });
}

export interface PortSpec {
  /** 0: any free port. */
  local: number;
  remote: number;
}

/** kubectl's `[LOCAL:]REMOTE` (`:REMOTE` or `0:REMOTE` for a random local port); an Error naming what is wrong. */
export function parsePortSpec(spec: string): PortSpec {
  const m = /^(?:(\d*):)?(\d+)$/.exec(spec);
  const check = (text: string, what: string, allowZero: boolean) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < (allowZero ? 0 : 1) || n > 65535)
      throw new Error(`${spec}: ${what} port must be ${allowZero ? '0' : '1'}-65535`);
    return n;
  };
  if (!m) throw new Error(`${spec}: expected [LOCAL:]REMOTE, e.g. 8080, 18080:8080 or :8080`);
  const remote = check(m[2]!, 'remote', false);
  const local = m[1] === undefined ? remote : m[1] === '' ? 0 : check(m[1], 'local', true);
  return { local, remote };
}
