import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { H2Code, H2Connection, type H2StreamError } from '../../src/core/cri/h2.js';
import { HpackDecoder, encodeHeaders } from '../../src/core/cri/hpack.js';
import { GrpcStatus } from '../../src/core/cri/errors.js';
import { GrpcChannel, type GrpcCallError } from '../../src/core/cri/transport.js';

// The HTTP/2 client against a server written here frame by frame, for what a grpc-js or containerd
// server seldom does on its own: small windows, GOAWAY, resets, padding, CONTINUATION, a stream limit.

interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

const T = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 };

function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const setting = (key: number, value: number) => {
  const b = Buffer.alloc(6);
  b.writeUInt16BE(key, 0);
  b.writeUInt32BE(value, 2);
  return b;
};
const grpcHeaders = () => encodeHeaders([[':status', '200'], ['content-type', 'application/grpc']]);

/** One client connection as the server sees it: the frames it sent, in order, with their header blocks decoded. */
class Peer {
  readonly frames: Frame[] = [];
  readonly headers = new Map<number, [string, string][]>();
  private readonly decoder = new HpackDecoder();
  private buf = Buffer.alloc(0);
  private preface = false;
  private waiters: (() => void)[] = [];
  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      if (!this.preface) {
        if (this.buf.length < 24) return;
        assert.equal(this.buf.subarray(0, 24).toString('latin1'), 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
        this.buf = this.buf.subarray(24);
        this.preface = true;
      }
      while (this.buf.length >= 9) {
        const length = this.buf.readUIntBE(0, 3);
        if (this.buf.length < 9 + length) break;
        const f = { type: this.buf[3]!, flags: this.buf[4]!, stream: this.buf.readUInt32BE(5), payload: Buffer.from(this.buf.subarray(9, 9 + length)) };
        this.buf = this.buf.subarray(9 + length);
        if (f.type === T.HEADERS) this.headers.set(f.stream, this.decoder.decode(f.payload));
        this.frames.push(f);
      }
      for (const w of this.waiters.splice(0)) w();
    });
    socket.on('error', () => undefined);
  }
  send(...frames: Buffer[]): void {
    this.socket.write(Buffer.concat(frames));
  }
  /** Waits until a frame matching `pick` has come (the first one, whenever it came). */
  async until(pick: (f: Frame) => boolean, what: string): Promise<Frame> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const f = this.frames.find(pick);
      if (f) return f;
      if (Date.now() > deadline) throw new Error(`no ${what} from the client within 10 s`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
  data(stream: number): Buffer {
    return Buffer.concat(this.frames.filter((f) => f.type === T.DATA && f.stream === stream).map((f) => f.payload));
  }
}

/** A server on a unix socket; `peer()` is the next client connection. */
async function withServer(fn: (path: string, peer: () => Promise<Peer>) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-h2-'));
  const path = join(dir, 'h2.sock');
  const peers: Peer[] = [];
  const wanted: ((p: Peer) => void)[] = [];
  const server: Server = createServer((socket) => {
    const p = new Peer(socket);
    peers.push(p);
    wanted.shift()?.(p);
  });
  await new Promise<void>((r) => server.listen(path, r));
  let taken = 0;
  const peer = () => (peers[taken] ? Promise.resolve(peers[taken++]!) : new Promise<Peer>((r) => wanted.push((p) => (taken++, r(p)))));
  try {
    await fn(path, peer);
  } finally {
    for (const p of peers) p.socket.destroy();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What a stream heard, and a promise of its end. */
function recorder() {
  const heard = { headers: [] as [string, string][][], data: [] as Buffer[], closed: undefined as { err?: H2StreamError } | undefined };
  let resolve!: () => void;
  const ended = new Promise<void>((r) => (resolve = r));
  return {
    heard,
    ended,
    handler: {
      onHeaders: (fields: [string, string][]) => heard.headers.push(fields),
      onData: (buf: Buffer, start: number, end: number) => heard.data.push(Buffer.from(buf.subarray(start, end))),
      onClose: (err?: H2StreamError) => {
        heard.closed = { err };
        resolve();
      },
    },
  };
}

const REQUEST: [string, string][] = [
  [':method', 'POST'],
  [':scheme', 'http'],
  [':path', '/x.Y/Z'],
  [':authority', 'localhost'],
  ['content-type', 'application/grpc'],
];
const OPTS = { windowBytes: 1024 * 1024 };

describe('HTTP/2 client (h2.ts) against a server written frame by frame', () => {
  test('sends the preface and its SETTINGS and window, acknowledges SETTINGS, answers PING with its payload', () =>
    withServer(async (path, peer) => {
      const conn = new H2Connection(path, OPTS);
      try {
        const p = await peer();
        const settings = await p.until((f) => f.type === T.SETTINGS && f.flags === 0, 'SETTINGS');
        // ENABLE_PUSH 0 and INITIAL_WINDOW_SIZE = the window asked for.
        assert.deepEqual(settings.payload, Buffer.concat([setting(2, 0), setting(4, OPTS.windowBytes)]));
        const update = await p.until((f) => f.type === T.WINDOW_UPDATE && f.stream === 0, 'a connection WINDOW_UPDATE');
        assert.equal(update.payload.readUInt32BE(0), OPTS.windowBytes - 65_535);
        p.send(frame(T.SETTINGS, 0, 0), frame(T.PING, 0, 0, Buffer.from('12345678')));
        await p.until((f) => f.type === T.SETTINGS && f.flags === 1, 'SETTINGS ACK');
        const pong = await p.until((f) => f.type === T.PING, 'PING ACK');
        assert.equal(pong.flags, 1);
        assert.equal(pong.payload.toString(), '12345678');
      } finally {
        conn.close();
      }
    }));

  test('a request body above the server’s window is sent as WINDOW_UPDATEs allow, in frames of its MAX_FRAME_SIZE at most', () =>
    withServer(async (path, peer) => {
      const conn = new H2Connection(path, OPTS);
      try {
        const p = await peer();
        // A stream window of 1000 bytes; the connection's stays 65,535.
        p.send(frame(T.SETTINGS, 0, 0, setting(4, 1000)));
        await p.until((f) => f.type === T.SETTINGS && f.flags === 1, 'SETTINGS ACK');
        const body = Buffer.alloc(40_000, 7);
        const r = recorder();
        conn.request(REQUEST, body, r.handler);
        await p.until((f) => f.type === T.DATA && f.stream === 1, 'DATA');
        assert.deepEqual(p.headers.get(1), REQUEST);
        assert.equal(p.data(1).length, 1000, 'no more than the window');
        p.send(frame(T.WINDOW_UPDATE, 0, 1, u32(39_000)));
        await p.until((f) => f.type === T.DATA && f.stream === 1 && (f.flags & 1) === 1, 'the END_STREAM');
        assert.deepEqual(p.data(1), body);
        assert.ok(p.frames.filter((f) => f.type === T.DATA).every((f) => f.payload.length <= 16_384));
        p.send(frame(T.HEADERS, 4 | 1, 1, grpcHeaders()));
        await r.ended;
        assert.equal(r.heard.closed?.err, undefined);
      } finally {
        conn.close();
      }
    }));

  test('reads padded and prioritised HEADERS with a CONTINUATION, and padded DATA, arriving a byte at a time', () =>
    withServer(async (path, peer) => {
      const conn = new H2Connection(path, OPTS);
      try {
        const p = await peer();
        const r = recorder();
        conn.request(REQUEST, Buffer.from('hi'), r.handler);
        await p.until((f) => f.type === T.DATA && (f.flags & 1) === 1, 'the request');
        const block = encodeHeaders([[':status', '200'], ['content-type', 'application/grpc'], ['x-long', 'v'.repeat(300)]]);
        const pad = 3;
        // HEADERS: PADDED | PRIORITY, no END_HEADERS; then a CONTINUATION with END_HEADERS.
        const headers = frame(T.HEADERS, 0x8 | 0x20, 1, Buffer.concat([Buffer.from([pad]), Buffer.alloc(5), block.subarray(0, 10), Buffer.alloc(pad)]));
        const continuation = frame(T.CONTINUATION, 0x4, 1, block.subarray(10));
        const data = frame(T.DATA, 0x8, 1, Buffer.concat([Buffer.from([4]), Buffer.from('hello world'), Buffer.alloc(4, 0xee)]));
        const trailers = frame(T.HEADERS, 0x4 | 0x1, 1, encodeHeaders([['grpc-status', '0']]));
        const all = Buffer.concat([headers, continuation, data, trailers]);
        for (let i = 0; i < all.length; i++) p.socket.write(all.subarray(i, i + 1));
        await r.ended;
        assert.equal(r.heard.closed?.err, undefined);
        assert.deepEqual(r.heard.headers, [
          [
            [':status', '200'],
            ['content-type', 'application/grpc'],
            ['x-long', 'v'.repeat(300)],
          ],
          [['grpc-status', '0']],
        ]);
        assert.equal(Buffer.concat(r.heard.data).toString(), 'hello world');
      } finally {
        conn.close();
      }
    }));

  test('GOAWAY: the streams after its last one are refused, the ones before it finish, and the connection takes no new one', () =>
    withServer(async (path, peer) => {
      const conn = new H2Connection(path, OPTS);
      let gone = 0;
      conn.onGone = () => gone++;
      try {
        const p = await peer();
        const first = recorder();
        const second = recorder();
        conn.request(REQUEST, Buffer.from('a'), first.handler);
        conn.request(REQUEST, Buffer.from('b'), second.handler);
        await p.until((f) => f.type === T.DATA && f.stream === 3 && (f.flags & 1) === 1, 'both requests');
        p.send(frame(T.GOAWAY, 0, 0, Buffer.concat([u32(1), u32(0)])));
        await second.ended;
        assert.equal(second.heard.closed?.err?.code, H2Code.REFUSED_STREAM);
        assert.equal(conn.usable, false);
        assert.equal(gone, 1);
        p.send(frame(T.HEADERS, 4, 1, grpcHeaders()), frame(T.DATA, 0, 1, Buffer.from('answer')), frame(T.HEADERS, 5, 1, encodeHeaders([['grpc-status', '0']])));
        await first.ended;
        assert.equal(first.heard.closed?.err, undefined);
        assert.equal(Buffer.concat(first.heard.data).toString(), 'answer');
      } finally {
        conn.close();
      }
    }));

  test('gRPC over it: a call refused by GOAWAY is sent again on a new connection; one refused twice fails UNAVAILABLE', () =>
    withServer(async (path, peer) => {
      const channel = new GrpcChannel(path, { windowBytes: 1024 * 1024, maxMessageBytes: 1024 * 1024 });
      const grpcMessage = (text: string) => {
        const body = Buffer.from(text);
        return Buffer.concat([Buffer.from([0]), u32(body.length), body]);
      };
      const answer = (p: Peer, stream: number, text: string) =>
        p.send(frame(T.HEADERS, 4, stream, grpcHeaders()), frame(T.DATA, 0, stream, grpcMessage(text)), frame(T.HEADERS, 5, stream, encodeHeaders([['grpc-status', '0']])));
      const call = (text: string) => channel.unary('/svc/Call', grpcMessage(text).subarray(5), Date.now() + 60_000, (m) => m.toString());
      try {
        const a = call('a');
        const b = call('b');
        const first = await peer();
        await first.until((f) => f.type === T.DATA && f.stream === 3, 'both requests');
        // The runtime leaves: it will finish stream 1 and never saw stream 3.
        first.send(frame(T.GOAWAY, 0, 0, Buffer.concat([u32(1), u32(0)])));
        answer(first, 1, 'answer a');
        assert.equal(await a, 'answer a');
        const second = await peer();
        const again = await second.until((f) => f.type === T.DATA && f.stream === 1, 'the refused request, sent again');
        assert.equal(again.payload.subarray(5).toString(), 'b', 'the same request');
        assert.equal(second.headers.get(1)?.find(([k]) => k === ':path')?.[1], '/svc/Call');
        answer(second, 1, 'answer b');
        assert.equal(await b, 'answer b');

        // A stream reset with REFUSED_STREAM is sent again too (the connection still serves: on it);
        // refused a second time, the call fails.
        const c = call('c');
        await second.until((f) => f.type === T.DATA && f.stream === 3, 'the third request');
        second.send(frame(T.RST_STREAM, 0, 3, u32(H2Code.REFUSED_STREAM)));
        const resent = await second.until((f) => f.type === T.DATA && f.stream === 5, 'the third request, sent again');
        assert.equal(resent.payload.subarray(5).toString(), 'c');
        second.send(frame(T.RST_STREAM, 0, 5, u32(H2Code.REFUSED_STREAM)));
        await assert.rejects(c, (err: GrpcCallError) => err.code === GrpcStatus.UNAVAILABLE && /REFUSED_STREAM/.test(err.message));
      } finally {
        channel.close();
      }
    }));

  test('MAX_CONCURRENT_STREAMS 1: a second request waits until the first ends', () =>
    withServer(async (path, peer) => {
      const conn = new H2Connection(path, OPTS);
      try {
        const p = await peer();
        p.send(frame(T.SETTINGS, 0, 0, setting(3, 1)));
        await p.until((f) => f.type === T.SETTINGS && f.flags === 1, 'SETTINGS ACK');
        const first = recorder();
        const second = recorder();
        conn.request(REQUEST, Buffer.from('a'), first.handler);
        conn.request(REQUEST, Buffer.from('b'), second.handler);
        await p.until((f) => f.type === T.DATA && f.stream === 1, 'the first request');
        // The client sends frames in order: a PING after the first request comes back before anything of stream 3 would.
        p.send(frame(T.PING, 0, 0, Buffer.from('--wait--')));
        await p.until((f) => f.type === T.PING, 'PING ACK');
        assert.equal(p.headers.has(3), false, 'the second request waits');
        p.send(frame(T.HEADERS, 5, 1, grpcHeaders()));
        await p.until((f) => f.type === T.HEADERS && f.stream === 3, 'the second request');
        p.send(frame(T.HEADERS, 5, 3, grpcHeaders()));
        await Promise.all([first.ended, second.ended]);
        assert.equal(second.heard.closed?.err, undefined);
      } finally {
        conn.close();
      }
    }));

  test('RST_STREAM ends a stream with its code; a cancel sends RST_STREAM CANCEL and hears nothing more', () =>
    withServer(async (path, peer) => {
      const conn = new H2Connection(path, OPTS);
      try {
        const p = await peer();
        const reset = recorder();
        const cancelled = recorder();
        conn.request(REQUEST, Buffer.from('a'), reset.handler);
        const s = conn.request(REQUEST, Buffer.from('b'), cancelled.handler);
        await p.until((f) => f.type === T.DATA && f.stream === 3, 'both requests');
        p.send(frame(T.RST_STREAM, 0, 1, u32(H2Code.ENHANCE_YOUR_CALM)));
        await reset.ended;
        assert.equal(reset.heard.closed?.err?.code, H2Code.ENHANCE_YOUR_CALM);
        assert.equal(reset.heard.closed?.err?.connection, false);
        s.cancel();
        const rst = await p.until((f) => f.type === T.RST_STREAM && f.stream === 3, 'RST_STREAM');
        assert.equal(rst.payload.readUInt32BE(0), H2Code.CANCEL);
        // An answer after the cancel goes nowhere.
        p.send(frame(T.HEADERS, 5, 3, grpcHeaders()), frame(T.PING, 0, 0, Buffer.from('--sync--')));
        await p.until((f) => f.type === T.PING, 'PING ACK');
        assert.equal(cancelled.heard.closed, undefined);
        assert.deepEqual(cancelled.heard.headers, []);
      } finally {
        conn.close();
      }
    }));

  test('the server going away fails the open streams as connection errors, and a frame above 16 KB is a FRAME_SIZE_ERROR', () =>
    withServer(async (path, peer) => {
      const a = new H2Connection(path, OPTS);
      const b = new H2Connection(path, OPTS);
      try {
        const pa = await peer();
        const pb = await peer();
        const ra = recorder();
        const rb = recorder();
        a.request(REQUEST, Buffer.from('a'), ra.handler);
        b.request(REQUEST, Buffer.from('b'), rb.handler);
        await pa.until((f) => f.type === T.DATA, 'a request');
        await pb.until((f) => f.type === T.DATA, 'a request');
        pa.socket.destroy();
        await ra.ended;
        assert.equal(ra.heard.closed?.err?.connection, true);
        assert.equal(a.usable, false);
        pb.send(frame(T.DATA, 0, 1, Buffer.alloc(16_385)));
        const away = await pb.until((f) => f.type === T.GOAWAY, 'GOAWAY');
        assert.equal(away.payload.readUInt32BE(4), H2Code.FRAME_SIZE_ERROR);
        await rb.ended;
        assert.equal(rb.heard.closed?.err?.code, H2Code.FRAME_SIZE_ERROR);
        assert.equal(rb.heard.closed?.err?.connection, true);
      } finally {
        a.close();
        b.close();
      }
    }));

  test('the answer’s bytes return to the server as WINDOW_UPDATEs once half a window is used', () =>
    withServer(async (path, peer) => {
      const conn = new H2Connection(path, { windowBytes: 64 * 1024 });
      try {
        const p = await peer();
        const r = recorder();
        conn.request(REQUEST, Buffer.from('a'), r.handler);
        await p.until((f) => f.type === T.DATA, 'the request');
        p.send(frame(T.HEADERS, 4, 1, grpcHeaders()));
        for (let i = 0; i < 3; i++) p.send(frame(T.DATA, 0, 1, Buffer.alloc(16_000, i)));
        const stream = await p.until((f) => f.type === T.WINDOW_UPDATE && f.stream === 1, 'a stream WINDOW_UPDATE');
        const conn0 = await p.until((f) => f.type === T.WINDOW_UPDATE && f.stream === 0 && f.payload.readUInt32BE(0) >= 32 * 1024, 'a connection WINDOW_UPDATE');
        assert.equal(stream.payload.readUInt32BE(0), 48_000);
        assert.ok(conn0.payload.readUInt32BE(0) >= 32 * 1024);
        p.send(frame(T.HEADERS, 5, 1, encodeHeaders([['grpc-status', '0']])));
        await r.ended;
        assert.equal(Buffer.concat(r.heard.data).length, 48_000);
      } finally {
        conn.close();
      }
    }));
});
