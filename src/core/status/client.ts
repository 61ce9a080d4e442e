import type * as Http from 'node:http';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';

let http: typeof Http | undefined;
/** http.request, with node:http loaded by the first request: for a stream (a watch), which exchange() does not take. */
export const request = (options: Http.RequestOptions, callback: (res: Http.IncomingMessage) => void): Http.ClientRequest =>
  (http ??= createRequire(import.meta.url)('node:http') as typeof Http).request(options, callback);

/**
 * A request's own connection to a unix socket, without http's Agent: the Agent
 * asks net.isIP of the host name, and the first call compiles Node's IPv6
 * pattern, several ms of a CLI command's start for nothing on a socket.
 */
export const unixSocket = (path: string) => ({ socketPath: path, createConnection: () => connect(path) });

/** An answer read whole: status, headers (names in lower case) and body. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A socket's error as connect gives it: said at once when there is no socket, without connecting. */
const noSocket = (socket: string): Error => Object.assign(new Error(`connect ENOENT ${socket}`), { code: 'ENOENT', syscall: 'connect', address: socket });

/**
 * One HTTP/1.1 request on its own connection to a unix socket (the agent's), its answer read whole.
 * Written on node:net rather than node:http: a command that asks the agent once (get, plan, run
 * --detach) then loads neither http's modules nor its parser, and runs none of its code cold, about
 * 3.5 ms of such a command's start (measured on Node 20). The agent's answers are Node's http
 * server's: a status line, headers, then a body of Content-Length bytes, chunked, or to the close.
 * A stream that never ends (a watch) goes through request().
 */
export function exchange(socket: string, req: { method: string; path: string; body?: string; timeoutMs: number; timeoutMessage?: string }): Promise<Answer> {
  if (!existsSync(socket)) return Promise.reject(noSocket(socket));
  return new Promise((resolve, reject) => {
    const conn = connect(socket);
    const parser = new AnswerParser();
    let settled = false;
    const settle = (err: Error | undefined, answer?: Answer) => {
      if (settled) return;
      settled = true;
      conn.destroy();
      if (err) reject(err);
      else resolve(answer!);
    };
    // What the answer's bytes said wrong, with where they came from.
    const unreadable = (err: unknown) => settle(new Error(`${socket}: ${(err as Error).message}`));
    conn.setTimeout(req.timeoutMs, () => settle(new Error(req.timeoutMessage ?? `${socket}: no answer within ${req.timeoutMs} ms`)));
    conn.on('error', (err) => settle(err));
    conn.on('data', (data: Buffer) => {
      try {
        const answer = parser.push(data);
        if (answer) settle(undefined, answer);
      } catch (err) {
        unreadable(err);
      }
    });
    conn.on('end', () => {
      try {
        settle(undefined, parser.end());
      } catch (err) {
        unreadable(err);
      }
    });
    const body = req.body === undefined ? undefined : Buffer.from(req.body);
    const head = [`${req.method} ${req.path} HTTP/1.1`, 'Host: localhost', 'Connection: close'];
    if (body) head.push('Content-Type: application/json', `Content-Length: ${body.length}`);
    else if (req.method !== 'GET' && req.method !== 'HEAD') head.push('Content-Length: 0');
    conn.write(`${head.join('\r\n')}\r\n\r\n`);
    if (body) conn.write(body);
  });
}

/**
 * Reads an HTTP/1.1 answer as its bytes come: push() each piece, the answer once its body is complete;
 * end() at the connection's end, for a body that runs to the close. Throws on an answer it cannot read.
 * A body's bytes are kept as they came and joined once, so a large answer costs its size, not its square.
 */
export class AnswerParser {
  /** Bytes not read yet: the head, a chunk's size line, the CRLF after a chunk, the trailers. */
  private buf: Buffer = Buffer.alloc(0);
  private head: { status: number; headers: Record<string, string> } | undefined;
  /** Content-Length's bytes, 'chunked', or 'close' (to the end of the connection). */
  private framing: number | 'chunked' | 'close' = 'close';
  private readonly parts: Buffer[] = [];
  private received = 0;
  /** In a chunked body: what comes next, and the bytes left of the chunk being read. */
  private chunk: { next: 'size' | 'data' | 'crlf' | 'trailers'; left: number } = { next: 'size', left: 0 };
  private done: Answer | undefined;

  push(data: Buffer): Answer | undefined {
    if (this.done) return this.done;
    if (!this.head) {
      this.buf = this.buf.length === 0 ? data : Buffer.concat([this.buf, data]);
      if (!this.readHead()) return undefined;
      data = this.buf;
      this.buf = Buffer.alloc(0);
    }
    if (this.framing === 'chunked') return this.readChunks(data);
    this.parts.push(data);
    this.received += data.length;
    if (typeof this.framing === 'number' && this.received >= this.framing) return this.finish(this.framing);
    return undefined;
  }

  /** At the connection's end: the answer, when its body ran to the close; else it was cut short. */
  end(): Answer {
    if (this.done) return this.done;
    if (this.head && this.framing === 'close') return this.finish(this.received);
    throw new Error(this.head ? 'the connection closed before the end of the answer' : 'the connection closed without an answer');
  }

  /** Reads the head from buf, past any interim (1xx) answer; false until it is all there. */
  private readHead(): boolean {
    while (!this.head) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return false;
      const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
      this.buf = this.buf.subarray(end + 4);
      const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0]!);
      if (!m) throw new Error(`not an HTTP answer: ${JSON.stringify(lines[0]!.slice(0, 60))}`);
      const status = Number(m[1]);
      // 1xx: an interim answer, then the real one.
      if (status < 200) continue;
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        if (colon <= 0) throw new Error(`a malformed header line in the answer: ${JSON.stringify(line.slice(0, 60))}`);
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        headers[name] = Object.hasOwn(headers, name) ? `${headers[name]}, ${value}` : value;
      }
      this.head = { status, headers };
      if (/\bchunked\b/i.test(headers['transfer-encoding'] ?? '')) this.framing = 'chunked';
      else if (headers['content-length'] !== undefined) {
        const length = Number(headers['content-length']);
        if (!/^\d+$/.test(headers['content-length']) || !Number.isSafeInteger(length)) throw new Error(`a malformed Content-Length: ${headers['content-length']}`);
        this.framing = length;
      } else if (status === 204 || status === 304) this.framing = 0;
    }
    return true;
  }

  private readChunks(data: Buffer): Answer | undefined {
    for (;;) {
      if (this.chunk.next === 'data') {
        // A chunk's data goes to the body as it came, without joining it to what follows.
        const take = Math.min(this.chunk.left, data.length);
        if (take > 0) {
          this.parts.push(data.subarray(0, take));
          this.received += take;
          this.chunk.left -= take;
          data = data.subarray(take);
        }
        if (this.chunk.left > 0) return undefined;
        this.chunk.next = 'crlf';
        continue;
      }
      this.buf = this.buf.length === 0 ? data : Buffer.concat([this.buf, data]);
      data = Buffer.alloc(0);
      if (this.chunk.next === 'crlf') {
        if (this.buf.length < 2) return undefined;
        if (this.buf[0] !== 0x0d || this.buf[1] !== 0x0a) throw new Error('a chunk of the answer does not end with CRLF');
        this.buf = this.buf.subarray(2);
        this.chunk.next = 'size';
        continue;
      }
      const eol = this.buf.indexOf('\r\n');
      if (eol < 0) return undefined;
      const line = this.buf.subarray(0, eol).toString('latin1');
      this.buf = this.buf.subarray(eol + 2);
      if (this.chunk.next === 'trailers') {
        // The trailers end with an empty line; they are not kept.
        if (line === '') return this.finish(this.received);
        continue;
      }
      const sizeText = line.split(';')[0]!.trim();
      if (!/^[0-9a-fA-F]+$/.test(sizeText)) throw new Error(`a malformed chunk size in the answer: ${JSON.stringify(sizeText.slice(0, 20))}`);
      const size = parseInt(sizeText, 16);
      this.chunk = size === 0 ? { next: 'trailers', left: 0 } : { next: 'data', left: size };
      data = this.buf;
      this.buf = Buffer.alloc(0);
    }
  }

  private finish(length: number): Answer {
    // Decoded once whole: a character may span two pieces.
    this.done = { ...this.head!, body: Buffer.concat(this.parts).subarray(0, length).toString('utf8') };
    return this.done;
  }
}

/** Answers a GET on the running watch's status socket; rejects when nothing answers there. */
export async function getFromStatusSocket<T>(socket: string, path: string, timeoutMs = 2000): Promise<T> {
  const answer = await exchange(socket, { method: 'GET', path, timeoutMs });
  if (answer.status !== 200) throw new Error(`GET ${path}: HTTP ${answer.status}`);
  return JSON.parse(answer.body) as T;
}
