import type * as Http from 'node:http';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';

let http: typeof Http | undefined;
/** http.request, with node:http loaded by the first request: a command that finds no socket to ask never needs it. */
export const request = (options: Http.RequestOptions, callback: (res: Http.IncomingMessage) => void): Http.ClientRequest =>
  (http ??= createRequire(import.meta.url)('node:http') as typeof Http).request(options, callback);

/**
 * A request's own connection to a unix socket, without http's Agent: the Agent
 * asks net.isIP of the host name, and the first call compiles Node's IPv6
 * pattern, several ms of a CLI command's start for nothing on a socket.
 */
export const unixSocket = (path: string) => ({ socketPath: path, createConnection: () => connect(path) });

/** Answers a GET on the running watch's status socket; rejects when nothing answers there. */
export function getFromStatusSocket<T>(socket: string, path: string, timeoutMs = 2000): Promise<T> {
  // No socket, no agent: said at once, as connect would, without loading http and a turn of the loop for connect's error.
  if (!existsSync(socket)) return Promise.reject(Object.assign(new Error(`connect ENOENT ${socket}`), { code: 'ENOENT', syscall: 'connect', address: socket }));
  return new Promise((resolve, reject) => {
    const req = request({ ...unixSocket(socket), path, timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${path}: HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(body) as T);
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
