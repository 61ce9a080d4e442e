import type { FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { parseCriLine, selectRecords, type LogRecord, type LogSelection, type LogStream } from './format.js';
import { append, CHUNK, openIfExists, streamContainerLog } from './read.js';
import { rotatedLogFiles } from './rotation.js';

/** zlib loads when a rotated file is read, not with every reader of the logs (plan and get read pod statuses through here). */
const gunzipAsync = async (data: Buffer): Promise<Buffer> => promisify((await import('node:zlib')).gunzip)(data);

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
export async function tailFromEnd(segments: (() => Promise<Segment | undefined>)[], sel: LogSelection): Promise<LogTail> {
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
export async function withSegments<T>(
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
