import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AnswerParser, exchange, getFromStatusSocket } from '../../src/core/status/client.js';

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
      req.on('end', () => res.writeHead(201).end(JSON.stringify({ method: req.method, url: req.url, type: req.headers['content-type'], length: req.headers['content-length'], body })));
    }),
    async (socket) => {
      const sent = JSON.stringify({ pods: ['ä'.repeat(70_000)] });
      const answer = await exchange(socket, { method: 'POST', path: '/v1/plan?x=1', body: sent, timeoutMs: 5000 });
      assert.equal(answer.status, 201);
      assert.deepEqual(JSON.parse(answer.body), { method: 'POST', url: '/v1/plan?x=1', type: 'application/json', length: String(Buffer.byteLength(sent)), body: sent });
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
    await assert.rejects(exchange(socket, { method: 'GET', path: '/', timeoutMs: 5000 }), (err: Error) => err.message.startsWith(`${socket}: not an HTTP answer`));
  });
  await withSocket(rawServer([], { end: false }), async (socket) => {
    await assert.rejects(exchange(socket, { method: 'GET', path: '/', timeoutMs: 50, timeoutMessage: 'the agent did not answer' }), /^Error: the agent did not answer$/);
  });
  const dir = mkdtempSync(join(tmpdir(), 'podctl-status-client-'));
  try {
    await assert.rejects(exchange(join(dir, 'podctl.sock'), { method: 'GET', path: '/', timeoutMs: 50 }), (err: NodeJS.ErrnoException) => err.code === 'ENOENT' && err.syscall === 'connect');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('AnswerParser gives the same answer however the bytes are split: interim 100, chunk extensions, trailers', () => {
  const chunked = Buffer.from(
    'HTTP/1.1 100 Continue\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n' +
      '4;ext=1\r\nwiki\r\n6\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nX-Trailer: t\r\n\r\n',
  );
  const fixed = Buffer.from('HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\nnopeEXTRA');
  const empty = Buffer.from('HTTP/1.1 204 No Content\r\n\r\n');
  for (const [bytes, want] of [
    [chunked, { status: 200, body: 'wikipedia in \r\n\r\nchunks.' }],
    [fixed, { status: 404, body: 'nope' }],
    [empty, { status: 204, body: '' }],
  ] as const) {
    for (let cut = 0; cut <= bytes.length; cut++) {
      for (const step of [1, 7, bytes.length]) {
        const parser = new AnswerParser();
        let answer;
        const pieces = [bytes.subarray(0, cut), ...Array.from({ length: Math.ceil((bytes.length - cut) / step) }, (_, i) => bytes.subarray(cut + i * step, cut + (i + 1) * step))];
        for (const piece of pieces) answer ??= parser.push(piece);
        assert.ok(answer, `an answer with a cut at ${cut}, steps of ${step}`);
        assert.deepEqual({ status: answer.status, body: answer.body }, want, `cut at ${cut}, steps of ${step}`);
      }
    }
  }
  assert.throws(() => new AnswerParser().push(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n')), /malformed Content-Length/);
  assert.throws(() => new AnswerParser().push(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')), /malformed chunk size/);
});

test('asking the agent once loads neither node:http nor its parser', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-status-client-'));
  try {
    const client = pathToFileURL(join(import.meta.dirname, '../../src/core/node/client.js')).href;
    // The agent's side is a plain net server here, so that nothing in this process loads http.
    const script = `
      const { createServer } = await import('node:net');
      const { join } = await import('node:path');
      const body = JSON.stringify({ items: [{ metadata: { name: 'web' } }] });
      const server = createServer((c) => c.once('data', () => c.end(\`HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: \${body.length}\\r\\n\\r\\n\${body}\`)));
      await new Promise((r) => server.listen(join(${JSON.stringify(dir)}, 'podctl.sock'), r));
      const { AgentClient } = await import(${JSON.stringify(client)});
      const pods = await new AgentClient(${JSON.stringify(dir)}).pods();
      server.close();
      const http = process.moduleLoadList.filter((m) => /^(NativeModule (http|_http_\\w+)|Internal Binding http_parser)$/.test(m));
      console.log(JSON.stringify({ pods, http }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { pods: unknown[]; http: string[] };
    assert.deepEqual(out.pods, [{ metadata: { name: 'web' } }]);
    assert.deepEqual(out.http, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
