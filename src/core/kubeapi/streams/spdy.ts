import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { KubeStatusError } from '../status.js';
import { spdySession, SPDY_UPGRADE, STREAM_PROTOCOL_HEADER, type SpdyConnection } from '../../exec/spdy.js';

export type { SpdyConnection, SpdyStream } from '../../exec/spdy.js';
export { STREAM_PROTOCOL_HEADER } from '../../exec/spdy.js';

/** The remote-command protocols served over SPDY, best first (the kubelet's; v5 is WebSocket-only in effect). */
export const REMOTECOMMAND_SPDY_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];
export const PORTFORWARD_SPDY_PROTOCOLS = ['portforward.k8s.io'];

const tokens = (value: string | string[] | undefined): string[] =>
  (Array.isArray(value) ? value : [value ?? ''])
    .flatMap((v) => v.split(','))
    .map((t) => t.trim())
    .filter(Boolean);

/** An HTTP/1.1 upgrade to SPDY/3.1 (`Connection: Upgrade`, `Upgrade: SPDY/3.1`). */
export function isSpdyUpgrade(req: IncomingMessage): boolean {
  return (
    tokens(req.headers.connection).some((t) => t.toLowerCase() === 'upgrade') &&
    tokens(req.headers.upgrade).some((t) => t.toLowerCase() === SPDY_UPGRADE.toLowerCase())
  );
}

/** The first of the client's X-Stream-Protocol-Version values that the server speaks (httpstream.Handshake's choice). */
export function negotiateStreamProtocol(req: IncomingMessage, supported: readonly string[]): string | undefined {
  return tokens(req.headers[STREAM_PROTOCOL_HEADER.toLowerCase()]).find((p) => supported.includes(p));
}

/** Writes a plain HTTP answer on a socket not yet upgraded, and closes it. */
export function writeHttpError(
  socket: Duplex,
  code: number,
  reason: string,
  body: string,
  headers: Record<string, string | string[]> = {},
): void {
  const lines = [`HTTP/1.1 ${code} ${reason}`, 'Content-Type: text/plain; charset=utf-8', `Content-Length: ${Buffer.byteLength(body)}`];
  for (const [k, v] of Object.entries(headers)) for (const value of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${value}`);
  lines.push('Connection: close');
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

export type SpdyAccept = { ok: true; protocol: string } | { ok: false; message: string };

/**
 * The kubelet's SPDY handshake: the protocol negotiated from the client's X-Stream-Protocol-Version
 * values (none in common: 403 naming both lists, with X-Accepted-Stream-Protocol-Versions), then
 * the 101 to SPDY/3.1 naming the chosen one. The socket is then the SPDY session's.
 */
export function acceptSpdy(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  supported: readonly string[],
): { session: SpdyConnection; protocol: string } | undefined {
  const offered = tokens(req.headers[STREAM_PROTOCOL_HEADER.toLowerCase()]);
  if (offered.length === 0) {
    writeHttpError(socket, 400, 'Bad Request', `unable to upgrade: ${STREAM_PROTOCOL_HEADER} is required`);
    return undefined;
  }
  const protocol = offered.find((p) => supported.includes(p));
  if (!protocol) {
    const message =
      'unable to upgrade: unable to negotiate protocol: ' +
      `client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]`;
    writeHttpError(socket, 403, 'Forbidden', message, { 'X-Accepted-Stream-Protocol-Versions': [...supported] });
    return undefined;
  }
  socket.write(
    [
      'HTTP/1.1 101 Switching Protocols',
      'Connection: Upgrade',
      `Upgrade: ${SPDY_UPGRADE}`,
      `${STREAM_PROTOCOL_HEADER}: ${protocol}`,
      '',
      '',
    ].join('\r\n'),
  );
  if (head.length) socket.unshift(head);
  return { session: spdySession(socket, true), protocol };
}

/** Writes a metav1.Status as the HTTP answer on a socket not yet upgraded, and closes it. */
export function writeSocketStatus(socket: Duplex, err: KubeStatusError): void {
  const body = JSON.stringify(err.toStatus());
  const lines = [
    `HTTP/1.1 ${err.code} ${STATUS_CODES[err.code] ?? ''}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  if (socket.writable) socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  else socket.destroy();
}
