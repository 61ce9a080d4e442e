import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { HttpSource, type SourceError } from '../../src/core/config/index.js';
import { fetchManifest } from '../../src/core/config/http-source.js';
import { LOOPBACK_CERT, LOOPBACK_KEY } from '../support/tls.js';

const POD = (name: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n`;

/** Two servers on 127.0.0.1: A (the manifest URL's origin) and B (another port, another origin). */
let a: Server;
let b: Server;
let aURL = '';
let bURL = '';
let handleA: (req: IncomingMessage, res: ServerResponse) => void = () => undefined;
const keysSeenByB: (string | undefined)[] = [];

const listen = async (s: Server) => {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
};

before(async () => {
  a = createServer((req, res) => handleA(req, res));
  b = createServer((req, res) => {
    keysSeenByB.push(req.headers['x-api-key'] as string | undefined);
    res.writeHead(200).end(POD('from-b'));
  });
  aURL = await listen(a);
  bURL = await listen(b);
});
after(() => {
  a.close();
  b.close();
});

test(
  'a redirect within the origin is followed with the headers; one to another port is refused and the headers ' + 'never go there',
  async () => {
    handleA = (req, res) => {
      if (req.url === '/pods.yaml') res.writeHead(302, { location: '/v2/pods.yaml' }).end();
      else if (req.url === '/v2/pods.yaml') res.writeHead(200).end(POD(req.headers['x-api-key'] === 'k' ? 'keyed' : 'unkeyed'));
      else res.writeHead(302, { location: `${bURL}/pods.yaml` }).end();
    };
    assert.match(await fetchManifest(`${aURL}/pods.yaml`, { headers: { 'X-Api-Key': 'k' } }), /name: keyed/);
    await assert.rejects(
      fetchManifest(`${aURL}/elsewhere.yaml`, { headers: { 'X-Api-Key': 'k' } }),
      /refusing the redirect to http:\/\/127\.0\.0\.1:\d+\/pods\.yaml: podctl follows redirects only within/,
    );
    assert.deepEqual(keysSeenByB, [], 'the other origin was never asked');
  },
);

test('a body over the limit is refused; the source keeps its last good pods and says why', async () => {
  let big = false;
  handleA = (_req, res) => {
    if (!big) return void res.writeHead(200).end(POD('small'));
    // Chunked, no content-length: the limit holds while reading.
    res.writeHead(200, { 'content-type': 'text/yaml' });
    const chunk = `# ${'x'.repeat(64 * 1024)}\n`;
    let sent = 0;
    const more = () => {
      while (sent < 200 && res.write(chunk)) sent++;
      if (sent < 200) res.once('drain', more);
      else res.end(POD('big'));
    };
    more();
  };
  const snapshots: IPod[][] = [];
  const errors: SourceError[] = [];
  const source = new HttpSource({
    url: `${aURL}/pods.yaml`,
    nodeName: 'n',
    clock: new FakeClock(),
    maxBytes: 1 << 20,
    onSnapshot: (p) => snapshots.push(p),
    onError: (e) => errors.push(e),
  });
  await source.poll();
  assert.deepEqual(
    snapshots.at(-1)!.map((p) => p.metadata!.name),
    ['small'],
  );
  big = true;
  await source.poll();
  assert.match(errors.at(-1)!.message, /over the limit of 1048576 bytes \(--manifest-url-max-size\).*keeping the last good pods/);
  assert.deepEqual(
    snapshots.at(-1)!.map((p) => p.metadata!.name),
    ['small'],
    'the last good pods stand',
  );
  source.stop();
});

test('over https, the certificates NODE_EXTRA_CA_CERTS names are trusted, by Node itself', async () => {
  const server = createHttpsServer({ key: LOOPBACK_KEY, cert: LOOPBACK_CERT }, (_req, res) => res.writeHead(200).end(POD('over-tls')));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/pods.yaml`;
  const dir = mkdtempSync(join(tmpdir(), 'podctl-ca-'));
  try {
    await assert.rejects(fetchManifest(url, {}), new RegExp(`^Error: ${url.replace(/[.?/]/g, '\\$&')}: self-signed certificate`));
    const file = join(dir, 'extra.pem');
    writeFileSync(file, LOOPBACK_CERT);
    // Node reads the variable as it starts: a process of its own, as podctl's is.
    const source = pathToFileURL(join(import.meta.dirname, '../../src/core/config/http-source.js')).href;
    const script = `import { fetchManifest } from ${JSON.stringify(source)}; process.stdout.write(await fetchManifest(${JSON.stringify(url)}, {}));`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: file } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    assert.equal(code, 0, stderr);
    assert.match(stdout, /name: over-tls/);
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a refused connection and a silent server are said as such', async () => {
  const closed = createServer();
  const port = Number(new URL(await listen(closed)).port);
  closed.close();
  await assert.rejects(
    fetchManifest(`http://127.0.0.1:${port}/pods.yaml`, {}),
    new RegExp(`^Error: http://127\\.0\\.0\\.1:${port}/pods\\.yaml: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`),
  );
  handleA = () => undefined; // never answers
  await assert.rejects(fetchManifest(`${aURL}/pods.yaml`, { timeoutMs: 200 }), /pods\.yaml: no answer within 0\.2 s$/);
});
