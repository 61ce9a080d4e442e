import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import transport, { type SpdyConnection, type SpdyStream } from 'spdy-transport';
import WebSocket, { createWebSocketStream, WebSocketServer } from 'ws';
import type { PodSandbox } from '../../src/core/cri/types.js';
import { PORTFORWARD_PROTOCOL as CRI_PROTOCOL } from '../../src/core/exec/portforward.js';
import {
  handlePortForward,
  TUNNEL_PROTOCOL,
  type PortForwardContext,
  type PortForwardOptions,
} from '../../src/core/kubeapi/streams/portforward.js';

/** The runtime's streaming server as containerd speaks port-forward (v4 WebSocket): port 80 echoes, 81 fails, 82 hangs up. */
async function fakeRuntime() {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: (p) => (p.has(CRI_PROTOCOL) ? CRI_PROTOCOL : false) });
  await once(wss, 'listening');
  const queries: string[] = [];
  const closed: string[] = [];
  const events = new EventEmitter();
  let paused = false;
  const sockets = new Set<WebSocket>();
  wss.on('connection', (ws, req) => {
    queries.push(req.url ?? '');
    sockets.add(ws);
    ws.on('close', () => {
      sockets.delete(ws);
      closed.push(req.url ?? '');
      events.emit('closed');
    });
    if (paused) ws.pause();
    const port = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('port'));
    const prefix = Buffer.from([port & 0xff, port >> 8]);
    ws.send(Buffer.concat([Buffer.from([0]), prefix]));
    ws.send(Buffer.concat([Buffer.from([1]), prefix]));
    if (port === 81) {
      ws.send(Buffer.concat([Buffer.from([1]), Buffer.from(`error forwarding port 81 to pod sb1, uid : connection refused`)]));
      ws.close();
    } else if (port === 82) {
      ws.send(Buffer.from([0, ...Buffer.from('bye')]));
      ws.close();
    } else ws.on('message', (m: Buffer) => m[0] === 0 && ws.send(m));
  });
  const address = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  return {
    queries,
    closed,
    /** Resolves once the runtime has seen a stream whose URL matches `re` close. */
    closedMatching: async (re: RegExp) => {
      while (!closed.some((u) => re.test(u))) await once(events, 'closed');
    },
    pause: () => {
      paused = true;
      for (const ws of sockets) ws.pause();
    },
    resume: () => {
      paused = false;
      for (const ws of sockets) ws.resume();
    },
    close: () => new Promise((r) => wss.close(r)),
    url: (n: number) => `${address}/portforward/${n}`,
  };
}

type Runtime = Awaited<ReturnType<typeof fakeRuntime>>;

interface Harness {
  base: string;
  portForwardCalls: number[][];
  close(): Promise<void>;
}

async function kubeApi(runtime: Runtime, opts: PortForwardOptions & { ready?: boolean; failCri?: boolean } = {}): Promise<Harness> {
  const portForwardCalls: number[][] = [];
  let n = 0;
  const sandbox = { id: 'sb1', createdAt: 1 } as unknown as PodSandbox;
  const ctx: PortForwardContext = {
    pod: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default', uid: 'u1' } },
    cri: {
      listPodSandbox: async (filter) => {
        assert.deepEqual(filter, { labelSelector: { 'io.kubernetes.pod.uid': 'u1' }, state: { state: 'SANDBOX_READY' } });
        return opts.ready === false ? [] : [sandbox];
      },
      portForward: async (id, ports) => {
        assert.equal(id, 'sb1');
        portForwardCalls.push(ports);
        if (opts.failCri) throw new Error('boom');
        return runtime.url(n++);
      },
    },
  };
  const server: Server = createServer();
  const sockets = new Set<Duplex>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    handlePortForward(req, socket, head, new URL(req.url ?? '/', 'http://x'), ctx, opts);
  });
  server.on('request', (req, res) => {
    // A request without an upgrade reaches the handler as the router would hand it: its socket.
    if (req.url?.endsWith('/portforward')) handlePortForward(req, res.socket!, Buffer.alloc(0), new URL(req.url, 'http://x'), ctx, opts);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    portForwardCalls,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const PATH = '/api/v1/namespaces/default/pods/web/portforward';

/** kubectl 1.30+: SPDY in WebSocket binary messages. */
async function dialTunnel(h: Harness): Promise<{ conn: SpdyConnection; done: () => void }> {
  // ws refuses a subprotocol with a "/" as gorilla/websocket (kubectl's) does not: sent as a plain
  // header here, and the server's answer taken off the response before ws checks it.
  const ws = new WebSocket(`ws://${h.base}${PATH}`, { headers: { 'Sec-WebSocket-Protocol': TUNNEL_PROTOCOL } });
  let answered: string | undefined;
  ws.on('upgrade', (res) => {
    answered = res.headers['sec-websocket-protocol'] as string | undefined;
    delete res.headers['sec-websocket-protocol'];
  });
  // The server's first frames may come with the 101: read from the start.
  const wire = createWebSocketStream(ws);
  await once(ws, 'open');
  assert.equal(answered, TUNNEL_PROTOCOL);
  const conn = transport.connection.create(wire, { protocol: 'spdy', isServer: false });
  conn.start(3.1);
  conn.on('error', () => {});
  return { conn, done: () => ws.terminate() };
}

/** KUBECTL_PORT_FORWARD_WEBSOCKETS=false and kubectl before 1.30: POST with Upgrade: SPDY/3.1. */
async function dialSpdy(h: Harness): Promise<{ conn: SpdyConnection; done: () => void }> {
  const [host, port] = h.base.split(':');
  const req = request({
    host,
    port,
    path: PATH,
    method: 'POST',
    headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'portforward.k8s.io' },
  });
  req.end();
  const [res, socket, head] = (await once(req, 'upgrade')) as [IncomingMessage, Duplex, Buffer];
  if (head.length) socket.unshift(head);
  assert.equal(res.statusCode, 101);
  assert.equal(res.headers['x-stream-protocol-version'], 'portforward.k8s.io');
  const conn = transport.connection.create(socket, { protocol: 'spdy', isServer: false });
  conn.start(3.1);
  conn.on('error', () => {});
  return { conn, done: () => socket.destroy() };
}

function openStream(conn: SpdyConnection, headers: Record<string, string>): Promise<SpdyStream> {
  return new Promise((resolve, reject) => {
    conn.request({ method: 'POST', path: '/', headers }, (err, stream) => {
      if (err) return reject(err);
      stream.on('error', () => {});
      stream.once('response', () => resolve(stream));
    });
  });
}

/** One forwarded connection as kubectl opens it: the error stream, then the data stream. */
async function openPair(conn: SpdyConnection, port: number, requestId: number) {
  const base = { port: String(port), requestid: String(requestId) };
  const error = await openStream(conn, { ...base, streamtype: 'error' });
  error.end();
  const errorText = readAll(error).then((b) => b.toString());
  const data = await openStream(conn, { ...base, streamtype: 'data' });
  return { error, errorText, data };
}

function readAll(stream: Duplex): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/** Reads `n` bytes from a stream that stays open. */
function readBytes(stream: Duplex, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let got = 0;
    const onData = (c: Buffer) => {
      chunks.push(c);
      got += c.length;
      if (got >= n) {
        stream.off('data', onData);
        resolve(Buffer.concat(chunks));
      }
    };
    stream.on('data', onData);
    stream.once('end', () => got < n && reject(new Error(`stream ended after ${got} of ${n} bytes`)));
  });
}

function pattern(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

for (const [name, dial] of [
  ['tunnelled in WebSocket', dialTunnel],
  ['plain SPDY', dialSpdy],
] as const) {
  test(`port-forward (${name}): several connections at once, each its own runtime stream, data both ways past the SPDY windows`, async () => {
    const runtime = await fakeRuntime();
    const h = await kubeApi(runtime);
    const { conn, done } = await dial(h);
    try {
      const size = 300 * 1024;
      const results = await Promise.all(
        [0, 1, 2, 3, 4].map(async (id) => {
          const pair = await openPair(conn, 80, id);
          const payload = pattern(size, id);
          const echoed = readBytes(pair.data, size);
          pair.data.write(payload);
          const got = await echoed;
          pair.data.end();
          return { id, same: got.equals(payload), pair };
        }),
      );
      for (const r of results) assert.ok(r.same, `connection ${r.id} echoed its bytes`);
      assert.deepEqual(h.portForwardCalls, [[80], [80], [80], [80], [80]]);
      assert.equal(new Set(runtime.queries).size, 5);
      for (const q of runtime.queries) assert.match(q, /\?port=80$/);
    } finally {
      done();
      await h.close();
      await runtime.close();
    }
  });
}

test('port-forward: the runtime error goes on the error stream as its text, and the connection goes on', async () => {
  const runtime = await fakeRuntime();
  const h = await kubeApi(runtime);
  const { conn, done } = await dialTunnel(h);
  try {
    const failed = await openPair(conn, 81, 0);
    assert.equal(await failed.errorText, 'error forwarding port 81 to pod sb1, uid : connection refused');
    await readAll(failed.data);
    const ok = await openPair(conn, 80, 1);
    const echoed = readBytes(ok.data, 5);
    ok.data.write('hello');
    assert.equal((await echoed).toString(), 'hello');
  } finally {
    done();
    await h.close();
    await runtime.close();
  }
});

test('port-forward: a failed CRI PortForward is the kubelet text on the error stream, naming the pod and UID', async () => {
  const runtime = await fakeRuntime();
  const h = await kubeApi(runtime, { failCri: true });
  const { conn, done } = await dialSpdy(h);
  try {
    const pair = await openPair(conn, 80, 0);
    assert.equal(await pair.errorText, 'error forwarding port 80 to pod web_default, uid u1: boom');
    assert.equal((await readAll(pair.data)).length, 0);
  } finally {
    done();
    await h.close();
    await runtime.close();
  }
});

test('port-forward: the runtime hanging up ends the data stream and an empty error stream; the client resetting closes the runtime stream', async () => {
  const runtime = await fakeRuntime();
  const h = await kubeApi(runtime);
  const { conn, done } = await dialTunnel(h);
  try {
    const hungUp = await openPair(conn, 82, 0);
    assert.equal((await readAll(hungUp.data)).toString(), 'bye');
    assert.equal(await hungUp.errorText, '');

    const reset = await openPair(conn, 80, 1);
    const echoed = readBytes(reset.data, 2);
    reset.data.write('hi');
    await echoed;
    assert.ok(!runtime.closed.some((u) => /\/portforward\/1\?/.test(u)));
    reset.data.abort();
    await runtime.closedMatching(/\/portforward\/1\?port=80$/);
    assert.equal(await reset.errorText, '');
  } finally {
    done();
    await h.close();
    await runtime.close();
  }
});

test('port-forward: a slow runtime holds the streams back, and 8 MiB each way on two connections arrive whole', async () => {
  const runtime = await fakeRuntime();
  const h = await kubeApi(runtime, { streamHighWaterMark: 64 * 1024 });
  const { conn, done } = await dialSpdy(h);
  try {
    const size = 8 << 20;
    const pairs = await Promise.all([0, 1].map((id) => openPair(conn, 80, id)));
    runtime.pause();
    const echoes = pairs.map((p) => readBytes(p.data, size));
    const payloads = pairs.map((_, i) => pattern(size, i + 7));
    // Resumed once both writers are held up (or done): the bytes then have to come through the pauses.
    let heldUp = 0;
    let bothHeld!: () => void;
    const held = new Promise<void>((r) => (bothHeld = r));
    const holdUp = () => ++heldUp === 2 && bothHeld();
    const writes = pairs.map(async (p, i) => {
      let counted = false;
      for (let off = 0; off < size; off += 64 * 1024) {
        if (!p.data.write(payloads[i]!.subarray(off, off + 64 * 1024))) {
          if (!counted) holdUp();
          counted = true;
          await once(p.data, 'drain');
        }
      }
      if (!counted) holdUp();
    });
    await held;
    runtime.resume();
    await Promise.all(writes);
    const got = await Promise.all(echoes);
    got.forEach((b, i) => assert.ok(b.equals(payloads[i]!), `connection ${i} echoed its 8 MiB in order`));
  } finally {
    done();
    await h.close();
    await runtime.close();
  }
});

/** The raw HTTP answer to a request on the portforward path. */
function rawAnswer(h: Harness, headers: Record<string, string>, method = 'GET'): Promise<{ status: number; body: string }> {
  const [host, port] = h.base.split(':');
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: PATH, method, headers });
    req.on('response', async (res) => {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
    });
    req.on('upgrade', () => reject(new Error('upgraded')));
    req.on('error', reject);
    req.end();
  });
}

test('port-forward: bad requests get a Status and never reach the runtime', async () => {
  const runtime = await fakeRuntime();
  const h = await kubeApi(runtime);
  const notReady = await kubeApi(runtime, { ready: false });
  try {
    const plain = await rawAnswer(h, {});
    assert.equal(plain.status, 400);
    assert.equal(JSON.parse(plain.body).message, 'Upgrade request required');

    const wrong = await rawAnswer(
      h,
      { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' },
      'POST',
    );
    assert.equal(wrong.status, 403);
    assert.match(JSON.parse(wrong.body).message, /client supports \[v4\.channel\.k8s\.io\], server accepts \[portforward\.k8s\.io\]/);

    const noTunnel = await rawAnswer(h, {
      Connection: 'Upgrade',
      Upgrade: 'websocket',
      'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Protocol': 'v4.channel.k8s.io',
    });
    assert.equal(noTunnel.status, 400);
    assert.match(JSON.parse(noTunnel.body).message, /no tunneling spdy protocols/);

    const down = await rawAnswer(
      notReady,
      { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'portforward.k8s.io' },
      'POST',
    );
    assert.equal(down.status, 400);
    const status = JSON.parse(down.body);
    assert.equal(status.kind, 'Status');
    assert.match(status.message, /pod "web" has no ready sandbox/);
    assert.deepEqual([h.portForwardCalls, notReady.portForwardCalls, runtime.queries], [[], [], []]);
  } finally {
    await h.close();
    await notReady.close();
    await runtime.close();
  }
});

test('port-forward: a stream with a bad port is reset, a lone stream times out with the kubelet text, a duplicate is refused', async () => {
  const runtime = await fakeRuntime();
  const h = await kubeApi(runtime, { pairTimeoutMs: 50 });
  const { conn, done } = await dialTunnel(h);
  try {
    const bad = await new Promise<SpdyStream>((resolve) =>
      conn.request({ method: 'POST', path: '/', headers: { streamtype: 'data', port: 'x', requestid: '0' } }, (_e, s) => resolve(s)),
    );
    bad.on('error', () => {});
    await once(bad, 'close');

    const lone = await openStream(conn, { streamtype: 'error', port: '80', requestid: '1' });
    lone.end();
    assert.match((await readAll(lone)).toString(), /request=1\) timed out waiting for streams$/);

    const first = await openStream(conn, { streamtype: 'error', port: '80', requestid: '2' });
    first.end();
    const firstText = readAll(first);
    const dup = await new Promise<SpdyStream>((resolve) =>
      conn.request({ method: 'POST', path: '/', headers: { streamtype: 'error', port: '80', requestid: '2' } }, (_e, s) => resolve(s)),
    );
    dup.on('error', () => {});
    await once(dup, 'close');
    assert.match((await firstText).toString(), /^error processing stream for request 2: error stream already assigned/);
    assert.deepEqual(h.portForwardCalls, []);
  } finally {
    done();
    await h.close();
    await runtime.close();
  }
});
