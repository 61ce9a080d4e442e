import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Metrics } from '../../src/core/metrics.js';
import { AgentClient, AgentRequestError } from '../../src/core/node/client.js';
import { exchange } from '../../src/core/status/client.js';
import { startStatusServer, type ServerLimits, type StatusSource } from '../../src/core/api/server.js';
import { MAX_REQUEST_BODY_BYTES } from '../../src/core/node/agent.js';
import { PodctlError } from '../../src/core/errors.js';
import { scratchDir } from '../support/e2e.js';

const health: StatusSource['health'] = () => ({ ok: true, checks: [{ name: 'ping', ok: true, message: '' }] });

/** A status server on a socket of its own (dir/podctl.sock, where an AgentClient of dir asks) for fn's time. */
async function withServer(
  source: Partial<StatusSource>,
  limits: ServerLimits,
  fn: (socket: string, dir: string, server: Server) => Promise<void>,
): Promise<void> {
  const scratch = scratchDir('unit-server-limits');
  const socket = join(scratch.dir, 'podctl.sock');
  const server = await startStatusServer(socket, { pods: () => [], health, metrics: new Metrics(), ...source }, limits);
  try {
    await fn(socket, scratch.dir, server);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    scratch.cleanup();
  }
}

/** A POST whose body goes in pieces without a Content-Length (chunked). */
function postChunked(socket: string, path: string, size: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    const piece = Buffer.alloc(64 << 10, 'x');
    for (let sent = 0; sent < size; sent += piece.length) req.write(piece.subarray(0, Math.min(piece.length, size - sent)));
    req.end();
  });
}

test("a request body over the agent's 32 MiB is answered 413 with the limit, and nothing is handled; one at the limit is taken", async () => {
  let handled = 0;
  await withServer(
    {
      apply: async () => (handled++, { pods: [] }),
      plan: async () => (handled++, { runtimeEndpoint: '', plan: { pods: [], changes: false } } as never),
    },
    {},
    async (socket, dir) => {
      // Room for the 8 MiB manifest file a command reads, escaped as JSON, and more files beside it.
      assert.equal(MAX_REQUEST_BODY_BYTES, 32 * 1024 * 1024);
      const over = await exchange(socket, {
        method: 'POST',
        path: '/v1/pods',
        body: 'x'.repeat(MAX_REQUEST_BODY_BYTES + 1),
        timeoutMs: 30_000,
      });
      assert.equal(over.status, 413);
      assert.equal(
        (JSON.parse(over.body) as { message: string }).message,
        `request body too large: ${MAX_REQUEST_BODY_BYTES + 1} bytes; the limit is ${MAX_REQUEST_BODY_BYTES} bytes (32 MiB)`,
      );
      // Without a Content-Length, the body is counted as it comes.
      const chunked = await postChunked(socket, '/v1/plan', MAX_REQUEST_BODY_BYTES + 100);
      assert.equal(chunked.status, 413);
      assert.match(chunked.body, /request body too large: 33554532 bytes; the limit is 33554432 bytes/);
      // The agent's client refuses such a hand-over itself, naming the files, before it sends anything.
      const files = [
        { file: 'big.yaml', text: 'x'.repeat(MAX_REQUEST_BODY_BYTES - (4 << 20)) },
        { file: 'small.yaml', text: 'y'.repeat(5 << 20) },
      ];
      const refused = await new AgentClient(dir).apply(files).then(
        () => assert.fail('taken'),
        (err: unknown) => err as PodctlError,
      );
      assert.ok(refused instanceof PodctlError && !(refused instanceof AgentRequestError), String(refused));
      assert.equal(
        refused.describe(),
        'the manifests come to 33 MiB as sent to the agent, more than the 32 MiB it takes at once (2 file(s); the largest: ' +
          'big.yaml 28 MiB, small.yaml 5 MiB); hand the files over in smaller sets',
      );
      assert.equal(handled, 0, 'no body over the limit was handled');
      const atLimit = await exchange(socket, {
        method: 'POST',
        path: '/v1/pods',
        body: 'x'.repeat(MAX_REQUEST_BODY_BYTES),
        timeoutMs: 30_000,
      });
      assert.equal(atLimit.status, 200);
      assert.equal(handled, 1);
      assert.equal((await exchange(socket, { method: 'GET', path: '/v1/healthz', timeoutMs: 5000 })).status, 200);
    },
  );
});

test("an agent whose bound is lower than the client's (an older one, 3 MiB): the client says what the agent said, a 413", async () => {
  let handled = 0;
  await withServer({ apply: async () => (handled++, { pods: [] }) }, { maxBodyBytes: 3 << 20 }, async (_socket, dir) => {
    const refused = await new AgentClient(dir).apply([{ file: 'big.yaml', text: 'x'.repeat(3 << 20) }]).then(
      () => assert.fail('taken'),
      (err: unknown) => err as AgentRequestError,
    );
    assert.ok(refused instanceof AgentRequestError, String(refused));
    assert.equal(refused.status, 413);
    assert.match(refused.message, /^request body too large: \d+ bytes; the limit is 3145728 bytes \(3 MiB\)$/);
    assert.equal(refused.exitCode, 2, 'a request too large is a usage error, as the one refused before sending');
    assert.match(refused.describe(), /; hand the files over in smaller sets, or restart the agent \(`podctl agent stop`/);
    assert.equal(handled, 0);
  });
});

test(
  'request bodies in flight are bounded: 40 at once are read and handled 4 at a time, /healthz answers meanwhile, and each ' +
    'is answered',
  async () => {
    let running = 0;
    let most = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let fourRunning!: () => void;
    const four = new Promise<void>((resolve) => (fourRunning = resolve));
    const apply = async (body: string) => {
      running++;
      most = Math.max(most, running);
      if (running === 4) fourRunning();
      await released;
      running--;
      return { pods: [], size: body.length };
    };
    await withServer({ apply }, {}, async (socket, _dir, server) => {
      let arrived = 0;
      server.on('request', () => arrived++);
      const body = 'x'.repeat(256 << 10);
      const answers = Array.from({ length: 40 }, () => exchange(socket, { method: 'POST', path: '/v1/pods', body, timeoutMs: 120_000 }));
      await four;
      // Every request has come in (its head read); 36 wait their turn unread.
      while (arrived < 40) await new Promise((resolve) => setTimeout(resolve, 10));
      const healthz = await exchange(socket, { method: 'GET', path: '/v1/healthz', timeoutMs: 30_000 });
      assert.equal(healthz.status, 200);
      assert.equal(running, 4, 'four bodies handled at once');
      release();
      const done = await Promise.all(answers);
      assert.deepEqual(new Set(done.map((a) => a.status)), new Set([200]));
      assert.ok(
        done.every((a) => (JSON.parse(a.body) as { size: number }).size === body.length),
        'each body read whole in its turn',
      );
      assert.equal(most, 4, 'never more than four at once');
    });
  },
);

test('beyond the bodies waiting their turn, a request is answered 429 with Retry-After', async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started = 0;
  await withServer(
    { apply: async () => (started++, await released, { pods: [] }) },
    { bodiesInFlight: 1, bodiesQueued: 1 },
    async (socket, _dir, server) => {
      let arrived = 0;
      server.on('request', () => arrived++);
      const first = exchange(socket, { method: 'POST', path: '/v1/pods', body: '{}', timeoutMs: 60_000 });
      const second = exchange(socket, { method: 'POST', path: '/v1/pods', body: '{}', timeoutMs: 60_000 });
      while (arrived < 2 || started < 1) await new Promise((resolve) => setTimeout(resolve, 10));
      const third = await exchange(socket, { method: 'POST', path: '/v1/pods', body: '{}', timeoutMs: 60_000 });
      assert.equal(third.status, 429);
      assert.equal(third.headers['retry-after'], '1');
      assert.match((JSON.parse(third.body) as { message: string }).message, /too many requests/);
      release();
      assert.deepEqual([(await first).status, (await second).status], [200, 200]);
    },
  );
});

test('10 watchers that never read: the agent closes each past its bound, its RSS stays within 50 MB, and its log says so', async () => {
  const scratch = scratchDir('unit-watch-bound');
  const socket = join(scratch.dir, 'podctl.sock');
  const url = (path: string) => JSON.stringify(pathToFileURL(join(import.meta.dirname, path)).href);
  // The agent's side in a process of its own, so that its RSS is its own: a watch whose pod changes
  // 1000 times once 10 watchers are there, a 16 KiB status each time (160 MB unread, unbounded).
  const script = `
    const { startStatusServer } = await import(${url('../../src/core/api/server.js')});
    const { Metrics } = await import(${url('../../src/core/metrics.js')});
    const object = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default', uid: 'u1' }, status: { phase: 'Running', message: 'x'.repeat(16 << 10) } };
    const listeners = new Set();
    const pump = async () => {
      const baseline = process.memoryUsage.rss();
      let most = baseline;
      for (let i = 0; i < 1000; i++) {
        for (const l of [...listeners]) l({ type: 'MODIFIED', object });
        if (i % 10 === 0) {
          await new Promise((r) => setImmediate(r));
          most = Math.max(most, process.memoryUsage.rss());
        }
      }
      await new Promise((r) => setImmediate(r));
      process.send({ baseline, most: Math.max(most, process.memoryUsage.rss()), watching: listeners.size });
    };
    const server = await startStatusServer(${JSON.stringify(socket)}, {
      pods: () => [object],
      health: () => ({ ok: true, checks: [] }),
      metrics: new Metrics(),
      watchPods: (l) => {
        listeners.add(l);
        if (listeners.size === 10) setImmediate(pump);
        return () => listeners.delete(l);
      },
    }, { log: (m) => process.stderr.write(m + '\\n') });
    process.send({ listening: true });
    process.on('message', () => {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    });`;
  const agent = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let log = '';
  agent.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = once(agent, 'exit');
  const watchers: Socket[] = [];
  try {
    await once(agent, 'message');
    const reported = once(agent, 'message') as Promise<[{ baseline: number; most: number; watching: number }]>;
    for (let i = 0; i < 10; i++) {
      const w = connect(socket);
      w.on('error', () => undefined);
      w.write('GET /v1/pods?watch=1 HTTP/1.1\r\nHost: podctl\r\n\r\n');
      w.pause();
      watchers.push(w);
    }
    const [report] = await reported;
    assert.equal(report.watching, 0, `every watcher was closed (${report.watching} still watched)\n${log}`);
    const grew = report.most - report.baseline;
    assert.ok(grew < 50 << 20, `the agent's RSS grew ${(grew / (1 << 20)).toFixed(1)} MB`);
    // Read now, each watcher finds at most what was buffered for it, then the end.
    const received = await Promise.all(
      watchers.map(
        (w) =>
          new Promise<number>((resolve) => {
            let n = 0;
            w.on('data', (d: Buffer) => (n += d.length));
            w.on('close', () => resolve(n));
            w.resume();
          }),
      ),
    );
    for (const n of received) assert.ok(n < 4 << 20, `a watcher got ${n} bytes before it was closed`);
    agent.send('exit');
    await exited;
    const lines = log
      .split('\n')
      .filter((l) =>
        /^GET \/v1\/pods\?watch=1: closed a watcher that does not read its events \(\d+ bytes unread, over the bound of \d+ bytes\)/.test(
          l,
        ),
      );
    assert.equal(lines.length, 10, log);
  } finally {
    for (const w of watchers) w.destroy();
    if (agent.exitCode === null) agent.kill();
    scratch.cleanup();
  }
});
