import { open, readdir, type FileHandle } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { CriLogParser, type LogRecord } from './format.js';
import { rotatedLogFiles } from './rotation.js';

/** Bytes read at once, forwards and backwards. */
export const CHUNK = 64 * 1024;
/** Records handed to a sink at once when a whole log is streamed: bounded, whatever the file holds. */
export const BATCH = 10_000;

/** Appends without spreading: `a.push(...b)` passes every element as an argument and overflows the stack for a large b. */
export function append<T>(to: T[], from: readonly T[]): T[] {
  for (const x of from) to.push(x);
  return to;
}

/** Opens a file for reading; undefined when it does not exist. */
export async function openIfExists(path: string): Promise<FileHandle | undefined> {
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
