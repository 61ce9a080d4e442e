import { open, readdir, readFile, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { rotatedLogFiles } from './rotation.js';

/**
 * Container logs as the runtime writes them (the CRI log format):
 * `<RFC3339Nano time> <stdout|stderr> <tags> <text>`, tags "F" (full line) or
 * "P" (partial: the line continues in the next record of the same stream).
 */
export type LogStream = 'stdout' | 'stderr';

/** One line as the container wrote it, partial records joined. */
export interface LogRecord {
  /** The runtime's timestamp of the line's last record, as written (RFC3339Nano). */
  time: string;
  timeMs: number;
  stream: LogStream;
  text: string;
}

interface CriRecord {
  time: string;
  stream: LogStream;
  partial: boolean;
  text: string;
}

/** Parses one line of a CRI log file; undefined for a line that is not in the format. */
export function parseCriLine(line: string): CriRecord | undefined {
  const a = line.indexOf(' ');
  const b = a < 0 ? -1 : line.indexOf(' ', a + 1);
  if (b < 0) return undefined;
  const stream = line.slice(a + 1, b);
  if (stream !== 'stdout' && stream !== 'stderr') return undefined;
  const c = line.indexOf(' ', b + 1);
  const tags = c < 0 ? line.slice(b + 1) : line.slice(b + 1, c);
  return { time: line.slice(0, a), stream, partial: tags.split(':').includes('P'), text: c < 0 ? '' : line.slice(c + 1) };
}

/**
 * Turns chunks of a CRI log file into whole lines: keeps a file line that is
 * still being written, and joins partial records per stream, as the kubelet's
 * log reader does.
 */
export class CriLogParser {
  private rest = '';
  private readonly partial: Record<LogStream, string> = { stdout: '', stderr: '' };

  push(chunk: string): LogRecord[] {
    const text = this.rest + chunk;
    const lines = text.split('\n');
    this.rest = lines.pop() ?? '';
    const out: LogRecord[] = [];
    for (const line of lines) {
      const r = parseCriLine(line);
      if (!r) continue;
      if (r.partial) {
        this.partial[r.stream] += r.text;
        continue;
      }
      const joined = this.partial[r.stream] + r.text;
      this.partial[r.stream] = '';
      out.push({ time: r.time, timeMs: Date.parse(r.time), stream: r.stream, text: joined });
    }
    return out;
  }
}

export interface LogSelection {
  /** Only the last N lines (kubectl --tail); undefined or negative: all. */
  tail?: number;
  /** Only lines written at or after this time (epoch ms; kubectl --since). */
  sinceMs?: number;
}

export function selectRecords(records: LogRecord[], sel: LogSelection): LogRecord[] {
  let out = sel.sinceMs === undefined ? records : records.filter((r) => r.timeMs >= sel.sinceMs!);
  if (sel.tail !== undefined && sel.tail >= 0) out = sel.tail === 0 ? [] : out.slice(-sel.tail);
  return out;
}

/** Every whole line of one log file (a missing file has none). */
export async function readLogFile(path: string): Promise<LogRecord[]> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  try {
    return new CriLogParser().push((await fh.readFile()).toString('utf8'));
  } finally {
    await fh.close();
  }
}

const gunzipAsync = promisify(gunzip);

/**
 * The lines a container instance wrote before its log was last rotated: the
 * rotated files (gzipped or not), oldest first, through one parser, so a
 * line split across a rotation is joined.
 */
export async function readRotatedLogs(path: string, parser = new CriLogParser()): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for (const file of await rotatedLogFiles(path)) {
    let data: Buffer;
    try {
      data = await readFile(file);
    } catch (err) {
      // Compressed or removed by the rotation meanwhile: the newer files still hold the rest.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    if (file.endsWith('.gz')) data = await gunzipAsync(data);
    out.push(...parser.push(data.toString('utf8')));
  }
  return out;
}

/** Every whole line of a container instance's log, across rotations: rotated files, then the current one. */
export async function readContainerLog(path: string): Promise<LogRecord[]> {
  const parser = new CriLogParser();
  const older = await readRotatedLogs(path, parser);
  let current = '';
  try {
    current = (await readFile(path)).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return [...older, ...parser.push(current)];
}

/** `<dir>/<n>.log`: the restart count a log file belongs to, or undefined. */
export function restartCountOfLog(path: string): number | undefined {
  const m = /^(\d+)\.log$/.exec(basename(path));
  return m ? Number(m[1]) : undefined;
}

/** The log files of one container's instances in its directory, oldest restart first. */
export async function containerLogFiles(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => restartCountOfLog(n) !== undefined)
    .sort((a, b) => restartCountOfLog(a)! - restartCountOfLog(b)!)
    .map((n) => join(dir, n));
}

export interface FollowOptions {
  /** The file to start with (its whole content is read from `fromOffset`). */
  path: string;
  fromOffset?: number;
  onRecords(records: LogRecord[], path: string): void;
  /** Asked between polls: true ends the follow once everything written so far is read. */
  shouldStop(): boolean | Promise<boolean>;
  pollMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Follows a container's log as `tail -F` would and across restarts: reads
 * what is appended, reopens the path when it was rotated (a new inode) or
 * truncated, and moves on to `<n+1>.log` when the next instance starts.
 */
export async function followContainerLog(opts: FollowOptions): Promise<void> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const pollMs = opts.pollMs ?? 200;
  let path = opts.path;
  let fh: FileHandle | undefined;
  let ino = -1;
  let offset = opts.fromOffset ?? 0;
  let parser = new CriLogParser();
  const buf = Buffer.alloc(64 * 1024);

  const openPath = async (): Promise<boolean> => {
    try {
      fh = await open(path, 'r');
      ino = (await fh.stat()).ino;
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  };
  const drain = async () => {
    if (!fh) return;
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      if (bytesRead === 0) return;
      offset += bytesRead;
      const records = parser.push(buf.subarray(0, bytesRead).toString('utf8'));
      if (records.length) opts.onRecords(records, path);
    }
  };
  const next = async (): Promise<string | undefined> => {
    const n = restartCountOfLog(path);
    if (n === undefined) return undefined;
    const newer = (await containerLogFiles(dirname(path))).filter((p) => restartCountOfLog(p)! > n);
    return newer[0];
  };

  try {
    await openPath();
    for (;;) {
      await drain();
      const current = await stat(path).catch(() => undefined);
      if (fh && current && current.ino !== ino) {
        // Rotated: the runtime reopened the path, so the old file gets nothing more; what it
        // wrote there between the drain above and the reopen is read before moving on.
        await drain();
        await fh.close();
        fh = undefined;
        offset = 0;
        parser = new CriLogParser();
        await openPath();
        continue;
      }
      if (fh && current && current.size < offset) {
        offset = 0; // truncated in place
        continue;
      }
      if (!fh && current) {
        await openPath();
        continue;
      }
      const following = await next();
      if (following) {
        // The next instance started: what the old one wrote is all read.
        await fh?.close();
        fh = undefined;
        path = following;
        offset = 0;
        parser = new CriLogParser();
        await openPath();
        continue;
      }
      if (await opts.shouldStop()) {
        await drain();
        return;
      }
      await sleep(pollMs);
    }
  } finally {
    await fh?.close();
  }
}

/** The messages of the last lines of a CRI log file (partial lines joined), bounded in bytes and lines. */
export async function readLogTail(path: string, maxBytes: number, maxLines: number): Promise<string> {
  let text: string;
  try {
    const fh = await open(path, 'r');
    try {
      const { size } = await fh.stat();
      // Read a little more than kept: CRI prefixes take room too.
      const want = Math.min(size, maxBytes * 4 + 4096);
      const buf = Buffer.alloc(want);
      await fh.read(buf, 0, want, size - want);
      text = buf.toString();
    } finally {
      await fh.close();
    }
  } catch {
    return '';
  }
  // The first line read may start mid-record; the parser skips what is not a whole CRI line.
  const lines = new CriLogParser().push(`${text}\n`).map((r) => r.text);
  let out = lines.slice(-maxLines).join('\n');
  if (Buffer.byteLength(out) > maxBytes) out = Buffer.from(out).subarray(-maxBytes).toString();
  return out;
}
