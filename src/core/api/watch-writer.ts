import type { ServerResponse } from 'node:http';

/**
 * What a watcher may leave unread, in bytes, beyond the list its watch began with. A watcher that
 * stops reading (`podctl get pods -w | less`, paused) is closed past it, as the API server closes
 * a watcher that does not keep up; the watcher can watch again.
 */
export const WATCH_UNREAD_LIMIT_BYTES = 1 << 20;

export interface WatchWriterOptions {
  /** The watch, as the log names it: GET /v1/pods?watch=1. */
  what: string;
  limitBytes?: number;
  /** Said once when the watcher is closed for not reading (the agent's log). */
  log?: (message: string) => void;
}

/**
 * One watcher's stream of JSON lines, with backpressure respected: while the watcher reads, each
 * event goes out as it comes; what it leaves unread stays buffered only up to the bound, and past
 * it the watcher is closed and the log says so. The one mechanism behind every watch the agent
 * serves, so that a slow watcher costs the agent a bounded amount of memory.
 */
export class WatchWriter {
  private allowance: number;
  private closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly opts: WatchWriterOptions,
  ) {
    this.allowance = opts.limitBytes ?? WATCH_UNREAD_LIMIT_BYTES;
    res.once('close', () => (this.closed = true));
  }

  /** True once the watcher is gone: closed by it, or by the bound. */
  get done(): boolean {
    return this.closed;
  }

  /** The lines a watch begins with (its list as ADDED): written whole, their size allowed on top of the bound. */
  begin(lines: string[]): void {
    let size = 0;
    for (const line of lines) {
      size += Buffer.byteLength(line);
      this.res.write(line);
    }
    this.allowance += size;
  }

  /** One event's line; false when the watcher is gone, now or before. */
  write(line: string): boolean {
    if (this.closed) return false;
    // res.write returning false means the watcher is behind; how far is what it has left unread.
    if (this.res.write(line) || this.res.writableLength <= this.allowance) return true;
    const unread = this.res.writableLength;
    this.closed = true;
    this.res.destroy();
    this.opts.log?.(
      `${this.opts.what}: closed a watcher that does not read its events (${unread} bytes unread, ` +
        `over the bound of ${this.allowance} bytes), as the API server closes an unresponsive watcher`,
    );
    return false;
  }
}
