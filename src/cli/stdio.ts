import { fstatSync, readlinkSync, writeSync } from 'node:fs';

/**
 * Output without Node's process.stdout and process.stderr while nothing else needs them. Node
 * makes those streams on first use: for a pipe a net.Socket, with net, stream and some twenty
 * internal modules loaded and compiled (measured: --version 2 ms, validate 4.4 ms faster without
 * them). A command's lines are written to the descriptor
 * at once instead, as Node itself writes to a pipe, a file or a terminal on Linux. Once a stream
 * exists, because anything asked for it (exec, attach, a library), every write goes through it,
 * so that nothing is reordered.
 */

/** Shared by the copies of this module the entry (main.cjs) and the chunks each bundle. */
interface StdioState {
  /** Whether process.stdout, process.stderr were made (by index: 1, 2). */
  made: [boolean, boolean, boolean];
  /** Bytes written to each descriptor directly. */
  direct: [number, number, number];
  watching: boolean;
}
const STATE = Symbol.for('podctl.stdio');
const state = ((globalThis as Record<symbol, StdioState | undefined>)[STATE] ??= { made: [false, false, false], direct: [0, 0, 0], watching: false });

/**
 * How much is written directly before the stream takes over. A shell's pipe is blocking: a direct
 * write to a full one waits for the reader, the whole process with it (a paused pager under
 * `podctl watch`), where the stream queues and the event loop goes on. A pipe nobody has read
 * from yet holds 64 KB by default: a command's first lines (any help page, validate, a list)
 * never wait. (A user past pipe-user-pages-soft gets pipes of a page or two, which a paused
 * reader can fill before this limit.)
 */
export const DIRECT_LIMIT = 16 * 1024;

/**
 * Notes when process.stdout or process.stderr is made, from Node's own lazy getter; gives stdout
 * the handler oclif gave it when it loaded: a closed pipe (`| head`) ends nothing. Call first of all.
 */
export function watchStdio(): void {
  if (state.watching) return;
  state.watching = true;
  for (const fd of [1, 2] as const) {
    const name = fd === 1 ? 'stdout' : 'stderr';
    const own = Object.getOwnPropertyDescriptor(process, name);
    if (!own?.get || !own.configurable) {
      // Not Node's lazy getter: take the stream as made.
      state.made[fd] = true;
      continue;
    }
    const get = own.get;
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: own.enumerable,
      get() {
        const stream = get.call(process) as NodeJS.WriteStream;
        if (!state.made[fd]) {
          state.made[fd] = true;
          if (fd === 1) stream.on('error', swallowEpipe);
        }
        return stream;
      },
    });
  }
}

function swallowEpipe(err: NodeJS.ErrnoException): void {
  if (err?.code === 'EPIPE') return;
  throw err;
}

/** Whether Node's stream for the descriptor (1 or 2) was made (unwatched: taken as made). */
export function stdioMade(fd: 1 | 2): boolean {
  return !state.watching || state.made[fd];
}

/**
 * Whether everything written so far is with the kernel: written directly, or through streams that
 * hold nothing queued (a stream queues what a full non-blocking pipe would not take, and writes it as
 * the reader reads). Then the process may end at once without losing output.
 */
export function stdioFlushed(): boolean {
  for (const fd of [1, 2] as const) {
    if (!stdioMade(fd)) continue;
    const stream = fd === 1 ? process.stdout : process.stderr;
    if (stream.writableLength > 0) return false;
  }
  return true;
}

/** Ends the process now, with the code set (process.exitCode), unless a stream still holds output: see stdioFlushed. */
export function exitIfFlushed(): void {
  if (stdioFlushed()) process.exit();
}

/** A Linux terminal, by the device the descriptor is open on (tty.isatty would load net for its answer). */
export function isTerminal(fd: number): boolean {
  try {
    if (!fstatSync(fd).isCharacterDevice()) return false;
  } catch {
    return false;
  }
  try {
    return /^\/dev\/(pts\/\d+|tty|console$|hvc\d)/.test(readlinkSync(`/proc/self/fd/${fd}`));
  } catch {
    // No /proc: a character device is most likely the terminal (else /dev/null, where colour is harmless).
    return true;
  }
}

/**
 * Writes text to the descriptor (1 or 2) now, or through Node's stream once it exists. A
 * descriptor another process left non-blocking that is full (EAGAIN) gets the rest through the
 * stream, which waits for it; a reader gone (EPIPE) is not an error, as oclif has it.
 */
export function writeStdio(fd: 1 | 2, text: string): void {
  // Unwatched (not the CLI: a test, a library), whether a stream exists is not known: use it.
  if (!state.watching || state.made[fd] || state.direct[fd] + text.length > DIRECT_LIMIT) {
    (fd === 1 ? process.stdout : process.stderr).write(text);
    return;
  }
  const bytes = Buffer.from(text, 'utf8');
  if ((state.direct[fd] += bytes.length) > DIRECT_LIMIT) {
    (fd === 1 ? process.stdout : process.stderr).write(bytes);
    return;
  }
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') return;
      if (code !== 'EAGAIN') throw err;
      (fd === 1 ? process.stdout : process.stderr).write(bytes.subarray(offset));
      return;
    }
  }
}

export const writeStdout = (text: string): void => writeStdio(1, text);
export const writeStderr = (text: string): void => writeStdio(2, text);
