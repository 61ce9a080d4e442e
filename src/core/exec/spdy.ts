import { request as httpRequest } from 'node:http';
import { Duplex } from 'node:stream';
import transport, { type SpdyConnection, type SpdyParser, type SpdyStream } from 'spdy-transport';
import { Channel, EXEC_PROTOCOL, ExecStreamError, type RuntimeCommand, type RuntimeCommandHandlers } from './stream.js';

export type { SpdyConnection, SpdyStream } from 'spdy-transport';

/**
 * SPDY/3.1 as Kubernetes speaks it (moby/spdystream, on both kubectl's and the CRI streaming
 * server's side):
 * - streams are opened with only their own headers (streamType, port, requestID), never HTTP's
 *   :method and :path, and answered with an empty SYN_REPLY, never a :status. spdy-transport's
 *   parser wants both: this variant fills them in as an HTTP request and a 200.
 * - the peer never sends SETTINGS or WINDOW_UPDATE (its reads block instead), so spdy-transport's
 *   writes would stop at the first 64 KiB window. Each DATA frame's bytes are given back to the
 *   session's and the stream's send windows once the frame is on its way, as a reader that keeps up
 *   would; the writes then wait on the socket's own backpressure.
 * The framing stays spdy-transport's.
 */
const KUBE_SPDY = 'kube-spdy';
const SYN_STREAM = 1;
const SYN_REPLY = 2;

interface FrameQueue {
  push(frame: object): boolean;
}
interface DataFramer {
  dataFrame(frame: { id: number; data: Buffer }, callback?: (err?: Error) => void): void;
}
interface SpdyModule {
  parser: { create(options: { window: object }): SpdyParser & FrameQueue };
  framer: { create(options: { window: object }): DataFramer };
}
const spdy = transport.protocol.spdy as unknown as SpdyModule;

/** A connection hands its parser and its framer the same window object: the framer finds its parser by it. */
const parserOf = new WeakMap<object, FrameQueue>();

function kubeParser(options: { window: object }): SpdyParser {
  const parser = spdy.parser.create(options);
  parserOf.set(options.window, parser);
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

function kubeFramer(options: { window: object }): DataFramer {
  const framer = spdy.framer.create(options);
  const parser = parserOf.get(options.window);
  const dataFrame = framer.dataFrame;
  framer.dataFrame = function (frame, callback) {
    return dataFrame.call(this, frame, (err) => {
      const delta = frame.data.length;
      // As if the peer had read them: WINDOW_UPDATEs the connection takes as the peer's own.
      if (!err && delta && parser) {
        parser.push({ type: 'WINDOW_UPDATE', id: 0, delta });
        parser.push({ type: 'WINDOW_UPDATE', id: frame.id, delta });
      }
      callback?.(err);
    });
  };
  return framer;
}

transport.protocol[KUBE_SPDY] ??= { ...transport.protocol.spdy!, parser: { create: kubeParser }, framer: { create: kubeFramer } };

/** Kubernetes' streams are read as they come: a window large enough that the peer's writes never wait on it. */
const WINDOW = 16 * 1024 * 1024;

/** A SPDY/3.1 session over an upgraded socket (the 101 already exchanged). */
export function spdySession(socket: Duplex, isServer: boolean): SpdyConnection {
  const connection = transport.connection.create(socket, { protocol: KUBE_SPDY, isServer, windowSize: WINDOW });
  connection.start(3.1);
  return connection;
}

/**
 * A connection's byte stream, with a tap: spdystream's peers do not heed window updates, so a
 * stream whose reader is slow would otherwise buffer without bound. While the gate is held the
 * connection is not read at all (head-of-line, as spdystream's own reads block); the peer's writes
 * then wait on TCP or WebSocket backpressure. A peer that closes the connection after its last
 * frames (containerd does, right after the exit status) has them all parsed and delivered before
 * the session hears of the close: spdy-transport destroys the streams then, and what they hold
 * unread with them.
 */
export class FlowGate extends Duplex {
  private held = false;

  constructor(private readonly inner: Duplex) {
    super({ allowHalfOpen: false });
    inner.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) inner.pause();
    });
    inner.on('end', () => this.push(null));
    inner.on('error', (err) => this.destroy(err));
    inner.on('close', () => {
      if (!inner.readableEnded) return this.destroy();
      // The frames pushed last reach their streams on the ticks after the parser read them.
      const later = () => setImmediate(() => this.destroy());
      if (this.readableEnded) later();
      else this.once('end', later);
    });
    inner.pause();
  }

  hold() {
    this.held = true;
    this.inner.pause();
  }

  release() {
    if (!this.held) return;
    this.held = false;
    this.inner.resume();
  }

  override _read() {
    if (!this.held) this.inner.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void) {
    if (this.inner.write(chunk)) callback();
    else this.inner.once('drain', () => callback());
  }

  override _final(callback: () => void) {
    this.inner.end();
    callback();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void) {
    this.inner.destroy();
    callback(err);
  }
}

export const SPDY_UPGRADE = 'SPDY/3.1';
export const STREAM_PROTOCOL_HEADER = 'X-Stream-Protocol-Version';

export class SpdyDialError extends Error {}

/** POSTs an upgrade to SPDY/3.1 offering `protocols`; the session, its socket's gate and the protocol the server chose. */
export function dialSpdy(url: string, protocols: string[]): Promise<{ session: SpdyConnection; gate: FlowGate; protocol: string }> {
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
      const gate = new FlowGate(socket);
      resolve({ session: spdySession(gate, false), gate, protocol });
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
  /**
   * The terminal's size known when the resize stream opens, sent at once: containerd resizes only
   * after it started the command, so the sooner the size waits there, the sooner the command has it.
   */
  initialResize?: () => Buffer | undefined;
}

/**
 * The runtime's remote command over SPDY (v4.channel.k8s.io), the CRI streaming server's other
 * transport: unlike its v4 WebSocket, the stdin stream can be half-closed, and the command then
 * reads EOF. The streams opened are exactly those the Exec or Attach request named (the server
 * waits for all of them): error first, as the kubelet's own client opens them.
 */
export async function openRuntimeSpdy(url: string, want: SpdyCommandStreams, handlers: RuntimeCommandHandlers): Promise<RuntimeCommand> {
  const { session, gate } = await dialSpdy(url, [EXEC_PROTOCOL]);
  const open = (streamType: string) => openSpdyStream(session, { streamType });
  let failure: Error | undefined;
  session.on('error', (err: Error) => (failure ??= err));
  try {
    const error = await open('error');
    const stdin = want.stdin ? await open('stdin') : undefined;
    // The server starts the command once the last stream is open: the resize stream goes before the outputs.
    const resize = want.tty ? await open('resize') : undefined;
    const size = want.initialResize?.();
    if (resize && size) resize.write(size);
    const outputs = [
      ...(want.stdout ? [{ channel: Channel.Stdout, stream: await open('stdout') }] : []),
      ...(want.stderr && !want.tty ? [{ channel: Channel.Stderr, stream: await open('stderr') }] : []),
    ];
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
    // A client slower than the command holds the connection, not the stream: containerd ignores the
    // stream's window, and a paused stream would hold all it sends until the close threw it away.
    for (const { channel, stream } of outputs)
      stream.on('data', (d: Buffer) => {
        if (d.length && !handlers.output(channel, d)) gate.hold();
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
      resume: () => gate.release(),
      close: () => session.socket.destroy(),
      done,
    };
  } catch (err) {
    session.socket.destroy();
    throw err;
  }
}
