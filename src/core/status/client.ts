import { request } from 'node:http';

/** Answers a GET on the running watch's status socket; rejects when nothing answers there. */
export function getFromStatusSocket<T>(socket: string, path: string, timeoutMs = 2000): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path, timeout: timeoutMs }, (res) => {
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
