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

/** Pipes `socket` to `port` in the sandbox until either side ends; rejects with the runtime's error text. */
export function forwardConnection(url: string, port: number, socket: Duplex): Promise<void> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    target.searchParams.append('port', String(port));
    const ws = new WebSocket(target, [PORTFORWARD_PROTOCOL]);
    const seenPort = [false, false];
    let failure: Error | undefined;
    const pending: Buffer[] = [];
    const send = (d: Buffer) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(Buffer.concat([Buffer.from([DATA]), d]));
      else if (ws.readyState === WebSocket.CONNECTING) pending.push(d);
    };
    socket.on('data', send);
    // The local side closing ends the stream; a half-close alone does not (the remote still answers).
    socket.on('close', () => ws.readyState === WebSocket.OPEN && ws.close());
    socket.on('error', () => ws.terminate());
    ws.on('open', () => {
      for (const d of pending.splice(0)) send(d);
    });
    ws.on('message', (data: Buffer) => {
      const channel = data[0];
      if (channel !== DATA && channel !== ERROR) return;
      const body = data.subarray(1);
      if (!seenPort[channel]) {
        seenPort[channel] = true;
        return;
      }
      if (channel === DATA) {
        if (body.length) socket.write(body);
      } else if (body.length) {
        failure = new PortForwardError(body.toString('utf8').trim());
      }
    });
    ws.on('unexpected-response', (_req, res) => {
      failure = new PortForwardError(`the runtime's streaming server refused the port-forward: HTTP ${res.statusCode}`);
      ws.terminate();
    });
    ws.on('error', (err) => (failure ??= err));
    ws.on('close', () => {
      socket.off('data', send);
      socket.end();
      if (failure) {
        socket.destroy();
        reject(failure);
      } else resolve();
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
