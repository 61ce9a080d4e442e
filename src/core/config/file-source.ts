import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { Clock, TimerHandle } from '../clock.js';
import { formatProblem, isManifestFileName, parseManifestText } from '../pod/index.js';
import { NO_OBJECTS, objectsOfFiles, type SourceObjects } from '../objects.js';

export interface SourceError {
  source: string;
  file: string;
  /** One line per problem, naming file, document and field. */
  message: string;
}

export interface FileSourceOptions {
  path: string;
  nodeName: string;
  clock: Clock;
  /** The safety-net re-read (--file-check-frequency, 20 s). */
  resyncMs?: number;
  /** The pods of every file, and the ConfigMaps and Secrets they carry. */
  onSnapshot(pods: IPod[], objects: SourceObjects): void;
  onError(err: SourceError): void;
  /** The warnings of a good file (fields one host cannot honour), said once per distinct text. */
  onWarning?(warning: SourceError): void;
  /** React to changes at once with fs.watch (default); the periodic re-read stays. */
  watch?: boolean;
}

interface FileState {
  /** Pods of the last good version of the file. */
  pods: IPod[];
  objects: SourceObjects;
  /** The file's mtime when it was read: when its ConfigMaps and Secrets were written. */
  mtimeMs?: number;
  /** The error last reported for it, so each is said once. */
  error?: string;
  /** The warnings last reported for it, likewise. */
  warnings?: string;
}

/**
 * The kubelet's file source: a file or a directory (not recursive) of
 * manifests, re-read on change and every 20 s. A file that turns invalid
 * keeps contributing the pods of its last good version; a deleted file
 * contributes nothing.
 */
export class FileSource {
  private readonly files = new Map<string, FileState>();
  private watcher?: FSWatcher;
  private timer?: TimerHandle;
  private debounce?: NodeJS.Timeout;
  private reading: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private missingReported = false;

  constructor(private readonly opts: FileSourceOptions) {}

  start(): void {
    this.stopped = false;
    void this.readNow();
  }

  stop(): void {
    this.stopped = true;
    this.watcher?.close();
    this.watcher = undefined;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    if (this.debounce) clearTimeout(this.debounce);
  }

  /** Reads the path now; concurrent requests fold into one more read. */
  readNow(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.read().finally(() => {
      this.reading = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        void this.readNow();
      }
    });
    return this.reading;
  }

  private async read(): Promise<void> {
    const path = this.opts.path;
    let names: string[];
    let isDir = false;
    try {
      const st = await stat(path);
      isDir = st.isDirectory();
      names = isDir
        ? (await readdir(path))
            .filter(isManifestFileName)
            .sort()
            .map((n) => join(path, n))
        : [path];
      this.missingReported = false;
    } catch (err) {
      // A path that is not there yet: say so once, keep what we had, look again later.
      if (!this.missingReported)
        this.opts.onError({ source: 'file', file: path, message: `${path}: cannot read: ${(err as Error).message}` });
      this.missingReported = true;
      this.schedule();
      return;
    }
    this.ensureWatch(isDir);
    const seen = new Set<string>();
    for (const file of names) {
      seen.add(file);
      const state = this.files.get(file) ?? { pods: [], objects: NO_OBJECTS };
      this.files.set(file, state);
      let text: string;
      let mtimeMs: number;
      try {
        mtimeMs = (await stat(file)).mtimeMs;
        text = await readFile(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') {
          // Gone between the listing and the read: a deletion.
          this.files.delete(file);
          continue;
        }
        this.report(file, state, `${file}: cannot read: ${(err as Error).message}`);
        continue;
      }
      const parsed = parseManifestText(
        text,
        { kind: 'file', path: resolve(file), display: file },
        { nodeName: this.opts.nodeName, now: () => new Date(this.opts.clock.now()) },
      );
      const errors = parsed.problems.filter((p) => p.severity === 'error');
      if (errors.length) {
        this.report(file, state, `${errors.map(formatProblem).join('\n')}\n(keeping the last good version of ${file})`);
        continue;
      }
      const warnings = parsed.problems
        .filter((p) => p.severity === 'warning')
        .map(formatProblem)
        .join('\n');
      if (warnings && warnings !== state.warnings) this.opts.onWarning?.({ source: 'file', file, message: warnings });
      state.warnings = warnings;
      state.pods = parsed.pods.map((p) => p.pod);
      state.objects = { configMaps: parsed.configMaps, secrets: parsed.secrets, runtimeClasses: parsed.runtimeClasses };
      state.mtimeMs = mtimeMs;
      state.error = undefined;
    }
    for (const file of [...this.files.keys()]) if (!seen.has(file)) this.files.delete(file);
    const files = [...this.files.values()];
    this.opts.onSnapshot(
      files.flatMap((s) => s.pods),
      objectsOfFiles(files),
    );
    this.schedule();
  }

  private report(file: string, state: FileState, message: string): void {
    if (state.error === message) return;
    state.error = message;
    this.opts.onError({ source: 'file', file, message });
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = this.opts.clock.setTimeout(() => void this.readNow(), this.opts.resyncMs ?? 20_000);
  }

  private ensureWatch(isDir: boolean): void {
    if (this.watcher || this.stopped || this.opts.watch === false) return;
    try {
      // Watch the directory even for a single file: editors replace files by renaming.
      const dir = isDir ? this.opts.path : resolve(this.opts.path, '..');
      this.watcher = watch(dir, () => {
        if (this.debounce) clearTimeout(this.debounce);
        this.debounce = setTimeout(() => void this.readNow(), 100);
      });
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch {
      this.watcher = undefined;
    }
  }
}
