import { open, readdir, readFile, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { promisify } from 'node:util';
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
  /** The time of each stream's first partial record still waiting for its end. */
  private readonly partialTime: Record<LogStream, string> = { stdout: '', stderr: '' };

  /**
   * Ends the stream here: the partial records still waiting for their end are lines of their own
   * (oldest first), and a file line still being written is dropped (its end will not come).
   */
  flush(): LogRecord[] {
    const out: LogRecord[] = [];
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream] === '' && this.partialTime[stream] === '') continue;
      const time = this.partialTime[stream];
      out.push({ time, timeMs: Date.parse(time), stream, text: this.partial[stream] });
      this.partial[stream] = '';
      this.partialTime[stream] = '';
    }
    this.rest = '';
    return out.sort((x, y) => x.timeMs - y.timeMs);
  }

  push(chunk: string): LogRecord[] {
    const text = this.rest + chunk;
    const lines = text.split('\n');
    this.rest = lines.pop() ?? '';
    const out: LogRecord[] = [];
    for (const line of lines) {
      const r = parseCriLine(line);
      if (!r) continue;
      if (r.partial) {
        if (this.partialTime[r.stream] === '') this.partialTime[r.stream] = r.time;
        this.partial[r.stream] += r.text;
        continue;
      }
      const joined = this.partial[r.stream] + r.text;
      this.partial[r.stream] = '';
      this.partialTime[r.stream] = '';
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

/** zlib loads when a rotated file is read, not with every reader of the logs (plan and get read pod statuses through here). */
const gunzipAsync = async (data: Buffer): Promise<Buffer> => promisify((await import('node:zlib')).gunzip)(data);

/**
 * The lines a container instance wrote before its log was last rotated: the
 * rotated files (gzipped or not), oldest first, through one parser, so a
 * line split across a rotation is joined.
 */
export async function readRotatedLogs(path: string, parser = new CriLogParser(), skipIno?: number): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for (const file of await rotatedLogFiles(path)) {
    // Gzipped meanwhile: the rotation writes `<file>.gz` before it removes the file.
    const data = (await readRotatedFile(file, skipIno)) ?? (file.endsWith('.gz') ? undefined : await readRotatedFile(`${file}.gz`));
    if (data) out.push(...parser.push(data.toString('utf8')));
  }
  return out;
}

/** A rotated file's content, gunzipped; undefined when it is gone, or is the file `skipIno` names (read elsewhere). */
async function readRotatedFile(file: string, skipIno?: number): Promise<Buffer | undefined> {
  let fh: FileHandle;
  try {
    fh = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    if (skipIno !== undefined && (await fh.stat()).ino === skipIno) return undefined;
    const data = await fh.readFile();
    return file.endsWith('.gz') ? await gunzipAsync(data) : data;
  } finally {
    await fh.close();
  }
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
  /** The file to start with. */
  path: string;
  /**
   * Given: called once, before any onRecords, with every line the instance wrote so far (its
   * rotated files, then the file at the path), read from the handles the follow goes on with, so
   * that a rotation meanwhile neither loses a line nor repeats one. Otherwise the file at the
   * path is read from its start through onRecords.
   */
  backlog?(records: LogRecord[]): void;
  onRecords(records: LogRecord[], path: string): void;
  /** Asked between polls: true ends the follow once everything written so far is read. */
  shouldStop(): boolean | Promise<boolean>;
  pollMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Polls in which a rotated file must stay quiet, once the file that replaced it has data, before
 * the follow moves on. containerd's ReopenContainerLog starts a new log writer and closes the old
 * one, whose goroutine still flushes what its pipe holds into the rotated file: those lines can land
 * after the new file exists, and even after its first lines.
 */
const ROTATION_SETTLE_POLLS = 2;

/** One open instance of a log file: the handle keeps reading a file renamed or removed meanwhile. */
interface LogFile {
  fh: FileHandle;
  ino: number;
  offset: number;
}

/**
 * Follows a container's log as `tail -F` would and across restarts: reads
 * what is appended, follows the path to the new file when it was rotated (a
 * new inode) without leaving the rotated one before its last line, notices a
 * truncation, and moves on to `<n+1>.log` when the next instance starts.
 */
export async function followContainerLog(opts: FollowOptions): Promise<void> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const pollMs = opts.pollMs ?? 200;
  let path = opts.path;
  // `current` is read; `newer` are the files that replaced it at the path, oldest first, opened as
  // soon as seen so that a further rotation cannot hide one of them.
  let current: LogFile | undefined;
  let newer: LogFile[] = [];
  let quietPolls = 0;
  // One instance's files are one stream: a partial record or a character split across a rotation
  // is joined, as readContainerLog joins them.
  let parser = new CriLogParser();
  let decoder = new StringDecoder('utf8');
  const buf = Buffer.alloc(64 * 1024);

  const openPath = async (): Promise<LogFile | undefined> => {
    try {
      const fh = await open(path, 'r');
      return { fh, ino: (await fh.stat()).ino, offset: 0 };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  };
  /** Reads what `file` holds past its offset; the bytes read. */
  const drain = async (file: LogFile | undefined, sink = (records: LogRecord[]) => opts.onRecords(records, path)): Promise<number> => {
    if (!file) return 0;
    let total = 0;
    for (;;) {
      const { bytesRead } = await file.fh.read(buf, 0, buf.length, file.offset);
      if (bytesRead === 0) return total;
      file.offset += bytesRead;
      total += bytesRead;
      const records = parser.push(decoder.write(buf.subarray(0, bytesRead)));
      if (records.length) sink(records);
    }
  };
  /** Reads the current file and every newer one to their ends, in order, and closes them. */
  const drainAll = async () => {
    for (const file of [current, ...newer]) {
      await drain(file);
      await file?.fh.close();
    }
    current = undefined;
    newer = [];
  };
  const next = async (): Promise<string | undefined> => {
    const n = restartCountOfLog(path);
    if (n === undefined) return undefined;
    const later = (await containerLogFiles(dirname(path))).filter((p) => restartCountOfLog(p)! > n);
    return later[0];
  };

  try {
    current = await openPath();
    if (opts.backlog) {
      // The file at the path is opened first: one rotated after that shows among the rotated ones
      // under another name, and is skipped there by its inode.
      const records = await readRotatedLogs(path, parser, current?.ino);
      await drain(current, (r) => records.push(...r));
      opts.backlog(records);
    }
    for (;;) {
      const read = await drain(current);
      const atPath = await stat(path).catch(() => undefined);
      const latest = newer.at(-1) ?? current;
      if (latest && atPath && atPath.ino !== latest.ino) {
        const opened = await openPath();
        if (opened && opened.ino !== latest.ino) newer.push(opened);
        else await opened?.fh.close();
      }
      if (current && newer.length) {
        // Rotated: the rotated file is left once the writer has visibly moved on (the next file
        // has data, or was rotated in turn) and it has stayed quiet since.
        const movedOn = newer.length > 1 || (await newer[0]!.fh.stat()).size > 0;
        quietPolls = movedOn && read === 0 ? quietPolls + 1 : 0;
        if (quietPolls >= ROTATION_SETTLE_POLLS) {
          await current.fh.close();
          current = newer.shift();
          quietPolls = 0;
          continue;
        }
      } else if (current && atPath && atPath.ino === current.ino && atPath.size < current.offset) {
        // Truncated in place: the file starts again. What was left unfinished must not run into
        // its first new line: a partial record is a line of its own, a half-written line is gone.
        current.offset = 0;
        const pending = parser.flush();
        if (pending.length) opts.onRecords(pending, path);
        decoder = new StringDecoder('utf8');
        continue;
      } else if (!current && atPath) {
        current = await openPath();
        continue;
      }
      const following = await next();
      if (following) {
        // The next instance started: what the old one wrote is all read first.
        await drainAll();
        path = following;
        quietPolls = 0;
        parser = new CriLogParser();
        decoder = new StringDecoder('utf8');
        current = await openPath();
        continue;
      }
      if (await opts.shouldStop()) {
        await drainAll();
        return;
      }
      await sleep(pollMs);
    }
  } finally {
    for (const file of [current, ...newer]) await file?.fh.close().catch(() => undefined);
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
