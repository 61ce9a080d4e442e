import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentialPaths, ensureKubeCredentials, readKubeCredentials } from '../../src/core/kubeapi/certs.js';

const DAY = 86_400_000;
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

function tmp(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-kubeapi-certs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'kubeapi');
}

const mode = (path: string): number => statSync(path).mode & 0o777;
const at = (ms: number) => () => new Date(ms);

test('the first call makes the CA, the serving and client certificates and the token, with their modes; later calls read them', (t) => {
  const dir = tmp(t);
  const creds = ensureKubeCredentials(dir);
  const p = creds.paths;
  assert.deepEqual(p, credentialPaths(dir));
  assert.equal(mode(dir), 0o700);
  for (const key of [p.caKey, p.serverKey, p.clientKey, p.token]) assert.equal(mode(key), 0o600, key);
  for (const cert of [p.caCert, p.serverCert, p.clientCert]) assert.equal(mode(cert), 0o644, cert);
  assert.equal(readFileSync(p.caCert, 'utf8'), creds.caCert);
  assert.equal(readFileSync(p.serverKey, 'utf8'), creds.serverKey);
  assert.equal(readFileSync(p.token, 'utf8').trim(), creds.token);
  assert.match(creds.token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(Buffer.from(creds.token, 'base64url').length, 32);
  const mtime = statSync(p.serverCert).mtimeMs;
  assert.deepEqual(ensureKubeCredentials(dir), creds);
  assert.deepEqual(readKubeCredentials(dir), creds);
  assert.equal(statSync(p.serverCert).mtimeMs, mtime);
});

test('the certificates: a CA for 10 years, a serving certificate for loopback and a client certificate in system:masters', (t) => {
  const now = Date.now();
  const creds = ensureKubeCredentials(tmp(t), { hosts: ['podctl.example', '10.0.0.7'], now: at(now) });
  const ca = new X509Certificate(creds.caCert);
  assert.equal(ca.ca, true);
  assert.equal(ca.subject, 'CN=podctl-ca');
  assert.ok(ca.checkIssued(ca) && ca.verify(ca.publicKey));
  assert.ok(Date.parse(ca.validTo) - now > 3649 * DAY);

  const server = new X509Certificate(creds.serverCert);
  assert.equal(server.ca, false);
  assert.equal(server.subject, 'CN=podctl-apiserver');
  assert.ok(server.checkIssued(ca) && server.verify(ca.publicKey));
  assert.ok(server.checkPrivateKey(createPrivateKey(creds.serverKey)));
  for (const ip of ['127.0.0.1', '::1', '10.0.0.7']) assert.equal(server.checkIP(ip), ip);
  for (const host of ['localhost', 'podctl.example']) assert.equal(server.checkHost(host, { subject: 'never' }), host);
  assert.equal(server.checkIP('192.168.1.1'), undefined);
  assert.deepEqual(server.keyUsage, [SERVER_AUTH]);
  const serverDays = (Date.parse(server.validTo) - now) / DAY;
  assert.ok(serverDays > 364 && serverDays <= 365, String(serverDays));
  assert.ok(Date.parse(server.validFrom) <= now);

  const client = new X509Certificate(creds.clientCert);
  assert.equal(client.subject, 'CN=podctl-admin\nO=system:masters');
  assert.ok(client.checkIssued(ca) && client.verify(ca.publicKey));
  assert.deepEqual(client.keyUsage, [CLIENT_AUTH]);
  assert.notEqual(client.serialNumber, server.serialNumber);
});

test('expired serving and client certificates are renewed by the same CA; the CA and the token stay', (t) => {
  const dir = tmp(t);
  const old = ensureKubeCredentials(dir, { now: at(Date.now() - 400 * DAY) });
  const renewed = ensureKubeCredentials(dir);
  assert.notEqual(renewed.serverCert, old.serverCert);
  assert.notEqual(renewed.serverKey, old.serverKey);
  assert.notEqual(renewed.clientCert, old.clientCert);
  assert.notEqual(renewed.clientKey, old.clientKey);
  assert.deepEqual([renewed.caCert, renewed.caKey, renewed.token], [old.caCert, old.caKey, old.token]);
  const ca = new X509Certificate(old.caCert);
  for (const [path, keyPath] of [
    [renewed.paths.serverCert, renewed.paths.serverKey],
    [renewed.paths.clientCert, renewed.paths.clientKey],
  ] as const) {
    const cert = new X509Certificate(readFileSync(path, 'utf8'));
    assert.ok(cert.checkIssued(ca) && cert.verify(ca.publicKey), `${path} issued by the CA`);
    assert.ok(Date.parse(cert.validTo) > Date.now() + 360 * DAY);
    assert.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(keyPath, 'utf8'))), `${keyPath} is its key`);
    assert.equal(mode(keyPath), 0o600);
    assert.equal(mode(path), 0o644);
  }
  const client = new X509Certificate(renewed.clientCert);
  assert.equal(client.subject, new X509Certificate(old.clientCert).subject, 'the same user and group');
  assert.deepEqual(readKubeCredentials(dir), renewed);
});

test('a client certificate within 30 days of expiry is renewed; once renewed, it is kept', (t) => {
  const dir = tmp(t);
  const old = ensureKubeCredentials(dir, { now: at(Date.now() - 340 * DAY) });
  const near = ensureKubeCredentials(dir);
  assert.notEqual(near.clientCert, old.clientCert);
  assert.equal(near.caCert, old.caCert);
  assert.equal(ensureKubeCredentials(dir).clientCert, near.clientCert, 'kept once renewed');
});

test('a client key that is not its certificate’s: readKubeCredentials names it; the agent’s start renews both', (t) => {
  const dir = tmp(t);
  const creds = ensureKubeCredentials(dir);
  copyFileSync(creds.paths.serverKey, creds.paths.clientKey);
  assert.throws(
    () => readKubeCredentials(dir),
    (err: Error) => err.message.includes(`${creds.paths.clientKey} is not the key of ${creds.paths.clientCert}`),
  );
  const again = ensureKubeCredentials(dir);
  assert.ok(new X509Certificate(again.clientCert).checkPrivateKey(createPrivateKey(again.clientKey)));
  assert.equal(again.caCert, creds.caCert);
  assert.deepEqual(readKubeCredentials(dir), again);
});

test('a serving certificate within 30 days of expiry, or without a name now asked for, is renewed; otherwise kept', (t) => {
  const dir = tmp(t);
  const old = ensureKubeCredentials(dir, { now: at(Date.now() - 340 * DAY) });
  const near = ensureKubeCredentials(dir);
  assert.notEqual(near.serverCert, old.serverCert);
  assert.equal(near.caCert, old.caCert);
  assert.equal(ensureKubeCredentials(dir).serverCert, near.serverCert);
  const wider = ensureKubeCredentials(dir, { hosts: ['::2'] });
  assert.notEqual(wider.serverCert, near.serverCert);
  assert.equal(new X509Certificate(wider.serverCert).checkIP('::2'), '::2');
  // Asking for fewer names than it has is no reason to renew.
  assert.equal(ensureKubeCredentials(dir).serverCert, wider.serverCert);
});

test('a serving key that is not its certificate’s (a stop between the two renames of a renewal) has both renewed', (t) => {
  const dir = tmp(t);
  const creds = ensureKubeCredentials(dir);
  copyFileSync(creds.paths.clientKey, creds.paths.serverKey);
  const again = ensureKubeCredentials(dir);
  assert.ok(new X509Certificate(again.serverCert).checkPrivateKey(createPrivateKey(again.serverKey)));
  assert.equal(again.caCert, creds.caCert);
});

test('files left by a first start that stopped before ca.crt are made anew', (t) => {
  const dir = tmp(t);
  const first = ensureKubeCredentials(dir);
  unlinkSync(first.paths.caCert);
  assert.throws(() => readKubeCredentials(dir), /no kube API credentials under .*: start the agent \(podctl agent run\) first/);
  const fresh = ensureKubeCredentials(dir);
  assert.notEqual(fresh.caCert, first.caCert);
  assert.notEqual(fresh.token, first.token);
  assert.deepEqual(readKubeCredentials(dir), fresh);
});

test('a corrupt or missing file of a set is an error naming it, and nothing is rewritten', (t) => {
  const dir = tmp(t);
  const creds = ensureKubeCredentials(dir);
  writeFileSync(creds.paths.clientCert, 'not a certificate\n');
  const caBefore = readFileSync(creds.paths.caCert, 'utf8');
  assert.throws(
    () => ensureKubeCredentials(dir),
    (err: Error) => err.message.includes(`${creds.paths.clientCert} is not a PEM certificate`),
  );
  assert.throws(
    () => readKubeCredentials(dir),
    (err: Error) => err.message.includes(creds.paths.clientCert),
  );
  assert.equal(readFileSync(creds.paths.caCert, 'utf8'), caBefore);
  writeFileSync(creds.paths.clientCert, creds.clientCert);
  unlinkSync(creds.paths.token);
  assert.throws(
    () => ensureKubeCredentials(dir),
    (err: Error) => err.message.includes(`${creds.paths.token} cannot be read (ENOENT)`),
  );
  writeFileSync(creds.paths.token, 'short\n');
  assert.throws(
    () => ensureKubeCredentials(dir),
    (err: Error) => err.message.includes(`${creds.paths.token} does not hold`),
  );
  writeFileSync(creds.paths.token, `${creds.token}\n`);
  copyFileSync(creds.paths.serverKey, creds.paths.caKey);
  assert.throws(
    () => ensureKubeCredentials(dir),
    (err: Error) => err.message.includes(`${creds.paths.caKey} is not the key of the CA`),
  );
});

test('a host that is neither a DNS name nor an IP address is refused before anything is made', (t) => {
  const dir = tmp(t);
  assert.throws(() => ensureKubeCredentials(dir, { hosts: ['bad host!'] }), /"bad host!": expected a DNS name or an IP address/);
  assert.equal(existsSync(dir), false);
});
