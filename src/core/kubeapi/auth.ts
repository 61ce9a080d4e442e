import { timingSafeEqual, X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { ADMIN_GROUP, ADMIN_USER, type KubeCredentials } from './certs.js';

/** Who sent a request, as the API server's authenticators name a user. */
export interface KubeUser {
  user: string;
  groups: string[];
}

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';

/**
 * The API server's union of authenticators, in its order: a client certificate the TLS layer verified against
 * our CA (user its CN, groups its O's), else a bearer token equal to ours. Anything else is undefined: a 401.
 */
export function authenticate(req: IncomingMessage, creds: Pick<KubeCredentials, 'token'>): KubeUser | undefined {
  return fromClientCert(req.socket as TLSSocket) ?? fromBearer(req.headers.authorization, creds.token);
}

/** The Status kube-apiserver answers an unauthenticated request with. */
export function unauthorizedStatus(): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 };
}

/**
 * The HTTPS server's TLS options. A client certificate is asked for but not required, as kube-apiserver does:
 * a bearer-token client without one still connects, and a certificate that does not verify gets a 401 Status
 * rather than a TLS alert.
 */
export function tlsServerOptions(creds: Pick<KubeCredentials, 'serverKey' | 'serverCert' | 'caCert'>): {
  key: string;
  cert: string;
  ca: string;
  requestCert: true;
  rejectUnauthorized: false;
  minVersion: 'TLSv1.2';
} {
  return {
    key: creds.serverKey,
    cert: creds.serverCert,
    ca: creds.caCert,
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2',
  };
}

function fromClientCert(socket: TLSSocket): KubeUser | undefined {
  // A plain socket (no TLS) has neither; an unverified certificate (another CA, expired) is no identity.
  if (typeof socket.getPeerCertificate !== 'function' || socket.authorized !== true) return undefined;
  const peer = socket.getPeerCertificate();
  if (!peer || !peer.raw) return undefined;
  // As the API server's x509 authenticator: a certificate must be meant for client authentication.
  const usages = new X509Certificate(peer.raw).keyUsage;
  if (usages !== undefined && !usages.includes(CLIENT_AUTH_OID)) return undefined;
  const cn = values(peer.subject?.CN);
  if (cn.length !== 1 || cn[0] === '') return undefined;
  return { user: cn[0], groups: values(peer.subject?.O) };
}

function fromBearer(header: string | undefined, token: string): KubeUser | undefined {
  const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!m || !token) return undefined;
  const given = Buffer.from(m[1]);
  const want = Buffer.from(token);
  if (given.length !== want.length || !timingSafeEqual(given, want)) return undefined;
  return { user: ADMIN_USER, groups: [ADMIN_GROUP] };
}

/** A subject attribute as node gives it: absent, one string, or an array when the name holds it more than once. */
function values(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}
