import { request as httpRequest } from 'node:http';
import type { Duplex } from 'node:stream';
import transport, { type SpdyConnection, type SpdyParser, type SpdyStream } from 'spdy-transport';
import { Channel, EXEC_PROTOCOL, ExecStreamError, type RuntimeCommand, type RuntimeCommandHandlers } from './stream.js';

export type { SpdyConnection, SpdyStream } from 'spdy-transport';

/**
 * SPDY/3.1 as Kubernetes speaks it (moby/spdystream, on both kubectl's and the CRI streaming
 * server's side): streams are opened with only their own headers (streamType, port, requestID),
 * never HTTP's :method and :path, and answered with an empty SYN_REPLY, never a :status.
 * spdy-transport's SPDY parser wants both, so this variant of it fills them in as an HTTP
 * request and a 200 before the connection sees the frame; the framing stays spdy-transport's.
 */
const KUBE_SPDY = 'kube-spdy';
const SYN_STREAM = 1;
const SYN_REPLY = 2;

function kubeParser(options: unknown): SpdyParser {
  const parser = transport.protocol.spdy!.parser.create(options);
  const onSynHeadFrame = parser.onSynHeadFrame;
  const parseKVs = parser.parseKVs;
  // onSynHeadFrame asks parseKVs for the frame's headers at once: the type is known there.
  let synType: number | undefined;
  parser.onSynHeadFrame = function (type, flags, body, callback) {
    synType = type;
    return onSynHeadFrame.call(this, type, flags, body, callback);
  };
  parser.parseKVs = function (body, callback) {
    const type = synType;
    synType = undefined;
    return parseKVs.call(this, body, (err, headers) => {
      if (!err && headers && type === SYN_STREAM) {
        headers[':method'] ??= 'POST';
        headers[':path'] ??= '/';
      } else if (!err && headers && type === SYN_REPLY) headers[':status'] ??= '200';
      callback(err, headers);
    });
  };
  return parser;
}

transport.protocol[KUBE_SPDY] ??= { ...transport.protocol.spdy!, parser: { create: kubeParser } };

/** Kubernetes' streams are read as they come: a window large enough that the peer's writes never wait on it. */
const WINDOW = 16 * 1024 * 1024;

/** A SPDY/3.1 session over an upgraded socket (the 101 already exchanged). */
export function spdySession(socket: Duplex, isServer: boolean): SpdyConnection {
  const connection = transport.connection.create(socket, { protocol: KUBE_SPDY, isServer, windowSize: WINDOW });
  connection.start(3.1);
  return connection;
}

export const SPDY_UPGRADE = 'SPDY/3.1';
export const STREAM_PROTOCOL_HEADER = 'X-Stream-Protocol-Version';

export class SpdyDialError extends Error {}

/** POSTs an upgrade to SPDY/3.1 offering `protocols`; the session and the protocol the server chose. */
export function dialSpdy(url: string, protocols: string[]): Promise<{ session: SpdyConnection; protocol: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers: { Connection: 'Upgrade', Upgrade: SPDY_UPGRADE, [STREAM_PROTOCOL_HEADER]: protocols },
    });
    req.on('upgrade', (res, socket, head) => {
      const protocol = String(res.headers[STREAM_PROTOCOL_HEADER.toLowerCase()] ?? '');
      if (!protocols.includes(protocol)) {
        socket.destroy();
        reject(new SpdyDialError(`the streaming server answered protocol "${protocol}", not one of ${protocols.join(', ')}`));
        return;
      }
      if (head.length) socket.unshift(head);
      resolve({ session: spdySession(socket, false), protocol });
    });
    req.on('response', (res) => {
      res.resume();
      reject(new SpdyDialError(`the streaming server refused the upgrade to SPDY: HTTP ${res.statusCode}`));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a stream with Kubernetes' headers and waits for its reply. */
export function openSpdyStream(session: SpdyConnection, headers: Record<string, string>): Promise<SpdyStream> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ method: 'POST', path: '/', headers }, (err) => {
      if (err) reject(err);
    });
    // A stream's failure is the session's (a socket gone): whoever reads it hears of it by its close.
    stream.on('error', () => undefined);
    stream.once('response', () => resolve(stream));
    stream.once('close', () => reject(new SpdyDialError(`the server closed the ${headers.streamType ?? ''} stream before answering it`)));
  });
}

export interface SpdyCommandStreams {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * The runtime's remote command over SPDY (v4.channel.k8s.io), the CRI streaming server's other
 * transport: unlike its v4 WebSocket, the stdin stream can be half-closed, and the command then
 * reads EOF. The streams opened are exactly those the Exec or Attach request named (the server
 * waits for all of them): error first, as the kubelet's own client opens them.
 */
export async function openRuntimeSpdy(url: string, want: SpdyCommandStreams, handlers: RuntimeCommandHandlers): Promise<RuntimeCommand> {
  const { session } = await dialSpdy(url, [EXEC_PROTOCOL]);
  const open = (streamType: string) => openSpdyStream(session, { streamType });
  let failure: Error | undefined;
  session.on('error', (err: Error) => (failure ??= err));
  try {
    const error = await open('error');
    const stdin = want.stdin ? await open('stdin') : undefined;
    const outputs = [
      ...(want.stdout ? [{ channel: Channel.Stdout, stream: await open('stdout') }] : []),
      ...(want.stderr && !want.tty ? [{ channel: Channel.Stderr, stream: await open('stderr') }] : []),
    ];
    const resize = want.tty ? await open('resize') : undefined;
    const ended = (s: SpdyStream) => new Promise<void>((res) => (s.readableEnded ? res() : s.once('end', res).once('close', res)));
    let statusText = '';
    let sawStatus = false;
    error.on('data', (d: Buffer) => (statusText += d.toString('utf8')));
    // The server closes the connection once it wrote the status: the stream may end without its FIN.
    const statusEnded = () => {
      if (sawStatus || !statusText) return;
      sawStatus = true;
      handlers.status(statusText);
    };
    error.once('end', statusEnded).once('close', statusEnded);
    for (const { channel, stream } of outputs)
      stream.on('data', (d: Buffer) => {
        if (d.length && !handlers.output(channel, d)) stream.pause();
      });
    const done = Promise.all([ended(error), ...outputs.map((o) => ended(o.stream))]).then(() => {
      statusEnded();
      session.end();
      session.socket.destroy();
      if (!sawStatus) throw failure ?? new ExecStreamError('the runtime closed the stream before the command reported its exit');
    });
    done.catch(() => undefined);
    session.socket.once('close', () => {
      // A session that went away closes what it carried, so that done settles.
      for (const s of [error, ...outputs.map((o) => o.stream)]) if (!s.readableEnded) s.destroy();
    });
    return {
      stdin: (d) => stdin?.write(d),
      closeStdin: () => stdin?.end(),
      resize: (b) => resize?.write(b),
      resume: () => outputs.forEach((o) => o.stream.resume()),
      close: () => session.socket.destroy(),
      done,
    };
  } catch (err) {
    session.socket.destroy();
    throw err;
  }
}
