import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
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

  /**
   * Starts this parser where another reader left off: partial records of each stream still waiting
   * for their end (as `logs -f --tail` found them reading from the end), and a file line not yet
   * ended.
   */
  resume(partials: Partial<Record<LogStream, { time: string; text: string }>>, rest = ''): this {
    for (const stream of ['stdout', 'stderr'] as const) {
      const p = partials[stream];
      if (!p) continue;
      this.partial[stream] = p.text;
      this.partialTime[stream] = p.time;
    }
    this.rest = rest;
    return this;
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

/** Bytes read at once, forwards and backwards. */
const CHUNK = 64 * 1024;
/** Records handed to a sink at once when a whole log is streamed: bounded, whatever the file holds. */
const BATCH = 10_000;

/** Appends without spreading: `a.push(...b)` passes every element as an argument and overflows the stack for a large b. */
function append<T>(to: T[], from: readonly T[]): T[] {
  for (const x of from) to.push(x);
  return to;
}

/** Opens a file for reading; undefined when it does not exist. */
async function openIfExists(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Every whole line of one log file (a missing file has none). */
export async function readLogFile(path: string): Promise<LogRecord[]> {
  const fh = await openIfExists(path);
  if (!fh) return [];
  const out: LogRecord[] = [];
  try {
    await streamHandle(fh, new CriLogParser(), new StringDecoder('utf8'), (r) => append(out, r));
  } finally {
    await fh.close();
  }
  return out;
}

/** zlib loads when a rotated file is read, not with every reader of the logs (plan and get read pod statuses through here). */
const gunzipAsync = async (data: Buffer): Promise<Buffer> => promisify((await import('node:zlib')).gunzip)(data);

/** Reads a handle from `position` to its end in chunks through the parser; the bytes read. */
async function streamHandle(
  fh: FileHandle,
  parser: CriLogParser,
  decoder: StringDecoder,
  sink: (records: LogRecord[]) => unknown,
  position = 0,
): Promise<number> {
  const buf = Buffer.alloc(CHUNK);
  let offset = position;
  for (;;) {
    const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
    if (bytesRead === 0) return offset - position;
    offset += bytesRead;
    const records = parser.push(decoder.write(buf.subarray(0, bytesRead)));
    if (records.length) await sink(records);
  }
}

/** Streams a rotated file (gunzipped) through the parser; false when it is gone, or is the file `skipIno` names (read elsewhere). */
async function streamRotatedFile(
  file: string,
  parser: CriLogParser,
  decoder: StringDecoder,
  sink: (records: LogRecord[]) => unknown,
  skipIno?: number,
): Promise<boolean> {
  const fh = await openIfExists(file);
  if (!fh) return false;
  try {
    if (skipIno !== undefined && (await fh.stat()).ino === skipIno) return false;
    if (!file.endsWith('.gz')) {
      await streamHandle(fh, parser, decoder, sink);
      return true;
    }
    const { createGunzip } = await import('node:zlib');
    for await (const chunk of fh.createReadStream({ autoClose: false, start: 0 }).pipe(createGunzip())) {
      const records = parser.push(decoder.write(chunk as Buffer));
      if (records.length) await sink(records);
    }
    return true;
  } finally {
    await fh.close();
  }
}

/**
 * Streams the lines a container instance wrote before its log was last rotated: the rotated files
 * (gzipped or not), oldest first, through one parser, so a line split across a rotation is joined.
 * The sink gets them in batches as they are read.
 */
export async function streamRotatedLogs(
  path: string,
  sink: (records: LogRecord[]) => unknown,
  parser = new CriLogParser(),
  skipIno?: number,
  decoder = new StringDecoder('utf8'),
): Promise<void> {
  for (const file of await rotatedLogFiles(path)) {
    // Gzipped meanwhile: the rotation writes `<file>.gz` before it removes the file.
    if (!(await streamRotatedFile(file, parser, decoder, sink, skipIno)) && !file.endsWith('.gz'))
      await streamRotatedFile(`${file}.gz`, parser, decoder, sink);
  }
}

/** The lines a container instance wrote before its log was last rotated (see streamRotatedLogs), as one list. */
export async function readRotatedLogs(path: string, parser = new CriLogParser(), skipIno?: number): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  await streamRotatedLogs(path, (r) => append(out, r), parser, skipIno);
  return out;
}

/**
 * Streams every whole line of a container instance's log, across rotations: rotated files, then the
 * current one, in batches of at most a chunk's lines, each awaited (a sink can wait for stdout).
 */
export async function streamContainerLog(path: string, sink: (records: LogRecord[]) => unknown): Promise<void> {
  const parser = new CriLogParser();
  const decoder = new StringDecoder('utf8');
  await streamRotatedLogs(path, sink, parser, undefined, decoder);
  const fh = await openIfExists(path);
  if (!fh) return;
  try {
    await streamHandle(fh, parser, decoder, sink);
  } finally {
    await fh.close();
  }
}

/** Every whole line of a container instance's log, across rotations, as one list (small logs; streamContainerLog for any). */
export async function readContainerLog(path: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  await streamContainerLog(path, (r) => append(out, r));
  return out;
}

/** One file of a log read from its end: its size, and its bytes at a position. */
interface Segment {
  size: number;
  read(position: number, length: number): Promise<Buffer>;
}

const fileSegment = (fh: FileHandle, size: number): Segment => ({
  size,
  read: async (position, length) => {
    const buf = Buffer.alloc(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(buf, got, length - got, position + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buf.subarray(0, got);
  },
});

/**
 * The lines of segments (oldest first, read as one stream), newest first, each without its newline;
 * `fragment` is called first with what follows the last newline (a line still being written).
 * Segments load when the reading reaches them: a gzipped file is only gunzipped if the tail needs it.
 */
async function* linesFromEnd(segments: (() => Promise<Segment | undefined>)[], fragment: (bytes: Buffer) => void): AsyncGenerator<Buffer> {
  // The start of a line whose newline is in a later chunk: its pieces, in order.
  let carry: Buffer[] = [];
  let ended = false;
  const take = (piece: Buffer): Buffer | undefined => {
    const line = carry.length ? Buffer.concat([piece, ...carry]) : piece;
    carry = [];
    if (ended) return line;
    ended = true;
    fragment(line);
    return undefined;
  };
  for (let s = segments.length - 1; s >= 0; s--) {
    const seg = await segments[s]!();
    if (!seg) continue;
    for (let pos = seg.size; pos > 0;) {
      const len = Math.min(CHUNK, pos);
      pos -= len;
      const chunk = await seg.read(pos, len);
      let end = chunk.length;
      for (let nl = end > 0 ? chunk.lastIndexOf(0x0a, end - 1) : -1; nl >= 0; nl = end > 0 ? chunk.lastIndexOf(0x0a, end - 1) : -1) {
        const line = take(chunk.subarray(nl + 1, end));
        if (line) yield line;
        end = nl;
      }
      if (end > 0) carry.unshift(chunk.subarray(0, end));
    }
  }
  if (carry.length) {
    const line = take(Buffer.alloc(0));
    if (line) yield line;
  } else if (!ended) {
    fragment(Buffer.alloc(0));
  }
}

/** What a log read from its end gives: the selected lines, and where a reader going on forwards starts. */
export interface LogTail {
  /** The last lines selected (at most tail, those at or after sinceMs), oldest first. */
  records: LogRecord[];
  /** Each stream's partial records after its last full one: the start of a line still being written. */
  partials: Partial<Record<LogStream, { time: string; text: string }>>;
  /** The bytes after the last newline: a file line still being written. */
  fragment: Buffer;
}

/**
 * The last lines of a log read from its end, with partial records joined across chunks and files, as
 * the forward parser joins them. A line counts by its last record's time; lines are taken to be in
 * time order, so the reading stops at the first one older than sinceMs. A line still being written on
 * one stream is found back to its start only while the selected lines are read.
 */
async function tailFromEnd(segments: (() => Promise<Segment | undefined>)[], sel: LogSelection): Promise<LogTail> {
  const want = sel.tail === undefined || sel.tail < 0 ? Infinity : sel.tail;
  interface Building {
    time: string;
    stream: LogStream;
    parts: string[];
  }
  const started: Building[] = [];
  // Per stream: the line whose earlier partial records are still to come; done once nothing earlier matters.
  const open: Partial<Record<LogStream, Building>> = {};
  const done: Partial<Record<LogStream, boolean>> = {};
  const seenFull: Partial<Record<LogStream, boolean>> = {};
  // Partial records after a stream's last full one, newest first: their time is the earliest one's.
  const trailing: Partial<Record<LogStream, { time: string; parts: string[] }>> = {};
  const streams = ['stdout', 'stderr'] as const;
  let full = want === 0;
  let fragment: Buffer = Buffer.alloc(0);
  for await (const raw of linesFromEnd(segments, (b) => (fragment = b))) {
    const r = parseCriLine(raw.toString('utf8'));
    if (!r || done[r.stream]) continue;
    const s = r.stream;
    if (r.partial) {
      const b = open[s];
      if (b) b.parts.push(r.text);
      else if (!seenFull[s]) {
        const t = (trailing[s] ??= { time: r.time, parts: [] });
        t.time = r.time;
        t.parts.push(r.text);
      }
    } else {
      seenFull[s] = true;
      open[s] = undefined;
      if (sel.sinceMs !== undefined && Date.parse(r.time) < sel.sinceMs) full = true;
      if (full) {
        done[s] = true;
      } else {
        const b: Building = { time: r.time, stream: s, parts: [r.text] };
        started.push(b);
        open[s] = b;
        if (started.length >= want) full = true;
      }
    }
    // Enough once the lines kept are whole and a line in progress has its start.
    if (full && streams.every((st) => !open[st] && (seenFull[st] || !trailing[st]))) break;
  }
  const records = started
    .reverse()
    .map((b): LogRecord => ({ time: b.time, timeMs: Date.parse(b.time), stream: b.stream, text: b.parts.reverse().join('') }));
  const partials: LogTail['partials'] = {};
  for (const st of ['stdout', 'stderr'] as const) {
    const t = trailing[st];
    if (t?.parts.length) partials[st] = { time: t.time, text: t.parts.reverse().join('') };
  }
  return { records, partials, fragment };
}
/** Reads the segments of a log from its end, closing every file it opened. */
async function withSegments<T>(
  fn: (
    segment: (file: string, skipIno?: number) => () => Promise<Segment | undefined>,
    handle: (fh: FileHandle, size: number) => () => Promise<Segment>,
  ) => Promise<T>,
): Promise<T> {
  const opened: FileHandle[] = [];
  const fromFile = async (file: string, skipIno?: number): Promise<Segment | undefined> => {
    const fh = await openIfExists(file);
    if (!fh) return undefined;
    opened.push(fh);
    const st = await fh.stat();
    if (skipIno !== undefined && st.ino === skipIno) return undefined;
    if (!file.endsWith('.gz')) return fileSegment(fh, st.size);
    // A gzipped file cannot be read from its end: it is gunzipped whole (it holds one rotation's worth).
    const data = await gunzipAsync(await fh.readFile());
    return { size: data.length, read: async (position, length) => data.subarray(position, position + length) };
  };
  try {
    return await fn(
      (file, skipIno) => async () =>
        (await fromFile(file, skipIno)) ?? (file.endsWith('.gz') ? undefined : await fromFile(`${file}.gz`, skipIno)),
      (fh, size) => async () => fileSegment(fh, size),
    );
  } finally {
    for (const fh of opened) await fh.close().catch(() => undefined);
  }
}

/**
 * The lines `sel` selects of a container instance's log, across rotations, read from the end: the
 * rotated files are opened (and a gzipped one gunzipped) only as far back as the tail reaches.
 * With no tail, the whole log is streamed forwards instead (streamContainerLog).
 */
export async function readContainerLogTail(path: string, sel: LogSelection): Promise<LogRecord[]> {
  if (sel.tail === undefined || sel.tail < 0) {
    const out: LogRecord[] = [];
    await streamContainerLog(path, (r) => append(out, sel.sinceMs === undefined ? r : selectRecords(r, { sinceMs: sel.sinceMs })));
    return out;
  }
  const files = [...(await rotatedLogFiles(path)), path];
  return (
    await withSegments((segment) =>
      tailFromEnd(
        files.map((f) => segment(f)),
        sel,
      ),
    )
  ).records;
}

/** The last `tail` lines of one log file, read from its end. */
export async function readLogFileTail(path: string, tail: number): Promise<LogRecord[]> {
  return (await withSegments((segment) => tailFromEnd([segment(path)], { tail }))).records;
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
   * Given: called before any onRecords with the lines the instance wrote so far (its rotated files,
   * then the file at the path; at most BATCH lines a call), read from the handles the follow goes
   * on with, so that a rotation meanwhile neither loses a line nor repeats one. Otherwise the file
   * at the path is read from its start through onRecords.
   */
  backlog?(records: LogRecord[]): void;
  /**
   * Which lines of the backlog: with a tail, the backlog is read from the end, as far back as the
   * tail reaches; otherwise it is streamed, in batches (backlog is then called more than once).
   */
  selection?: LogSelection;
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
      const sel = opts.selection ?? {};
      if (sel.tail !== undefined && sel.tail >= 0) {
        const size = current ? (await current.fh.stat()).size : 0;
        const files = await rotatedLogFiles(path);
        const tail = await withSegments((segment, handle) =>
          tailFromEnd([...files.map((f) => segment(f, current?.ino)), ...(current ? [handle(current.fh, size)] : [])], sel),
        );
        // The follow goes on after what was read, with the lines still in progress as the reader found them.
        const inCurrent = Math.min(tail.fragment.length, size);
        if (current) current.offset = size - inCurrent;
        parser.resume(
          tail.partials,
          inCurrent < tail.fragment.length ? tail.fragment.subarray(0, tail.fragment.length - inCurrent).toString('utf8') : '',
        );
        opts.backlog(tail.records);
      } else {
        let batch: LogRecord[] = [];
        const collect = (records: LogRecord[]) => {
          append(batch, sel.sinceMs === undefined ? records : selectRecords(records, { sinceMs: sel.sinceMs }));
          if (batch.length >= BATCH) {
            opts.backlog!(batch);
            batch = [];
          }
        };
        await streamRotatedLogs(path, collect, parser, current?.ino, decoder);
        await drain(current, collect);
        opts.backlog(batch);
      }
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
