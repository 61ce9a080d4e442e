import { open, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { CriLogParser, selectRecords, type LogRecord, type LogSelection } from './format.js';
import { append, BATCH, containerLogFiles, restartCountOfLog, streamRotatedLogs } from './read.js';
import { rotatedLogFiles } from './rotation.js';
import { tailFromEnd, withSegments } from './tail.js';

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
