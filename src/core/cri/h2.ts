import { connect as netConnect, type Socket } from 'node:net';
import { HpackDecoder, HpackError, encodeHeaders } from './hpack.js';

/**
 * The client side of HTTP/2 (RFC 9113) over a unix socket, as much of it as gRPC's unary and
 * server-streaming calls use: requests whose body is sent whole, answers read as they arrive.
 *
 * Why not node:http2: loading it (with tls, http and crypto, which it requires) was some 10 ms of
 * every command that reads the runtime, and its sessions allocated a read buffer per chunk of a
 * relist's megabytes of answers. Here one read buffer is reused for the socket's whole life, and
 * a DATA frame's bytes go to the caller as views of it, to copy before the callback returns.
 *
 * Not here, as a gRPC client needs none of it: TLS, server push (refused in our SETTINGS),
 * priorities, and request bodies sent as a stream.
 */

/** HTTP/2 error codes (RFC 9113 section 7). */
export const H2Code = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  ENHANCE_YOUR_CALM: 11,
} as const;

/** An HTTP/2 error code by its RFC name, for messages. */
const codeName = (code: number): string => Object.entries(H2Code).find(([, v]) => v === code)?.[0] ?? `code ${code}`;

/** How a stream ended other than by the server's END_STREAM. */
export class H2StreamError extends Error {
  /** The stream's reset code, or the connection's error code. */
  readonly code: number;
  /** True when the connection failed or closed (the runtime went away), not just this stream. */
  readonly connection: boolean;
  constructor(message: string, code: number, connection: boolean) {
    super(message);
    this.name = 'H2StreamError';
    this.code = code;
    this.connection = connection;
  }
}

/** What a request's answer is handed to. Nothing is called after onClose. */
export interface StreamHandler {
  /** The answer's headers, then its trailers; endStream when the block also ends the answer (onClose follows). */
  onHeaders(fields: [string, string][], endStream: boolean): void;
  /** Body bytes buf[start, end): a view of the read buffer, valid only during the call. */
  onData(buf: Buffer, start: number, end: number): void;
  /** The end: undefined after the server's END_STREAM, else why it ended. */
  onClose(err?: H2StreamError): void;
}

export interface H2Stream {
  /** Resets the stream (CANCEL). The handler hears nothing more. */
  cancel(): void;
}

const FRAME = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
const SETTING = { HEADER_TABLE_SIZE: 1, ENABLE_PUSH: 2, MAX_CONCURRENT_STREAMS: 3, INITIAL_WINDOW_SIZE: 4, MAX_FRAME_SIZE: 5 } as const;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const DEFAULT_WINDOW = 65_535;
const DEFAULT_FRAME_SIZE = 16_384;
const MAX_WINDOW = 2 ** 31 - 1;
/** Frames larger than this we never take (our SETTINGS leave MAX_FRAME_SIZE at its default). */
const OUR_MAX_FRAME = DEFAULT_FRAME_SIZE;
const READ_BUFFER_BYTES = 256 * 1024;
/** A gRPC answer's headers are a few hundred bytes; a server sending megabytes of them is broken. */
const MAX_HEADER_BLOCK = 1024 * 1024;

interface StreamState {
  readonly id: number;
  handler: StreamHandler;
  /** The request's frames not yet sent for want of flow-control window. */
  pending: Buffer | undefined;
  sendWindow: number;
  /** Received DATA bytes not yet returned to the server's stream window. */
  unacked: number;
  /** The request is fully sent (END_STREAM); the stream is half-closed (local). */
  sentEnd: boolean;
}

export interface H2ConnectionOptions {
  /** Our receive window for the connection and for each stream: a large answer then needs few WINDOW_UPDATEs. */
  windowBytes: number;
}

/** One HTTP/2 connection to a unix socket, opened at construction. */
export class H2Connection {
  private readonly socket: Socket;
  private readonly decoder = new HpackDecoder();
  private readonly streams = new Map<number, StreamState>();
  /** Requests beyond the server's MAX_CONCURRENT_STREAMS, sent as streams end. */
  private readonly queued: { state: StreamState; headers: Buffer; body: Buffer }[] = [];
  private nextId = 1;
  private peerMaxFrame = DEFAULT_FRAME_SIZE;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxStreams = Infinity;
  private connSendWindow = DEFAULT_WINDOW;
  private connUnacked = 0;
  /** Why the connection ended; set once. */
  private failure: H2StreamError | undefined;
  /** The server sent GOAWAY, or close() was called: no new streams. */
  private draining = false;
  private closing = false;
  /** Called once, when the connection takes no more streams (GOAWAY, close, failure). */
  onGone: (() => void) | undefined;

  // Frame reader state: the 9-byte header, then the payload (DATA payloads go to the stream as they arrive).
  private readonly header = Buffer.allocUnsafe(9);
  private headerLength = 0;
  private frameType = 0;
  private frameFlags = 0;
  private frameStream = 0;
  private frameLength = 0;
  private frameRead = 0;
  private payload: Buffer | undefined;
  private padLength = -1;
  /** A header block being read across HEADERS and CONTINUATION frames. */
  private block: { stream: number; endStream: boolean; parts: Buffer[]; bytes: number } | undefined;

  constructor(
    socketPath: string,
    private readonly opts: H2ConnectionOptions,
  ) {
    this.socket = netConnect({
      path: socketPath,
      // One buffer for every read: nothing is allocated per chunk of an answer.
      onread: {
        buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
        callback: (n: number, buf: Uint8Array) => {
          this.onRead(buf as Buffer, n);
          return true;
        },
      },
    });
    this.socket.on('error', (err) => this.fail(new H2StreamError(err.message, H2Code.INTERNAL_ERROR, true)));
    this.socket.on('close', () => this.fail(new H2StreamError('the runtime closed the connection', H2Code.NO_ERROR, true)));
    const settings = Buffer.alloc(12);
    settings.writeUInt16BE(SETTING.ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(SETTING.INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(opts.windowBytes, 8);
    const frames = [PREFACE, frame(FRAME.SETTINGS, 0, 0, settings)];
    if (opts.windowBytes > DEFAULT_WINDOW) frames.push(windowUpdate(0, opts.windowBytes - DEFAULT_WINDOW));
    this.socket.write(Buffer.concat(frames));
  }

  /** Whether a new request may go on this connection. */
  get usable(): boolean {
    return this.failure === undefined && !this.draining && this.nextId <= MAX_WINDOW;
  }

  /** Why the connection failed, if it did. */
  get error(): H2StreamError | undefined {
    return this.failure;
  }

  /** Sends a request: its headers (pseudo-headers first, lowercase names) and its whole body. */
  request(fields: readonly (readonly [string, string])[], body: Buffer, handler: StreamHandler): H2Stream {
    const state: StreamState = { id: this.nextId, handler, pending: undefined, sendWindow: this.peerInitialWindow, unacked: 0, sentEnd: false };
    this.nextId += 2;
    const cancel = () => this.reset(state, H2Code.CANCEL);
    if (this.failure || this.draining) {
      const err = this.failure ?? new H2StreamError('the connection is closing', H2Code.REFUSED_STREAM, false);
      queueMicrotask(() => handler.onClose(err));
      return { cancel };
    }
    const headers = encodeHeaders(fields);
    this.streams.set(state.id, state);
    if (this.streams.size - this.queued.length > this.peerMaxStreams) this.queued.push({ state, headers, body });
    else this.send(state, headers, body);
    return { cancel };
  }

  /** Closes once the streams under way end; new requests fail at once. */
  close(): void {
    this.draining = true;
    this.closing = true;
    this.gone();
    this.maybeEnd();
  }

  /** Whether the socket keeps the process alive: only while calls are under way. */
  ref(): void {
    this.socket.ref();
  }

  unref(): void {
    this.socket.unref();
  }

  private send(state: StreamState, headers: Buffer, body: Buffer): void {
    const out: Buffer[] = [];
    // The header block in frames of at most the server's frame size: HEADERS, then CONTINUATIONs.
    let at = 0;
    do {
      const part = headers.subarray(at, at + this.peerMaxFrame);
      out.push(frame(at === 0 ? FRAME.HEADERS : FRAME.CONTINUATION, at + this.peerMaxFrame >= headers.length ? FLAG.END_HEADERS : 0, state.id, part));
      at += this.peerMaxFrame;
    } while (at < headers.length);
    state.pending = body;
    this.flushStream(state, out);
    this.socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
  }

  /** Appends to `out` the DATA frames the windows allow of the stream's pending body. */
  private flushStream(state: StreamState, out: Buffer[]): void {
    let body = state.pending!;
    while (!state.sentEnd) {
      const n = Math.max(0, Math.min(body.length, this.peerMaxFrame, state.sendWindow, this.connSendWindow));
      if (n <= 0 && body.length > 0) break;
      const end = n === body.length;
      out.push(frame(FRAME.DATA, end ? FLAG.END_STREAM : 0, state.id, body.subarray(0, n)));
      state.sendWindow -= n;
      this.connSendWindow -= n;
      body = body.subarray(n);
      if (end) state.sentEnd = true;
    }
    state.pending = state.sentEnd ? undefined : body;
  }

  /** After a window grew: the bodies waiting for it. */
  private flushAll(): void {
    const out: Buffer[] = [];
    for (const state of this.streams.values()) {
      if (state.pending && this.connSendWindow > 0) this.flushStream(state, out);
    }
    if (out.length > 0) this.socket.write(Buffer.concat(out));
  }

  private reset(state: StreamState, code: number): void {
    if (this.streams.get(state.id) !== state) return;
    const waiting = this.queued.findIndex((q) => q.state === state);
    if (waiting >= 0) this.queued.splice(waiting, 1);
    this.endStream(state);
    // A stream the server never heard of needs no reset.
    if (waiting < 0 && !this.failure) this.socket.write(rstStream(state.id, code));
  }

  private endStream(state: StreamState): void {
    this.streams.delete(state.id);
    while (this.queued.length > 0 && this.streams.size - this.queued.length < this.peerMaxStreams) {
      const next = this.queued.shift()!;
      this.send(next.state, next.headers, next.body);
    }
    this.maybeEnd();
  }

  private maybeEnd(): void {
    if (!this.closing || this.streams.size > 0 || this.failure) return;
    this.failure = new H2StreamError('the client was closed', H2Code.NO_ERROR, true);
    this.socket.end(goaway(0, H2Code.NO_ERROR));
  }

  private gone(): void {
    const cb = this.onGone;
    this.onGone = undefined;
    cb?.();
  }

  /** The connection is over: every stream ends with `err`. */
  private fail(err: H2StreamError): void {
    if (!this.failure) this.failure = err;
    this.draining = true;
    this.gone();
    const streams = [...this.streams.values()];
    this.streams.clear();
    this.queued.length = 0;
    for (const s of streams) s.handler.onClose(this.failure);
  }

  /** A protocol error by the server: GOAWAY with its code, and the connection closes. */
  private connectionError(code: number, message: string): void {
    if (this.failure) return;
    this.socket.end(goaway(0, code));
    this.socket.destroy();
    this.fail(new H2StreamError(`HTTP/2 protocol error from the runtime: ${message}`, code, true));
  }

  private onRead(buf: Buffer, n: number): void {
    let at = 0;
    while (at < n && !this.failure) {
      if (this.headerLength < 9) {
        const k = Math.min(9 - this.headerLength, n - at);
        buf.copy(this.header, this.headerLength, at, at + k);
        this.headerLength += k;
        at += k;
        if (this.headerLength < 9) return;
        if (!this.startFrame()) return;
        if (this.frameLength > 0) continue;
      } else {
        const k = Math.min(this.frameLength - this.frameRead, n - at);
        if (this.frameType === FRAME.DATA) this.dataBytes(buf, at, at + k);
        else buf.copy(this.payload!, this.frameRead, at, at + k);
        this.frameRead += k;
        at += k;
        if (this.frameRead < this.frameLength) return;
      }
      this.headerLength = 0;
      this.endFrame();
    }
  }

  /** A frame header was read; false when it was a connection error. */
  private startFrame(): boolean {
    const h = this.header;
    this.frameLength = (h[0]! << 16) | (h[1]! << 8) | h[2]!;
    this.frameType = h[3]!;
    this.frameFlags = h[4]!;
    this.frameStream = h.readUInt32BE(5) & MAX_WINDOW;
    this.frameRead = 0;
    this.padLength = -1;
    if (this.frameLength > OUR_MAX_FRAME) {
      this.connectionError(H2Code.FRAME_SIZE_ERROR, `a frame of ${this.frameLength} bytes`);
      return false;
    }
    if (this.block && this.frameType !== FRAME.CONTINUATION) {
      this.connectionError(H2Code.PROTOCOL_ERROR, 'a header block interrupted by another frame');
      return false;
    }
    if (this.frameType === FRAME.DATA) {
      if (this.frameStream === 0) {
        this.connectionError(H2Code.PROTOCOL_ERROR, 'DATA on stream 0');
        return false;
      }
      this.payload = undefined;
      // Flow control counts the whole frame, padding included, whoever it is for.
      this.received(this.frameLength);
    } else {
      this.payload = Buffer.allocUnsafe(this.frameLength);
    }
    return true;
  }

  /** Bytes [start, end) of a DATA frame's payload, as they arrive: to the stream, without the padding. */
  private dataBytes(buf: Buffer, start: number, end: number): void {
    let from = start;
    let offset = this.frameRead;
    if (this.frameFlags & FLAG.PADDED) {
      if (offset === 0 && from < end) {
        this.padLength = buf[from]!;
        from++;
        offset++;
        if (this.padLength >= this.frameLength) return this.connectionError(H2Code.PROTOCOL_ERROR, 'padding longer than its frame');
      }
    }
    const dataEnd = this.frameLength - Math.max(this.padLength, 0);
    const to = Math.min(end, from + Math.max(0, dataEnd - offset));
    if (to <= from) return;
    const state = this.streams.get(this.frameStream);
    if (state) {
      state.unacked += to - from;
      state.handler.onData(buf, from, to);
    }
  }

  private endFrame(): void {
    const type = this.frameType;
    const flags = this.frameFlags;
    const id = this.frameStream;
    const p = this.payload;
    this.payload = undefined;
    switch (type) {
      case FRAME.DATA: {
        const state = this.streams.get(id);
        if (!state) return;
        if (flags & FLAG.END_STREAM) return this.closeStream(state);
        // The stream's window back once half of it is used: the server never waits on it.
        if (state.unacked >= this.opts.windowBytes / 2) {
          this.socket.write(windowUpdate(id, state.unacked));
          state.unacked = 0;
        }
        return;
      }
      case FRAME.HEADERS: {
        if (id === 0) return this.connectionError(H2Code.PROTOCOL_ERROR, 'HEADERS on stream 0');
        let from = 0;
        let to = p!.length;
        if (flags & FLAG.PADDED) {
          to -= p![0]!;
          from = 1;
        }
        if (flags & FLAG.PRIORITY) from += 5;
        if (to < from) return this.connectionError(H2Code.PROTOCOL_ERROR, 'a HEADERS frame shorter than its padding');
        this.block = { stream: id, endStream: (flags & FLAG.END_STREAM) !== 0, parts: [p!.subarray(from, to)], bytes: to - from };
        if (flags & FLAG.END_HEADERS) this.endBlock();
        return;
      }
      case FRAME.CONTINUATION: {
        if (!this.block || this.block.stream !== id) return this.connectionError(H2Code.PROTOCOL_ERROR, 'a CONTINUATION with no header block');
        this.block.parts.push(p!);
        this.block.bytes += p!.length;
        if (this.block.bytes > MAX_HEADER_BLOCK) return this.connectionError(H2Code.ENHANCE_YOUR_CALM, `a header block above ${MAX_HEADER_BLOCK} bytes`);
        if (flags & FLAG.END_HEADERS) this.endBlock();
        return;
      }
      case FRAME.RST_STREAM: {
        if (p!.length !== 4) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'RST_STREAM of the wrong size');
        const state = this.streams.get(id);
        if (!state) return;
        const code = p!.readUInt32BE(0);
        this.endStream(state);
        state.handler.onClose(new H2StreamError(`the runtime reset the stream (HTTP/2 ${codeName(code)})`, code, false));
        return;
      }
      case FRAME.SETTINGS:
        return this.onSettings(flags, id, p!);
      case FRAME.PING:
        if (p!.length !== 8) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'PING of the wrong size');
        if (!(flags & FLAG.ACK)) this.socket.write(frame(FRAME.PING, FLAG.ACK, 0, p!));
        return;
      case FRAME.GOAWAY:
        return this.onGoaway(p!);
      case FRAME.WINDOW_UPDATE: {
        if (p!.length !== 4) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'WINDOW_UPDATE of the wrong size');
        const increment = p!.readUInt32BE(0) & MAX_WINDOW;
        if (id === 0) {
          if (increment === 0 || this.connSendWindow + increment > MAX_WINDOW) return this.connectionError(H2Code.FLOW_CONTROL_ERROR, 'a bad connection WINDOW_UPDATE');
          this.connSendWindow += increment;
        } else {
          const state = this.streams.get(id);
          if (!state) return;
          if (increment === 0 || state.sendWindow + increment > MAX_WINDOW) {
            this.endStream(state);
            this.socket.write(rstStream(id, increment === 0 ? H2Code.PROTOCOL_ERROR : H2Code.FLOW_CONTROL_ERROR));
            state.handler.onClose(new H2StreamError('a bad WINDOW_UPDATE from the runtime', H2Code.FLOW_CONTROL_ERROR, false));
            return;
          }
          state.sendWindow += increment;
        }
        this.flushAll();
        return;
      }
      case FRAME.PUSH_PROMISE:
        return this.connectionError(H2Code.PROTOCOL_ERROR, 'PUSH_PROMISE, which our SETTINGS refused');
      default:
        // PRIORITY and frame types of extensions: nothing to do.
        return;
    }
  }

  private endBlock(): void {
    const block = this.block!;
    this.block = undefined;
    let fields: [string, string][];
    try {
      // Decoded even for a stream we dropped: the header table is the connection's.
      fields = this.decoder.decode(block.parts.length === 1 ? block.parts[0]! : Buffer.concat(block.parts));
    } catch (err) {
      if (err instanceof HpackError) return this.connectionError(H2Code.COMPRESSION_ERROR, err.message);
      throw err;
    }
    const state = this.streams.get(block.stream);
    if (!state) return;
    state.handler.onHeaders(fields, block.endStream);
    if (block.endStream && this.streams.get(block.stream) === state) this.closeStream(state);
  }

  /** The server ended the stream. */
  private closeStream(state: StreamState): void {
    this.endStream(state);
    // The half-closed stream is closed; the server expects no more of it, even a RST.
    state.handler.onClose();
  }

  private onSettings(flags: number, id: number, p: Buffer): void {
    if (id !== 0) return this.connectionError(H2Code.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & FLAG.ACK) return;
    if (p.length % 6 !== 0) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'SETTINGS of the wrong size');
    for (let at = 0; at < p.length; at += 6) {
      const key = p.readUInt16BE(at);
      const value = p.readUInt32BE(at + 2);
      if (key === SETTING.MAX_CONCURRENT_STREAMS) this.peerMaxStreams = value;
      else if (key === SETTING.MAX_FRAME_SIZE) {
        if (value < DEFAULT_FRAME_SIZE || value > 16_777_215) return this.connectionError(H2Code.PROTOCOL_ERROR, `MAX_FRAME_SIZE ${value}`);
        this.peerMaxFrame = value;
      } else if (key === SETTING.INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) return this.connectionError(H2Code.FLOW_CONTROL_ERROR, `INITIAL_WINDOW_SIZE ${value}`);
        // Applies to the streams open now as well (RFC 9113 6.9.2).
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const s of this.streams.values()) s.sendWindow += delta;
      }
      // HEADER_TABLE_SIZE bounds the table our encoder uses, which is none; ENABLE_PUSH is not the server's to set.
    }
    this.socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0, EMPTY));
    this.flushAll();
  }

  private onGoaway(p: Buffer): void {
    if (p.length < 8) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'GOAWAY too short');
    const last = p.readUInt32BE(0) & MAX_WINDOW;
    const code = p.readUInt32BE(4);
    this.draining = true;
    this.closing = true;
    this.gone();
    // Streams after the last one it will process were never seen: refused, safe to send again.
    for (const s of [...this.streams.values()]) {
      if (s.id <= last) continue;
      this.streams.delete(s.id);
      s.handler.onClose(new H2StreamError(`the runtime is closing the connection (GOAWAY, HTTP/2 ${codeName(code)})`, H2Code.REFUSED_STREAM, false));
    }
    this.queued.length = 0;
    this.maybeEnd();
  }

  /** DATA bytes taken off the connection window; returned once half of it is used. */
  private received(n: number): void {
    this.connUnacked += n;
    if (this.connUnacked >= this.opts.windowBytes / 2) {
      this.socket.write(windowUpdate(0, this.connUnacked));
      this.connUnacked = 0;
    }
  }
}

const EMPTY = Buffer.alloc(0);

function frame(type: number, flags: number, stream: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(9 + payload.length);
  out[0] = (payload.length >>> 16) & 0xff;
  out[1] = (payload.length >>> 8) & 0xff;
  out[2] = payload.length & 0xff;
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(stream, 5);
  out.set(payload, 9);
  return out;
}

function windowUpdate(stream: number, increment: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(increment, 0);
  return frame(FRAME.WINDOW_UPDATE, 0, stream, p);
}

function rstStream(stream: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(code, 0);
  return frame(FRAME.RST_STREAM, 0, stream, p);
}

function goaway(lastStream: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(8);
  p.writeUInt32BE(lastStream, 0);
  p.writeUInt32BE(code, 4);
  return frame(FRAME.GOAWAY, 0, 0, p);
}
