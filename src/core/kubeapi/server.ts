import type { KubeUser } from './auth.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SecureContextOptions, TlsOptions } from 'node:tls';
import { KubeStatusError } from './status.js';

export type { KubeUser };

/** One request as the routes see it: its path split the API server's way, its query, its user. */
export interface KubeRequest {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  user: KubeUser;
}

/** What answers the requests once they are authenticated (KubeRoutes in routes.ts). */
export interface KubeHandler {
  handle(r: KubeRequest): Promise<void> | void;
  /** An upgrade (exec, attach, port-forward), authenticated; the handler answers on the socket. */
  upgrade?(r: Omit<KubeRequest, 'res'> & { socket: Duplex; head: Buffer }): Promise<void> | void;
}

export interface KubeApiServerOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  tls: TlsOptions & SecureContextOptions;
  authenticate: (req: IncomingMessage) => KubeUser | undefined;
  handler: KubeHandler;
  log?: (message: string) => void;
}

export interface KubeApiServer {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** A Status as the body of an answer, with its code; a response already under way is ended. */
export function sendStatus(res: ServerResponse, err: unknown): void {
  const status =
    err instanceof KubeStatusError
      ? err
      : new KubeStatusError(500, 'InternalError', `Internal error occurred: ${err instanceof Error ? err.message : String(err)}`);
  if (res.headersSent) return void res.end();
  sendJSON(res, status.code, status.toStatus());
}

export function sendJSON(res: ServerResponse, code: number, body: unknown, contentType = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) }).end(text);
}

const UNAUTHORIZED = new KubeStatusError(401, 'Unauthorized', 'Unauthorized');

/** Writes a Status on a raw socket (an upgrade refused), then closes it. */
export function socketStatus(socket: Duplex, err: unknown): void {
  const status = err instanceof KubeStatusError ? err : new KubeStatusError(500, 'InternalError', String(err));
  const body = JSON.stringify(status.toStatus());
  const text = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found' }[status.code] ?? 'Error';
  if (!socket.writable) return void socket.destroy();
  socket.end(
    `HTTP/1.1 ${status.code} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

/**
 * The node's Kubernetes API over TLS: every request authenticated first (a client certificate our CA
 * signed, or the bearer token), anything else answered 401 before a route sees it, upgrades included.
 */
export async function startKubeApiServer(opts: KubeApiServerOptions): Promise<KubeApiServer> {
  const server = createServer({ ...opts.tls }, (req, res) => {
    const user = opts.authenticate(req);
    if (!user) return sendStatus(res, UNAUTHORIZED);
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'https://podctl');
    } catch {
      return sendStatus(res, new KubeStatusError(400, 'BadRequest', `bad request path: ${JSON.stringify(req.url)}`));
    }
    Promise.resolve()
      .then(() => opts.handler.handle({ req, res, url, user }))
      .catch((err: unknown) => {
        if (!(err instanceof KubeStatusError))
          opts.log?.(`kube API: ${req.method} ${url.pathname}: ${(err as Error)?.stack ?? String(err)}`);
        sendStatus(res, err);
      });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const user = opts.authenticate(req);
    if (!user) return socketStatus(socket, UNAUTHORIZED);
    if (!opts.handler.upgrade) return socketStatus(socket, new KubeStatusError(400, 'BadRequest', 'upgrade not supported'));
    const url = new URL(req.url ?? '/', 'https://podctl');
    Promise.resolve()
      .then(() => opts.handler.upgrade!({ req, url, user, socket, head }))
      .catch((err: unknown) => socketStatus(socket, err));
  });
  server.on('tlsClientError', (err) => opts.log?.(`kube API: TLS: ${err.message}`));
  server.headersTimeout = 10_000;
  // Watches and follows are long: only the headers are bounded.
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new PortTakenError(opts.host, opts.port));
      else reject(err);
    });
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    server,
    url: `https://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The port asked for is another process's. */
export class PortTakenError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    super(`the Kubernetes API cannot listen on ${host}:${port}: the address is in use by another process`);
  }
}
