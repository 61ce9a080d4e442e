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
