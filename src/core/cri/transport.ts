import { GrpcStatus } from './errors.js';
import { H2Code, H2Connection, type H2Stream, type H2StreamError } from './h2.js';

/**
 * The CRI's calls: gRPC's wire format (a 5-byte prefix before each protobuf message, the status in
 * the trailers) on one HTTP/2 connection per runtime socket (h2.ts: our own HTTP/2 client, since
 * loading node:http2 was some 10 ms of every command that reads the runtime).
 *
 * Why not grpc-js, which podctl used for these calls before (and still uses for containerd's event
 * stream and gRPC probes): a command that reads the runtime (plan, get, describe with no agent)
 * spent some 40 ms of its start loading and setting up grpc-js's channel stack, above Node's http2
 * itself; and a relist's answers at thousands of pods (3 and 9 MB) were joined by grpc-js into new
 * buffers at every relist, 12 MB of ArrayBuffers a second that V8 counts against the old
 * generation's limit, so that nearly every relist ran a full GC. Here a caller may pass a
 * ReceiveBuffer, into which the answer is copied as its chunks arrive, and which the next answer
 * reuses. Unary and server-streaming calls are all the CRI has.
 */

/** A failed call, shaped as grpc-js's ServiceError (what mapGrpcError reads). */
export class GrpcCallError extends Error {
  readonly code: GrpcStatus;
  readonly details: string;
  constructor(code: GrpcStatus, details: string) {
    super(`${code} ${STATUS_NAMES[code] ?? 'UNKNOWN'}: ${details}`);
    this.name = 'GrpcCallError';
    this.code = code;
    this.details = details;
  }
}

const STATUS_NAMES: Record<number, string> = Object.fromEntries(Object.entries(GrpcStatus).map(([name, code]) => [code, name]));

export interface ChannelOptions {
  /** HTTP/2 receive window of the connection and of each stream: a large answer then needs no WINDOW_UPDATE round trips. */
  windowBytes: number;
  /** Larger answers fail with RESOURCE_EXHAUSTED, as gRPC's max receive message length. */
  maxMessageBytes: number;
}

/**
 * A buffer that answers are copied into and that the next answer reuses, for a caller that decodes
 * an answer at once and keeps nothing of it (no slice: protobufjs's `bytes` fields are slices of
 * what they decode). One call at a time uses it; a second one meanwhile gets a buffer of its own.
 */
export class ReceiveBuffer {
  private buf: Buffer | undefined;
  private busy = false;

  /** A buffer of `length` bytes: this one's when free, else a new one. `release` gives it back. */
  take(length: number): { buf: Buffer; release: () => void } {
    if (this.busy) return { buf: Buffer.allocUnsafeSlow(length), release: () => undefined };
    this.busy = true;
    // Grown to what is asked (in whole MiB, so that a list growing by a record does not reallocate),
    // and let go when an answer needs under a quarter of it: the pods went, the memory goes too.
    if (!this.buf || this.buf.length < length || length < this.buf.length / 4) this.buf = Buffer.allocUnsafeSlow(Math.max(length, Math.ceil(length / MIB) * MIB));
    const buf = this.buf;
    return {
      buf: buf.subarray(0, length),
      release: () => {
        this.busy = false;
      },
    };
  }

  /** The bytes held between calls (tests). */
  get capacity(): number {
    return this.buf?.length ?? 0;
  }
}

const MIB = 1024 * 1024;

/** What a call does with each message of the answer. */
interface MessageSink {
  /** Where a message of `length` bytes is copied; release() once it is decoded. */
  buffer(length: number): { buf: Buffer; release: () => void };
  /** A whole message; returning an error fails the call. */
  message(msg: Buffer): GrpcCallError | undefined;
}

export interface ServerStream {
  cancel(): void;
}

/** gRPC over one HTTP/2 connection to a unix socket, opened on first use and again after it closes. */
export class GrpcChannel {
  private connection: H2Connection | undefined;
  private active = 0;
  private closed = false;

  constructor(
    readonly socketPath: string,
    private readonly opts: ChannelOptions,
  ) {}

  /** A unary call: the request's bytes, the answer decoded, by the deadline (ms since the epoch). */
  unary<T>(path: string, request: Uint8Array, deadline: number, decode: (msg: Buffer) => T, into?: ReceiveBuffer): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let answer: { value: T } | undefined;
      const sink: MessageSink = {
        buffer: (length) => (into ? into.take(length) : { buf: Buffer.allocUnsafe(length), release: () => undefined }),
        message: (msg) => {
          if (answer) return new GrpcCallError(GrpcStatus.UNIMPLEMENTED, 'more than one message in a unary answer');
          try {
            answer = { value: decode(msg) };
          } catch (err) {
            return new GrpcCallError(GrpcStatus.INTERNAL, `cannot decode the answer: ${(err as Error).message}`);
          }
          return undefined;
        },
      };
      this.start(path, request, deadline, sink, (err) => {
        if (err) reject(err);
        else if (!answer) reject(new GrpcCallError(GrpcStatus.UNIMPLEMENTED, 'no message in a unary answer'));
        else resolve(answer.value);
      });
    });
  }

  /** A server-streaming call: each message decoded to onMessage, then onEnd with the status (undefined: OK). */
  serverStream<T>(path: string, request: Uint8Array, decode: (msg: Buffer) => T, onMessage: (value: T) => void, onEnd: (err?: GrpcCallError) => void): ServerStream {
    const sink: MessageSink = {
      buffer: (length) => ({ buf: Buffer.allocUnsafe(length), release: () => undefined }),
      message: (msg) => {
        let value: T;
        try {
          value = decode(msg);
        } catch (err) {
          return new GrpcCallError(GrpcStatus.INTERNAL, `cannot decode a message: ${(err as Error).message}`);
        }
        // Called from inside the socket's read: a handler that throws ends its own call, which onEnd then
        // reports, instead of escaping into the connection's frame loop (and every call on it).
        try {
          onMessage(value);
        } catch (err) {
          return new GrpcCallError(GrpcStatus.INTERNAL, `the stream's handler failed on a message: ${err instanceof Error ? err.message : String(err)}`);
        }
        return undefined;
      },
    };
    return this.start(path, request, undefined, sink, onEnd);
  }

  /** Closes the connection once the calls under way end (as grpc-js's close); later calls fail at once. */
  close(): void {
    this.closed = true;
    this.connection?.close();
    this.connection = undefined;
  }

  private open(): H2Connection {
    if (this.connection?.usable) return this.connection;
    const connection = new H2Connection(this.socketPath, { windowBytes: this.opts.windowBytes });
    // A connection that failed, or that the server is leaving, takes no new calls; the next call opens another.
    connection.onGone = () => {
      if (this.connection === connection) this.connection = undefined;
    };
    // An idle connection does not keep the process alive (a command ends when its work does).
    if (this.active === 0) connection.unref();
    this.connection = connection;
    return connection;
  }

  private start(path: string, request: Uint8Array, deadline: number | undefined, sink: MessageSink, done: (err?: GrpcCallError) => void): ServerStream {
    let settled = false;
    // Set once the request is sent: a call failed before that has no stream to reset.
    const sent: { stream?: H2Stream; connection?: H2Connection } = {};
    let timer: NodeJS.Timeout | undefined;
    // The message being read, into the sink's buffer.
    let msg: { buf: Buffer; release: () => void } | undefined;
    const finish = (err?: GrpcCallError) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      msg?.release();
      msg = undefined;
      if (sent.stream) {
        if (err) sent.stream.cancel();
        this.active--;
        if (this.active === 0) sent.connection?.unref();
      }
      done(err);
    };
    const cancel = () => finish(new GrpcCallError(GrpcStatus.CANCELLED, 'cancelled by the caller'));
    if (this.closed) {
      queueMicrotask(() => finish(new GrpcCallError(GrpcStatus.UNAVAILABLE, 'the client was closed')));
      return { cancel };
    }
    const remaining = deadline === undefined ? undefined : deadline - Date.now();
    if (remaining !== undefined && remaining <= 0) {
      queueMicrotask(() => finish(new GrpcCallError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded before the call was sent')));
      return { cancel };
    }
    const headers: [string, string][] = [
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', path],
      [':authority', 'localhost'],
      ['content-type', 'application/grpc'],
      ['te', 'trailers'],
      ['user-agent', 'podctl'],
    ];
    // The server learns the deadline too, and can stop work nobody waits for.
    if (remaining !== undefined) headers.push(['grpc-timeout', grpcTimeout(remaining)]);

    const frame = Buffer.allocUnsafe(5 + request.length);
    frame[0] = 0;
    frame.writeUInt32BE(request.length, 1);
    frame.set(request, 5);

    let status: { code: GrpcStatus; details: string } | undefined;
    let sawHeaders = false;
    const readStatus = (fields: [string, string][]) => {
      const code = Number(field(fields, 'grpc-status'));
      const message = field(fields, 'grpc-message');
      status = { code: (Number.isInteger(code) && code >= 0 && code <= 16 ? code : GrpcStatus.UNKNOWN) as GrpcStatus, details: message === undefined ? '' : decodeMessage(message) };
    };
    // Each message: its 5-byte prefix, then its bytes, across however many frames they come in.
    const prefix = Buffer.alloc(5);
    let prefixLength = 0;
    let got = 0;
    const deliver = () => {
      const m = msg!;
      msg = undefined;
      prefixLength = 0;
      const err = sink.message(m.buf);
      m.release();
      if (err) finish(err);
    };
    const connection = (sent.connection = this.open());
    this.active++;
    connection.ref();
    if (remaining !== undefined) timer = setTimeout(() => finish(new GrpcCallError(GrpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded')), remaining);
    // A stream the runtime refused (after its GOAWAY's last stream, or reset with REFUSED_STREAM) was
    // never processed (RFC 9113, 8.7): it is sent once more on a new connection, as grpc-js's
    // transparent retry does, so that a runtime restarting gracefully fails no call it never saw.
    let retried = false;
    const handler: Parameters<H2Connection['request']>[2] = {
      onHeaders: (fields) => {
        if (settled) return;
        if (sawHeaders) return readStatus(fields);
        sawHeaders = true;
        const http = Number(field(fields, ':status'));
        if (http !== 200) return finish(new GrpcCallError(httpToGrpc(http), `HTTP status ${http} from the runtime`));
        const type = field(fields, 'content-type') ?? '';
        if (!type.startsWith('application/grpc')) return finish(new GrpcCallError(GrpcStatus.UNKNOWN, `the runtime answered with content-type "${type}", not gRPC`));
        // A trailers-only answer (an error at once) has its status here.
        if (field(fields, 'grpc-status') !== undefined) readStatus(fields);
      },
      onData: (chunk, start, end) => {
        let at = start;
        while (at < end && !settled) {
          if (!msg) {
            const n = Math.min(5 - prefixLength, end - at);
            chunk.copy(prefix, prefixLength, at, at + n);
            prefixLength += n;
            at += n;
            if (prefixLength < 5) return;
            if (prefix[0] !== 0) return finish(new GrpcCallError(GrpcStatus.INTERNAL, 'a compressed message, which podctl did not ask for'));
            const length = prefix.readUInt32BE(1);
            if (length > this.opts.maxMessageBytes) return finish(new GrpcCallError(GrpcStatus.RESOURCE_EXHAUSTED, `an answer of ${length} bytes, above the limit of ${this.opts.maxMessageBytes}`));
            msg = sink.buffer(length);
            got = 0;
            if (length === 0) deliver();
            continue;
          }
          const n = Math.min(msg.buf.length - got, end - at);
          chunk.copy(msg.buf, got, at, at + n);
          got += n;
          at += n;
          if (got === msg.buf.length) deliver();
        }
      },
      onClose: (err?: H2StreamError) => {
        if (settled) return;
        if (err && !err.connection && err.code === H2Code.REFUSED_STREAM && !retried && !sawHeaders && prefixLength === 0 && !msg && !this.closed) {
          retried = true;
          const next = (sent.connection = this.open());
          next.ref();
          sent.stream = next.request(headers, frame, handler);
          return;
        }
        if (!err) {
          if (status) return finish(status.code === GrpcStatus.OK ? undefined : new GrpcCallError(status.code, status.details));
          return finish(new GrpcCallError(GrpcStatus.INTERNAL, 'the runtime ended the answer with no gRPC status'));
        }
        // As grpc-js: the connection gone (the runtime went away, or refused the stream) is
        // UNAVAILABLE, with the connect error as details; the stream's reset code says the rest.
        const code =
          err.connection || err.code === H2Code.REFUSED_STREAM
            ? GrpcStatus.UNAVAILABLE
            : err.code === H2Code.CANCEL
              ? GrpcStatus.CANCELLED
              : err.code === H2Code.ENHANCE_YOUR_CALM
                ? GrpcStatus.RESOURCE_EXHAUSTED
                : GrpcStatus.INTERNAL;
        finish(new GrpcCallError(code, err.message));
      },
    };
    sent.stream = connection.request(headers, frame, handler);
    return { cancel };
  }
}

/** The value of a header field (the first, as gRPC sends each once). */
function field(fields: [string, string][], name: string): string | undefined {
  for (const [k, v] of fields) if (k === name) return v;
  return undefined;
}

/** A grpc-timeout header: at most 8 digits and a unit (the gRPC HTTP/2 spec), in the finest unit that fits. */
export function grpcTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  if (whole < 1e8) return `${whole}m`;
  const seconds = Math.ceil(whole / 1000);
  return seconds < 1e8 ? `${seconds}S` : `${Math.min(99_999_999, Math.ceil(seconds / 3600))}H`;
}

/** grpc-message is percent-encoded (the gRPC HTTP/2 spec). */
function decodeMessage(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The gRPC spec's mapping of HTTP statuses from a server that is not answering in gRPC. */
function httpToGrpc(http: number): GrpcStatus {
  switch (http) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}
