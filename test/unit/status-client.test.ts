import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exchange, getFromStatusSocket } from '../../src/core/status/client.js';

async function withSocket(server: Server, fn: (socket: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-status-client-'));
  const socket = join(dir, 'podctl.sock');
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  try {
    await fn(socket);
  } finally {
    (server as { closeAllConnections?: () => void }).closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

const httpServer = (handler: (req: IncomingMessage, res: ServerResponse) => void) => createHttpServer(handler) as unknown as Server;

/** A server that answers every connection with these bytes, in these pieces, then ends it (or not). */
function rawServer(pieces: string[], opts: { end?: boolean } = {}): Server & { sockets: Socket[] } {
  const sockets: Socket[] = [];
  const server = createNetServer((c) => {
    sockets.push(c);
    c.once('data', async () => {
      for (const p of pieces) {
        c.write(p);
        await new Promise((r) => setImmediate(r));
      }
      if (opts.end !== false) c.end();
    });
  });
  const close = server.close.bind(server);
  return Object.assign(server, {
    sockets,
    close: (cb?: (err?: Error) => void) => {
      for (const s of sockets) s.destroy();
      return close(cb);
    },
  });
}

test("exchange reads Node's http server: a Content-Length body, a chunked one written in pieces, a status other than 200", async () => {
  const big = 'é'.repeat(300_000);
  await withSocket(
    httpServer((req, res) => {
      if (req.url === '/one') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"a":"ü"}\n');
      if (req.url === '/pieces') {
        res.writeHead(200, { 'content-type': 'application/json' });
        // A two-byte character split between two chunks.
        const bytes = Buffer.from(`{"big":"${big}"}`);
        let at = 0;
        const step = () => {
          if (at >= bytes.length) return void res.end();
          const next = Math.min(bytes.length, at + 65_537);
          res.write(bytes.subarray(at, next));
          at = next;
          setImmediate(step);
        };
        return step();
      }
      res.writeHead(404, { 'content-type': 'text/plain', 'x-twice': ['a', 'b'] }).end('not found\n');
    }),
    async (socket) => {
      const one = await exchange(socket, { method: 'GET', path: '/one', timeoutMs: 5000 });
      assert.equal(one.status, 200);
      assert.equal(one.headers['content-type'], 'application/json');
      assert.equal(one.body, '{"a":"ü"}\n');

      const pieces = await exchange(socket, { method: 'GET', path: '/pieces', timeoutMs: 5000 });
      assert.equal(pieces.headers['transfer-encoding'], 'chunked');
      assert.equal((JSON.parse(pieces.body) as { big: string }).big, big);

      const missing = await exchange(socket, { method: 'GET', path: '/nothing', timeoutMs: 5000 });
      assert.deepEqual([missing.status, missing.body, missing.headers['x-twice']], [404, 'not found\n', 'a, b']);
      await assert.rejects(getFromStatusSocket(socket, '/nothing'), /GET \/nothing: HTTP 404/);
      assert.deepEqual(await getFromStatusSocket(socket, '/one'), { a: 'ü' });
    },
  );
});

test('exchange sends a body as Node reads it: method, path, JSON content type and length', async () => {
  await withSocket(
    httpServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () =>
        res.writeHead(201).end(
          JSON.stringify({
            method: req.method,
            url: req.url,
            type: req.headers['content-type'],
            length: req.headers['content-length'],
            body,
          }),
        ),
      );
    }),
    async (socket) => {
      const sent = JSON.stringify({ pods: ['ä'.repeat(70_000)] });
      const answer = await exchange(socket, { method: 'POST', path: '/v1/plan?x=1', body: sent, timeoutMs: 5000 });
      assert.equal(answer.status, 201);
      assert.deepEqual(JSON.parse(answer.body), {
        method: 'POST',
        url: '/v1/plan?x=1',
        type: 'application/json',
        length: String(Buffer.byteLength(sent)),
        body: sent,
      });
      const bare = await exchange(socket, { method: 'DELETE', path: '/v1/pods/default/a', timeoutMs: 5000 });
      assert.deepEqual(JSON.parse(bare.body), { method: 'DELETE', url: '/v1/pods/default/a', length: '0', body: '' });
    },
  );
});

test('exchange: a body to the close, an answer cut short, no answer in time, no socket', async () => {
  await withSocket(rawServer(['HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the ', 'close']), async (socket) => {
    const answer = await exchange(socket, { method: 'GET', path: '/', timeoutMs: 5000 });
    assert.deepEqual([answer.status, answer.body], [200, 'to the close']);
  });
  await withSocket(rawServer(['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc']), async (socket) => {
    await assert.rejects(exchange(socket, { method: 'GET', path: '/', timeoutMs: 5000 }), /closed before the end of the answer/);
  });
  await withSocket(rawServer(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n']), async (socket) => {
    await assert.rejects(exchange(socket, { method: 'GET', path: '/', timeoutMs: 5000 }), /closed before the end of the answer/);
  });
  await withSocket(rawServer(['SSH-2.0-OpenSSH\r\n\r\n']), async (socket) => {
    await assert.rejects(exchange(socket, { method: 'GET', path: '/', timeoutMs: 5000 }), (err: Error) =>
      err.message.startsWith(`${socket}: not an HTTP answer`),
    );
  });
  await withSocket(rawServer([], { end: false }), async (socket) => {
    await assert.rejects(
      exchange(socket, { method: 'GET', path: '/', timeoutMs: 50, timeoutMessage: 'the agent did not answer' }),
      /^Error: the agent did not answer$/,
    );
  });
  const dir = mkdtempSync(join(tmpdir(), 'podctl-status-client-'));
  try {
    await assert.rejects(
      exchange(join(dir, 'podctl.sock'), { method: 'GET', path: '/', timeoutMs: 50 }),
      (err: NodeJS.ErrnoException) => err.code === 'ENOENT' && err.syscall === 'connect',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
