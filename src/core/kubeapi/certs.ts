import { chmodSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { createPrivateKey, generateKeyPairSync, randomBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { join } from 'node:path';
import forge from 'node-forge';
import { PodctlError } from '../errors.js';

/**
 * The kube API's credentials, as kubeadm lays out a control plane's PKI: a CA, the API server's serving
 * certificate, the admin's client certificate (O system:masters) and a bearer token. node-forge writes the
 * certificates; node:crypto makes the keys (RSA: forge signs nothing else) and reads everything back.
 */

export interface KubeCredentialPaths {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  token: string;
}

export interface KubeCredentials {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  token: string;
  paths: KubeCredentialPaths;
}

export const CA_COMMON_NAME = 'podctl-ca';
export const SERVER_COMMON_NAME = 'podctl-apiserver';
export const ADMIN_USER = 'podctl-admin';
export const ADMIN_GROUP = 'system:masters';
/** What the serving certificate always names: the API listens on loopback. */
export const DEFAULT_HOSTS = ['localhost', '127.0.0.1', '::1'];

const DAY_MS = 86_400_000;
const CA_DAYS = 3650;
const LEAF_DAYS = 365;
/** kubeadm renews certificates this close to their expiry. */
const RENEW_BEFORE_MS = 30 * DAY_MS;
/** Certificates start a little in the past, for clients whose clock runs behind. */
const BACKDATE_MS = 5 * 60_000;
const RSA_BITS = 2048;
const KEY_MODE = 0o600;
const CERT_MODE = 0o644;

export function credentialPaths(dir: string): KubeCredentialPaths {
  return {
    dir,
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    serverCert: join(dir, 'apiserver.crt'),
    serverKey: join(dir, 'apiserver.key'),
    clientCert: join(dir, 'admin.crt'),
    clientKey: join(dir, 'admin.key'),
    token: join(dir, 'token'),
  };
}

/**
 * The credentials under `dir`, made at the first call. ca.crt is written last: without it, whatever else
 * is there is what a first start left when it stopped part way, never handed out, and is made anew. Later
 * calls read the set, and renew the serving certificate when it expires within 30 days, lacks a name now
 * asked for, or does not match its key (a stop between the two renames of a renewal); the admin's client
 * certificate likewise when it expires within 30 days or does not match its key. The CA and token stay, so
 * a kubeconfig made before keeps working until its own certificate expires.
 */
export function ensureKubeCredentials(dir: string, opts: { hosts?: string[]; now?: () => Date } = {}): KubeCredentials {
  const now = (opts.now ?? (() => new Date()))();
  const hosts = wantedHosts(opts.hosts ?? []);
  const paths = credentialPaths(dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  if (!existsSync(paths.caCert)) return createAll(paths, hosts, now);
  const read = readSet(paths);
  const issuer = { cert: read.creds.caCert, key: read.creds.caKey };
  let creds = read.creds;
  if (needsNewServerCert(read, hosts, now)) {
    const server = issue({ CN: SERVER_COMMON_NAME }, { kind: 'server', hosts, now, issuer });
    writeFileAtomic(paths.serverKey, server.key, KEY_MODE);
    writeFileAtomic(paths.serverCert, server.cert, CERT_MODE);
    creds = { ...creds, serverCert: server.cert, serverKey: server.key };
  }
  if (!read.client.checkPrivateKey(read.clientKey) || expiresSoon(read.client, now)) {
    const client = issue({ CN: ADMIN_USER, O: ADMIN_GROUP }, { kind: 'client', hosts: [], now, issuer });
    writeFileAtomic(paths.clientKey, client.key, KEY_MODE);
    writeFileAtomic(paths.clientCert, client.cert, CERT_MODE);
    creds = { ...creds, clientCert: client.cert, clientKey: client.key };
  }
  return creds;
}

/** The credentials the agent made under `dir`, never making any: for the commands that only hand them out. */
export function readKubeCredentials(dir: string): KubeCredentials {
  const paths = credentialPaths(dir);
  if (!existsSync(paths.caCert)) throw new PodctlError(`no kube API credentials under ${dir}: start the agent (podctl agent run) first`);
  const read = readSet(paths);
  // The agent renews a mismatched pair at its start; until then, it is not handed out.
  if (!read.client.checkPrivateKey(read.clientKey)) throw corrupt(paths.clientKey, `is not the key of ${paths.clientCert}`);
  return read.creds;
}

/** Writes through a temporary file in the same directory, synced, then renamed: a reader sees the old file or the new. */
export function writeFileAtomic(path: string, data: string, mode: number): void {
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w', mode);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  // The umask narrows the mode given to open: a certificate is meant to be world-readable.
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

function createAll(paths: KubeCredentialPaths, hosts: string[], now: Date): KubeCredentials {
  const ca = issue({ CN: CA_COMMON_NAME }, { kind: 'ca', hosts: [], now });
  const issuer = { cert: ca.cert, key: ca.key };
  const server = issue({ CN: SERVER_COMMON_NAME }, { kind: 'server', hosts, now, issuer });
  const client = issue({ CN: ADMIN_USER, O: ADMIN_GROUP }, { kind: 'client', hosts: [], now, issuer });
  const token = randomBytes(32).toString('base64url');
  writeFileAtomic(paths.caKey, ca.key, KEY_MODE);
  writeFileAtomic(paths.serverKey, server.key, KEY_MODE);
  writeFileAtomic(paths.serverCert, server.cert, CERT_MODE);
  writeFileAtomic(paths.clientKey, client.key, KEY_MODE);
  writeFileAtomic(paths.clientCert, client.cert, CERT_MODE);
  writeFileAtomic(paths.token, `${token}\n`, KEY_MODE);
  writeFileAtomic(paths.caCert, ca.cert, CERT_MODE);
  return {
    caCert: ca.cert,
    caKey: ca.key,
    serverCert: server.cert,
    serverKey: server.key,
    clientCert: client.cert,
    clientKey: client.key,
    token,
    paths,
  };
}

interface ReadSet {
  creds: KubeCredentials;
  ca: X509Certificate;
  server: X509Certificate;
  serverKey: KeyObject;
  client: X509Certificate;
  clientKey: KeyObject;
}

function readSet(paths: KubeCredentialPaths): ReadSet {
  const text = (path: string): string => {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw corrupt(path, `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
  };
  const cert = (path: string): [string, X509Certificate] => {
    const pem = text(path);
    try {
      return [pem, new X509Certificate(pem)];
    } catch {
      throw corrupt(path, 'is not a PEM certificate');
    }
  };
  const key = (path: string): [string, KeyObject] => {
    const pem = text(path);
    try {
      return [pem, createPrivateKey(pem)];
    } catch {
      throw corrupt(path, 'is not a PEM private key');
    }
  };
  const [caCert, ca] = cert(paths.caCert);
  const [caKey, caKeyObject] = key(paths.caKey);
  if (!ca.ca || !ca.checkPrivateKey(caKeyObject)) throw corrupt(paths.caKey, `is not the key of the CA in ${paths.caCert}`);
  const [clientCert, client] = cert(paths.clientCert);
  const [clientKey, clientKeyObject] = key(paths.clientKey);
  if (!issuedBy(client, ca)) throw corrupt(paths.clientCert, `was not issued by the CA in ${paths.caCert}`);
  const [serverCert, server] = cert(paths.serverCert);
  const [serverKey, serverKeyObject] = key(paths.serverKey);
  const token = text(paths.token).trim();
  if (!/^[A-Za-z0-9_-]{32,}$/.test(token)) throw corrupt(paths.token, 'does not hold a base64url token of at least 32 characters');
  return {
    creds: { caCert, caKey, serverCert, serverKey, clientCert, clientKey, token, paths },
    ca,
    server,
    serverKey: serverKeyObject,
    client,
    clientKey: clientKeyObject,
  };
}

function corrupt(path: string, what: string): PodctlError {
  return new PodctlError(`kube API credentials: ${path} ${what}`, {
    hint: 'move that directory aside and start the agent to make new ones (kubeconfigs made from the old ones stop working)',
  });
}

function issuedBy(cert: X509Certificate, ca: X509Certificate): boolean {
  return cert.checkIssued(ca) && cert.verify(ca.publicKey);
}

/** Not yet valid, or valid for less than RENEW_BEFORE_MS more. */
function expiresSoon(cert: X509Certificate, now: Date): boolean {
  return Date.parse(cert.validFrom) > now.getTime() || Date.parse(cert.validTo) - now.getTime() < RENEW_BEFORE_MS;
}

function needsNewServerCert(read: ReadSet, hosts: string[], now: Date): boolean {
  const { server, ca } = read;
  if (!issuedBy(server, ca) || !server.checkPrivateKey(read.serverKey)) return true;
  if (expiresSoon(server, now)) return true;
  return hosts.some((h) => (isIP(h) ? server.checkIP(h) : server.checkHost(h, { subject: 'never', wildcards: false })) === undefined);
}

function wantedHosts(extra: string[]): string[] {
  const hosts = [...DEFAULT_HOSTS];
  for (const raw of extra) {
    const h = raw.trim().toLowerCase();
    const dns = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/.test(h);
    if (!isIP(h) && !dns) throw new PodctlError(`kube API certificate host ${JSON.stringify(raw)}: expected a DNS name or an IP address`);
    if (!hosts.includes(h)) hosts.push(h);
  }
  return hosts;
}

interface IssueOpts {
  kind: 'ca' | 'server' | 'client';
  hosts: string[];
  now: Date;
  issuer?: { cert: string; key: string };
}

/** A new key and a certificate for it, self-signed for the CA, else signed by the issuer. */
function issue(subject: { CN: string; O?: string }, opts: IssueOpts): { cert: string; key: string } {
  const pair = generateKeyPairSync('rsa', {
    modulusLength: RSA_BITS,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(pair.publicKey);
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(opts.now.getTime() - BACKDATE_MS);
  cert.validity.notAfter = new Date(opts.now.getTime() + (opts.kind === 'ca' ? CA_DAYS : LEAF_DAYS) * DAY_MS);
  const attrs = [{ shortName: 'CN', value: subject.CN }, ...(subject.O ? [{ shortName: 'O', value: subject.O }] : [])];
  cert.setSubject(attrs);
  const issuerCert = opts.issuer ? forge.pki.certificateFromPem(opts.issuer.cert) : cert;
  const issuerKey = forge.pki.privateKeyFromPem(opts.issuer ? opts.issuer.key : pair.privateKey);
  cert.setIssuer(opts.issuer ? issuerCert.subject.attributes : attrs);
  const extensions: object[] =
    opts.kind === 'ca'
      ? [
          { name: 'basicConstraints', cA: true, critical: true },
          { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
          { name: 'subjectKeyIdentifier' },
        ]
      : [
          { name: 'basicConstraints', cA: false, critical: true },
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
          { name: 'extKeyUsage', serverAuth: opts.kind === 'server', clientAuth: opts.kind === 'client' },
          { name: 'authorityKeyIdentifier', keyIdentifier: issuerCert.generateSubjectKeyIdentifier().getBytes() },
        ];
  if (opts.kind === 'server')
    extensions.push({
      name: 'subjectAltName',
      altNames: opts.hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })),
    });
  cert.setExtensions(extensions);
  cert.sign(issuerKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: pair.privateKey };
}

/** 128 random bits as a positive DER integer with no leading zero byte. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x01;
  return bytes.toString('hex');
}
