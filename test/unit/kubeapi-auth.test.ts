import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authenticate, tlsServerOptions, unauthorizedStatus } from '../../src/core/kubeapi/auth.js';
import { ensureKubeCredentials, type KubeCredentials } from '../../src/core/kubeapi/certs.js';

let root: string;
let ours: KubeCredentials;
let other: KubeCredentials;
let server: Server;
let port: number;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'podctl-kubeapi-auth-'));
  ours = ensureKubeCredentials(join(root, 'ours'));
  other = ensureKubeCredentials(join(root, 'other'));
  // What the lead's server does with these: 401 and the Status for an unauthenticated request.
  server = createServer(tlsServerOptions(ours), (req, res) => {
    const who = authenticate(req, ours);
    res.writeHead(who ? 200 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify(who ?? unauthorizedStatus()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(root, { recursive: true, force: true });
});

function get(opts: { cert?: string; key?: string; token?: string }): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/api',
        ca: ours.caCert,
        cert: opts.cert,
        key: opts.key,
        headers: opts.token === undefined ? {} : { authorization: `Bearer ${opts.token}` },
        // One connection per request: a pooled one would carry another test's certificate.
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const admin = { user: 'podctl-admin', groups: ['system:masters'] };

test('tlsServerOptions: our key pair and CA, a client certificate asked for but not required, TLS 1.2 at least', () => {
  assert.deepEqual(tlsServerOptions(ours), {
    key: ours.serverKey,
    cert: ours.serverCert,
    ca: ours.caCert,
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2',
  });
});

test('a client certificate of our CA is its CN, in the groups of its O', async () => {
  assert.deepEqual(await get({ cert: ours.clientCert, key: ours.clientKey }), { status: 200, body: admin });
});

test('our bearer token is podctl-admin, in system:masters', async () => {
  assert.deepEqual(await get({ token: ours.token }), { status: 200, body: admin });
});

test('no credentials, a wrong token, or a certificate of another CA: 401 with the Unauthorized Status', async () => {
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Unauthorized',
    reason: 'Unauthorized',
    code: 401,
  };
  assert.deepEqual(unauthorizedStatus(), status);
  assert.deepEqual(await get({}), { status: 401, body: status });
  assert.deepEqual(await get({ token: other.token }), { status: 401, body: status });
  assert.deepEqual(await get({ token: `${ours.token}x` }), { status: 401, body: status });
  assert.deepEqual(await get({ token: '' }), { status: 401, body: status });
  assert.deepEqual(await get({ cert: other.clientCert, key: other.clientKey }), { status: 401, body: status });
});

test('a certificate of our CA that is not for client authentication (the serving one) is no identity', async () => {
  assert.equal((await get({ cert: ours.serverCert, key: ours.serverKey })).status, 401);
});

test('a certificate of another CA does not hide a good bearer token, as the API server tries each authenticator', async () => {
  assert.deepEqual(await get({ cert: other.clientCert, key: other.clientKey, token: ours.token }), { status: 200, body: admin });
});

test('a request over a plain socket has no certificate identity', () => {
  const req = { socket: {}, headers: {} } as unknown as IncomingMessage;
  assert.equal(authenticate(req, ours), undefined);
  const bearer = { socket: {}, headers: { authorization: `Bearer ${ours.token}` } } as unknown as IncomingMessage;
  assert.deepEqual(authenticate(bearer, ours), admin);
});
