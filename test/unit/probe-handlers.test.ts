import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { FakeClock, realClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { decodeHealthResponse, runHandler, type HandlerContext } from '../../src/core/prober/handlers.js';
import { container } from '../support/builders.js';

const listen = (server: Server | ReturnType<typeof createTcpServer>): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

/** Resolves once the listener is closed (close's callback also waits for the connections it accepted). */
const closed = (server: ReturnType<typeof createTcpServer>): Promise<void> =>
  new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));

describe('probe and hook handlers', () => {
  let http: Server;
  let httpPort: number;
  let seen: { path: string; headers: IncomingHttpHeaders }[] = [];
  let ctx: HandlerContext;
  let fake: FakeRuntime;
  let client: CriClient;

  before(async () => {
    http = createServer((req, res) => {
      seen.push({ path: req.url ?? '', headers: req.headers });
      const url = req.url ?? '/';
      if (url === '/ok') res.writeHead(200).end('fine');
      else if (url === '/fail') res.writeHead(500).end('broken');
      else if (url === '/moved') res.writeHead(302, { location: '/ok' }).end();
      else if (url === '/away') res.writeHead(302, { location: 'http://127.0.0.2:1/elsewhere' }).end('bye');
      else if (url === '/loop') res.writeHead(302, { location: '/loop' }).end();
      else res.writeHead(404).end();
    });
    httpPort = await listen(http);
    fake = await FakeRuntime.start({ clock: realClock, images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
    ctx = {
      runtime: client,
      clock: realClock,
      containerId: 'none',
      container: container('app', { ports: [{ name: 'web', containerPort: httpPort }] }),
      podIP: '127.0.0.1',
      timeoutSeconds: 2,
    };
  });
  after(async () => {
    http.close();
    client.close();
    await fake.stop();
  });

  test('httpGet: 2xx succeeds, 5xx fails with the status code; path, named port and headers are used', async () => {
    seen = [];
    const ok = await runHandler({ httpGet: { path: '/ok', port: 'web', httpHeaders: [{ name: 'X-Probe', value: 'yes' }] } }, ctx);
    assert.deepEqual(ok, { result: 'success', output: 'fine' });
    assert.equal(seen[0]!.path, '/ok');
    assert.equal(seen[0]!.headers['x-probe'], 'yes');
    assert.match(String(seen[0]!.headers['user-agent']), /probe/);
    const bad = await runHandler({ httpGet: { path: '/fail', port: httpPort } }, ctx);
    assert.deepEqual(bad, { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
  });

  test('httpGet: a redirect on the same host is followed; one to another host ends with a warning; a loop ends', async () => {
    seen = [];
    assert.equal((await runHandler({ httpGet: { path: '/moved', port: httpPort } }, ctx)).result, 'success');
    assert.deepEqual(
      seen.map((s) => s.path),
      ['/moved', '/ok'],
    );
    const away = await runHandler({ httpGet: { path: '/away', port: httpPort } }, ctx);
    assert.equal(away.result, 'warning');
    assert.match(away.output, /^Probe terminated redirects, Response body: bye/);
    assert.equal((await runHandler({ httpGet: { path: '/loop', port: httpPort } }, ctx)).result, 'warning');
  });

  test('httpGet: a refused connection fails naming the URL', async () => {
    const server = createTcpServer();
    const port = await listen(server);
    await closed(server);
    const r = await runHandler({ httpGet: { path: '/x', port } }, ctx);
    assert.equal(r.result, 'failure');
    assert.match(r.output, new RegExp(`^Get "http://127.0.0.1:${port}/x": .*ECONNREFUSED`));
  });

  test('a port name the container does not declare is an error naming it', async () => {
    await assert.rejects(
      runHandler({ httpGet: { path: '/', port: 'nope' } }, ctx),
      /port "nope" .* no port of container app has that name/,
    );
  });

  test('tcpSocket: an open port succeeds, a closed one fails with connection refused', async () => {
    const accepted = new Set<Socket>();
    const server = createTcpServer((s) => {
      accepted.add(s);
      s.on('close', () => accepted.delete(s));
      s.end();
    });
    const port = await listen(server);
    assert.equal((await runHandler({ tcpSocket: { port } }, ctx)).result, 'success');
    // The probe's connection, if not yet gone, would keep close() from calling back.
    for (const s of accepted) s.destroy();
    await closed(server);
    const r = await runHandler({ tcpSocket: { port } }, ctx);
    assert.deepEqual(r, { result: 'failure', output: `dial tcp 127.0.0.1:${port}: connect: connection refused` });
  });

  test('grpc: the standard health service; SERVING succeeds, NOT_SERVING fails naming the status, service name sent', async () => {
    const server = new grpc.Server();
    let status = 1;
    const services: string[] = [];
    server.addService(
      {
        Check: {
          path: '/grpc.health.v1.Health/Check',
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (s: number) => Buffer.from([0x08, s]),
          responseDeserialize: (b: Buffer) => decodeHealthResponse(b),
        },
      },
      {
        Check: (call: grpc.ServerUnaryCall<Buffer, number>, cb: grpc.sendUnaryData<number>) => {
          // HealthCheckRequest: field 1 (service) as tag 0x0a, length, bytes.
          services.push(call.request.length ? call.request.subarray(2).toString() : '');
          cb(null, status);
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    try {
      assert.equal((await runHandler({ grpc: { port, service: 'db' } }, ctx)).result, 'success');
      status = 2;
      assert.deepEqual(await runHandler({ grpc: { port } }, ctx), {
        result: 'failure',
        output: 'service unhealthy (responded with "NOT_SERVING")',
      });
      assert.deepEqual(services, ['db', '']);
    } finally {
      server.forceShutdown();
    }
    const down = await runHandler({ grpc: { port } }, { ...ctx, timeoutSeconds: 1 });
    assert.equal(down.result, 'failure');
  });

  test('exec: exit 0 succeeds, non-zero fails with the output; runs in the named container', async () => {
    const calls: string[] = [];
    fake.setExecHandler(({ containerId, cmd }) => {
      calls.push(`${containerId}:${cmd.join(' ')}`);
      return cmd[0] === 'check' ? { exitCode: 2, stdout: 'not yet\n' } : undefined;
    });
    const sb = await client.runPodSandbox({ metadata: { name: 'p', namespace: 'n', uid: 'u', attempt: 0 } });
    const id = await client.createContainer(
      sb,
      { metadata: { name: 'app' }, image: { image: 'busybox:1.36' }, command: ['sleep', '3600'] },
      { metadata: { name: 'p', namespace: 'n', uid: 'u' } },
    );
    await client.startContainer(id);
    assert.equal((await runHandler({ exec: { command: ['true'] } }, { ...ctx, containerId: id })).result, 'success');
    assert.deepEqual(await runHandler({ exec: { command: ['check'] } }, { ...ctx, containerId: id }), {
      result: 'failure',
      output: 'not yet',
    });
    assert.deepEqual(calls, [`${id}:true`, `${id}:check`]);
    fake.setExecHandler(undefined);
  });

  test('sleep waits its seconds on the injected clock', async () => {
    const clock = new FakeClock();
    let done = false;
    const run = runHandler({ sleep: { seconds: 3 } }, { ...ctx, clock }).then((r) => ((done = true), r));
    clock.advance(2999);
    await new Promise((r) => setImmediate(r));
    assert.equal(done, false, 'still sleeping at 2.999 s');
    clock.advance(1);
    assert.equal((await run).result, 'success');
  });
});
