import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Duplex } from 'node:stream';
import transport, { type SpdyConnection, type SpdyStream } from 'spdy-transport';
import WebSocket from 'ws';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { spdySession } from '../../src/core/exec/spdy.js';
import { handlePodUpgrade } from '../../src/core/kubeapi/streams/index.js';

/**
 * kubectl's and containerd's SPDY (moby/spdystream) never send SETTINGS or WINDOW_UPDATE: each peer
 * here is spdy-transport's own SPDY with those two frames taken off what it writes, so that the
 * bridge's writes get no credit past the first 64 KiB window from anyone but itself.
 */
class NoCreditWire extends Duplex {
  private pending = Buffer.alloc(0);
  dropped = 0;

  private gated = false;

  constructor(private readonly inner: Duplex) {
    super();
    inner.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) inner.pause();
    });
    inner.on('end', () => this.push(null));
    inner.on('close', () => this.destroy());
    inner.on('error', (err) => this.destroy(err));
  }

  /** Nothing is read from the socket before `until` settles: a client that reads nothing for now. */
  holdUntil(until: Promise<void>) {
    this.gated = true;
    this.inner.pause();
    void until.then(() => {
      this.gated = false;
      this.inner.resume();
    });
  }

  override _read() {
    if (!this.gated) this.inner.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, callback: (err?: Error | null) => void) {
    this.pending = Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    // Every SPDY frame has an 8-byte head whose last three bytes are the length of what follows.
    while (this.pending.length >= 8) {
      const size = 8 + this.pending.readUIntBE(5, 3);
      if (this.pending.length < size) break;
      const frame = this.pending.subarray(0, size);
      this.pending = this.pending.subarray(size);
      const type = frame[0]! & 0x80 ? frame.readUInt16BE(2) : 0;
      if (type === 4 || type === 9) this.dropped++;
      else out.push(frame);
    }
    if (!out.length || this.inner.write(Buffer.concat(out))) callback();
    else {
      this.emit('blocked');
      this.inner.once('drain', () => callback());
    }
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

const MIB = 1024 * 1024;

function pattern(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed + (i >> 11)) & 0xff;
  return b;
}

function readAll(stream: Duplex): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('close', () => resolve(Buffer.concat(chunks)));
  });
}

const wires: NoCreditWire[] = [];

/**
 * A spdystream-like peer. The runtime's also writes heeding no window (spdystream's writes wait on
 * TCP alone): it is the bridge's own session, which gives itself the credit back.
 */
function spdystreamPeer(socket: Duplex, isServer: boolean): SpdyConnection {
  const wire = new NoCreditWire(socket);
  wires.push(wire);
  const conn = isServer ? spdySession(wire, true) : transport.connection.create(wire, { protocol: 'spdy', isServer });
  if (!isServer) conn.start(3.1);
  conn.on('error', () => undefined);
  return conn;
}

const BIG = pattern(3 * MIB, 5);
/** More than loopback TCP's buffers hold, both ways. */
const HUGE = pattern(32 * MIB, 3);
/** 'go' once the runtime's writes wait on the bridge, or the runtime closed its connection. */
const runtimeEvents = new EventEmitter();

/** containerd's streaming server: `cat` echoes stdin to its end, `big` and `huge` write BIG and HUGE to stdout. */
function fakeRuntime(): Server {
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url!, 'http://x');
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n',
    );
    if (head.length) socket.unshift(head);
    const conn = spdystreamPeer(socket, true);
    wires.at(-1)!.once('blocked', () => runtimeEvents.emit('go'));
    socket.once('close', () => runtimeEvents.emit('go'));
    const want = ['error', 'stdout', ...(url.searchParams.get('stdin') === 'true' ? ['stdin'] : [])];
    const streams = new Map<string, SpdyStream>();
    conn.on('stream', (s: SpdyStream) => {
      s.on('error', () => undefined);
      s.respond(200, {});
      streams.set(String(s.headers.streamtype), s);
      if (!want.every((w) => streams.has(w))) return;
      const out = streams.get('stdout')!;
      // As containerd does: the connection closed as soon as the status is out (here: once the
      // bridge answered a PING sent after it, so that it has read everything before).
      const finish = () => {
        streams.get('error')!.end(JSON.stringify({ metadata: {}, status: 'Success' }), () => conn.ping(() => socket.destroy()));
        out.end();
      };
      if (url.pathname.endsWith('/cat')) {
        const stdin = streams.get('stdin')!;
        stdin.pipe(out, { end: false });
        stdin.once('end', finish);
      } else out.write(url.pathname.endsWith('/huge') ? HUGE : BIG, finish);
    });
  });
  return server;
}

let runtime: Server;
let kube: Server;
let base: string;

before(async () => {
  runtime = fakeRuntime().listen(0, '127.0.0.1');
  await once(runtime, 'listening');
  const runtimeBase = `http://127.0.0.1:${(runtime.address() as AddressInfo).port}`;
  const cri = {
    exec: async (r: { cmd: string[]; stdin: boolean }) => ({ url: `${runtimeBase}/exec/${r.cmd[0]}?stdin=${r.stdin}` }),
  } as unknown as CriClient;
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    status: {
      phase: 'Running',
      containerStatuses: [{ name: 'app', containerID: 'containerd://abc', state: { running: {} } }],
    },
  } as unknown as IPod;
  kube = createServer((_req, res) => res.writeHead(404).end());
  kube.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url!, 'http://x');
    handlePodUpgrade('exec', req, socket, head, url, { pod, cri });
  });
  kube.listen(0, '127.0.0.1');
  await once(kube, 'listening');
  base = `127.0.0.1:${(kube.address() as AddressInfo).port}/api/v1/namespaces/default/pods/web`;
});

after(() => {
  runtime.close();
  kube.close();
});

/** kubectl ≤1.29 (or KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false): SPDY v4, stdin written and then half-closed. */
async function spdyExec(query: string, stdin?: Buffer, until?: Promise<void>): Promise<{ out: Buffer; status: string }> {
  const req = request(`http://${base}/exec?${query}`, {
    method: 'POST',
    headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' },
  });
  req.end();
  const [res, socket, head] = (await once(req, 'upgrade')) as [IncomingMessage, Duplex, Buffer];
  assert.equal(res.statusCode, 101);
  if (head.length) socket.unshift(head);
  const conn = spdystreamPeer(socket, false);
  const wire = wires.at(-1)!;
  const open = (streamtype: string) =>
    new Promise<SpdyStream>((resolve, reject) => {
      const s = conn.request({ method: 'POST', path: '/', headers: { streamtype } }, (err) => err && reject(err));
      s.on('error', () => undefined);
      s.once('response', () => resolve(s));
    });
  try {
    const error = await open('error');
    const input = stdin ? await open('stdin') : undefined;
    const stdout = await open('stdout');
    if (until) wire.holdUntil(until);
    const got = Promise.all([readAll(stdout), readAll(error)]);
    input?.end(stdin);
    const [out, status] = await got;
    return { out, status: status.toString() };
  } finally {
    socket.destroy();
  }
}

const TIMEOUT = { timeout: 120_000 };

test(
  'SPDY exec from a client that never gives window back: 3 MiB of stdin reaches the runtime and 3 MiB of stdout comes back',
  TIMEOUT,
  async () => {
    const payload = pattern(3 * MIB, 1);
    const before = wires.length;
    const r = await spdyExec('command=cat&stdin=true&stdout=true', payload);
    assert.ok(r.out.equals(payload), `the same ${payload.length} bytes back (got ${r.out.length})`);
    assert.deepEqual(JSON.parse(r.status), { metadata: {}, status: 'Success' });
    // Both peers had window updates to send, and neither sent one.
    assert.equal(wires.length - before, 2);
    for (const w of wires.slice(before)) assert.ok(w.dropped > 0);
  },
);

test('SPDY exec: 3 MiB the runtime writes to stdout all reach the client', TIMEOUT, async () => {
  const r = await spdyExec('command=big&stdout=true');
  assert.ok(r.out.equals(BIG), `the same ${BIG.length} bytes (got ${r.out.length})`);
  assert.equal(JSON.parse(r.status).status, 'Success');
});

test('WebSocket v5 exec: 3 MiB of stdin through the runtime SPDY stream and back, to the stdin close', TIMEOUT, async () => {
  const payload = pattern(3 * MIB, 9);
  const ws = new WebSocket(`ws://${base}/exec?command=cat&stdin=true&stdout=true`, ['v5.channel.k8s.io']);
  const out: Buffer[] = [];
  let status = '';
  ws.on('message', (m: Buffer) => {
    if (m[0] === 1) out.push(m.subarray(1));
    else if (m[0] === 3) status += m.subarray(1).toString();
  });
  await once(ws, 'open');
  for (let off = 0; off < payload.length; off += 64 * 1024)
    ws.send(Buffer.concat([Buffer.from([0]), payload.subarray(off, off + 64 * 1024)]));
  ws.send(Buffer.from([255, 0]));
  await once(ws, 'close');
  assert.ok(Buffer.concat(out).equals(payload), `the same bytes back (got ${Buffer.concat(out).length})`);
  assert.equal(JSON.parse(status).status, 'Success');
});

test(
  'SPDY exec to a client that starts reading only once the runtime waits on its socket (or has closed it): all 32 MiB arrive, then the status',
  TIMEOUT,
  async () => {
    // The runtime closes as soon as its status is out: nothing the bridge still holds for the slow
    // client may go with that close, and the bridge's own end may drop nothing it has not sent.
    const go = once(runtimeEvents, 'go').then(() => undefined);
    const r = await spdyExec('command=huge&stdout=true', undefined, go);
    assert.ok(r.out.equals(HUGE), `the same ${HUGE.length} bytes (got ${r.out.length})`);
    assert.equal(JSON.parse(r.status).status, 'Success');
  },
);
