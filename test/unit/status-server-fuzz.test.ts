import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { Server } from 'node:http';
import fc from 'fast-check';
import { Metrics } from '../../src/core/metrics.js';
import { startStatusServer, type StatusSource } from '../../src/core/api/server.js';
import { scratchDir } from '../support/e2e.js';
import { getUnix as get } from '../support/http.js';

const dir = scratchDir('unit-socket-fuzz');
const socket = join(dir.dir, 'podctl.sock');
let server: Server;

const source: StatusSource = {
  pods: () => [],
  health: () => ({ ok: true, checks: [{ name: 'ping', ok: true, message: '' }] }),
  metrics: new Metrics(),
  events: () => [],
  agent: () => ({ pid: process.pid }),
  watchPods: () => () => undefined,
  apply: async () => ({ pods: [] }),
  remove: async () => ({}),
};

/** Writes raw bytes to the socket and resolves with what came back once the server closes or 2 s pass. */
function raw(bytes: Buffer | string, endAfterWrite = true, waitMs = 2000): Promise<{ reply: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const s = connect(socket);
    let reply = '';
    let closedByServer = false;
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ reply, closedByServer });
    }, waitMs);
    s.on('data', (d) => (reply += d.toString('latin1')));
    s.on('error', () => undefined);
    s.on('close', () => {
      closedByServer = true;
      clearTimeout(timer);
      resolve({ reply, closedByServer });
    });
    s.write(bytes);
    if (endAfterWrite) s.end();
  });
}

before(async () => {
  server = await startStatusServer(socket, source, { headersTimeoutMs: 500, requestTimeoutMs: 1000 });
});
after(() => {
  server.close();
  dir.cleanup();
});

test('a request line no URL parser takes (GET //[) is a 400, and the agent answers /healthz after', async () => {
  const { reply } = await raw('GET //[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(reply, /^HTTP\/1\.1 400 /);
  for (const path of ['/v1/pods/%E0%A4%A/x', '/v1/pods/a/b?gracePeriodSeconds=-1']) {
    const r = await raw(`DELETE ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    assert.match(r.reply, /^HTTP\/1\.1 400 /, path);
  }
  assert.equal((await get(socket, '/healthz')).status, 200);
});

test('a half-sent request is cut off by the server', async () => {
  const { closedByServer } = await raw('GET /v1/healthz HTTP/1.1\r\nHost: x\r\n', false, 8000);
  assert.ok(closedByServer, 'the server closed a request whose headers never ended');
  assert.equal((await get(socket, '/healthz')).status, 200);
});

test('fuzz: random request lines, methods, paths and headers never take the server down', async () => {
  const token = fc.string({
    unit: fc.constantFrom(...'abcAZ09/%[]{}?#&=:@!$\'()*+,;~.-_ \t\\"<>^`|\u0000\u00e9\u4e2d'.split('')),
    maxLength: 40,
  });
  const method = fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'HEAD', 'OPTIONS', 'BREW', '', 'G\u00c9T');
  const header = fc.tuple(fc.string({ unit: fc.constantFrom(...'abcXY-_:'.split('')), maxLength: 12 }), token);
  const request = fc.record({
    method,
    path: fc.oneof(
      token,
      token.map((t: string) => `/${t}`),
      token.map((t: string) => `//${t}`),
      token.map((t: string) => `/v1/pods/${t}/${t}`),
    ),
    version: fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2', 'HTTP/9.9', ''),
    headers: fc.array(header, { maxLength: 5 }),
    body: fc.oneof(fc.constant(''), token),
    truncate: fc.nat({ max: 200 }),
  });
  let served = 0;
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      const text = `${r.method} ${r.path} ${r.version}\r\n${r.headers.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\nConnection: close\r\n\r\n${r.body}`;
      const bytes = Buffer.from(text, 'utf8');
      const cut = r.truncate > 150 ? bytes.subarray(0, r.truncate % bytes.length) : bytes;
      const { reply } = await raw(cut, true, 1500);
      if (reply.startsWith('HTTP/1.1 ')) served++;
      assert.ok(reply === '' || /^HTTP\/1\.1 \d{3} /.test(reply), `an HTTP answer or none: ${JSON.stringify(reply.slice(0, 60))}`);
    }),
    { numRuns: 300, seed: 20261124 },
  );
  assert.ok(served > 100, `most requests got an answer (${served})`);
  assert.equal((await get(socket, '/healthz')).status, 200, 'the agent answers /healthz after the fuzz');
});
