import type * as Http from 'node:http';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';

let http: typeof Http | undefined;
/**
 * http.request, with node:http loaded by the first request: a command that finds no agent socket
 * (plan, get with no agent) loads none of http's modules.
 */
export const request = (options: Http.RequestOptions, callback: (res: Http.IncomingMessage) => void): Http.ClientRequest =>
  (http ??= createRequire(import.meta.url)('node:http') as typeof Http).request(options, callback);

/**
 * A request's own connection to a unix socket, without http's Agent: the Agent
 * asks net.isIP of the host name, and the first call compiles Node's IPv6
 * pattern, several ms of a CLI command's start for nothing on a socket.
 * Without an Agent the request says Connection: close, and the socket ends with the answer.
 */
export const unixSocket = (path: string) => ({ socketPath: path, createConnection: () => connect(path) });

/** An answer read whole: status, headers (names in lower case) and body. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A socket's error as connect gives it: said at once when there is no socket, without connecting. */
const noSocket = (socket: string): Error =>
  Object.assign(new Error(`connect ENOENT ${socket}`), { code: 'ENOENT', syscall: 'connect', address: socket });

/**
 * One request on its own connection to a unix socket (the agent's), its answer read whole, on
 * node:http. A stream that never ends (a watch) goes through request(). Rejects with connect's
 * error when nothing listens there, with timeoutMessage when the socket is idle for timeoutMs, and
 * naming the socket when the answer is cut short or is not HTTP.
 */
export function exchange(
  socket: string,
  req: { method: string; path: string; body?: string; timeoutMs: number; timeoutMessage?: string },
): Promise<Answer> {
  if (!existsSync(socket)) return Promise.reject(noSocket(socket));
  return new Promise((resolve, reject) => {
    let settled = false;
    let answered = false;
    const settle = (err: Error | undefined, answer?: Answer) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve(answer!);
      r.destroy();
    };
    // A connection that broke off, or bytes that are no HTTP answer: said with the socket they came from.
    const broken = (err: NodeJS.ErrnoException): Error => {
      if (err.code?.startsWith('HPE_')) return new Error(`${socket}: not an HTTP answer (${err.message})`);
      if (err.code === 'ECONNRESET')
        return new Error(
          `${socket}: ${answered ? 'the connection closed before the end of the answer' : 'the connection closed without an answer'}`,
        );
      return err;
    };
    const body = req.body === undefined ? undefined : Buffer.from(req.body);
    const headers: Record<string, string | number> = {};
    if (body) Object.assign(headers, { 'content-type': 'application/json', 'content-length': body.length });
    else if (req.method !== 'GET' && req.method !== 'HEAD') headers['content-length'] = 0;
    const r = request({ ...unixSocket(socket), method: req.method, path: req.path, headers }, (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        const flat: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers))
          if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
        // Decoded once whole: a character may span two pieces.
        settle(undefined, { status: res.statusCode ?? 0, headers: flat, body: Buffer.concat(parts).toString('utf8') });
      });
      res.on('error', (err) => settle(broken(err)));
      res.on('close', () => {
        if (!res.complete) settle(new Error(`${socket}: the connection closed before the end of the answer`));
      });
    });
    r.setTimeout(req.timeoutMs, () => settle(new Error(req.timeoutMessage ?? `${socket}: no answer within ${req.timeoutMs} ms`)));
    r.on('error', (err) => settle(broken(err)));
    r.end(body);
  });
}

/** Answers a GET on the running watch's status socket; rejects when nothing answers there. */
export async function getFromStatusSocket<T>(socket: string, path: string, timeoutMs = 2000): Promise<T> {
  const answer = await exchange(socket, { method: 'GET', path, timeoutMs });
  if (answer.status !== 200) throw new Error(`GET ${path}: HTTP ${answer.status}`);
  return JSON.parse(answer.body) as T;
}
