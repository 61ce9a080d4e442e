import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import yaml from 'js-yaml';
import type { IConfigMap, IPod, ISecret } from 'kubernetes-models/v1';
import type { Clock, TimerHandle } from '../clock.js';
import { NO_OBJECTS, objectsOfFiles, type SourceObjects } from '../objects.js';
import { CONFIG_FILE_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../pod/load.js';
import { formatProblem, isManifestFileName, parseManifestDocuments, parseManifestText, type ManifestProblem } from '../pod/index.js';
import { referencedObjects } from '../pod/references.js';
import { podKey, podMeta } from '../util/pod-key.js';
import { appliedFileName, appliedFilePath, parseAppliedFileName, podRefProblem } from './paths.js';

export { appliedFileName };

/** One pod handed to the agent: the text of its applied file. */
export interface AppliedPod {
  namespace: string;
  name: string;
  text: string;
}

type Doc = { kind?: string; metadata?: { name?: string; namespace?: string } };

/**
 * Splits manifest texts (already valid) into one applied file per pod: the pod's document as written,
 * plus the ConfigMaps and Secrets of its namespace that it names, and its RuntimeClass. Problems (errors only) are returned,
 * naming the file, document and field; nothing is split when there is one.
 */
export function splitApplied(
  files: { file: string; text: string }[],
  nodeName: string,
): { pods: AppliedPod[]; problems: ManifestProblem[]; warnings: ManifestProblem[] } {
  const problems: ManifestProblem[] = [];
  const warnings: ManifestProblem[] = [];
  const documents: { file: string; docs: unknown[] }[] = [];
  const keys = new Map<string, string>();
  for (const { file, text } of files) {
    const { parsed, docs } = parseManifestDocuments(text, { kind: 'file', path: file, display: file }, { nodeName });
    problems.push(...parsed.problems.filter((p) => p.severity === 'error'));
    warnings.push(...parsed.problems.filter((p) => p.severity === 'warning'));
    for (const lp of parsed.pods) {
      const key = podKey(lp.pod);
      const prev = keys.get(key);
      if (prev)
        problems.push({
          file,
          index: lp.source.index,
          kind: 'Pod',
          name: podMeta(lp.pod).name,
          field: 'metadata.name',
          message: `pod ${key} is defined twice (also in ${prev}); pod names must be unique per namespace`,
          severity: 'error',
        });
      keys.set(key, file);
    }
    if (parsed.problems.some((p) => p.severity === 'error')) continue;
    documents.push({ file, docs });
  }
  if (problems.length) return { pods: [], problems, warnings };
  return { pods: appliedPods(documents), problems, warnings };
}

/**
 * The applied files of manifests already read and valid, from their documents as YAML loaded them
 * (manifestSetWithDocuments): one per pod, as splitApplied makes them, the texts in the order given.
 */
export function appliedPods(documents: { file: string; docs: unknown[] }[]): AppliedPod[] {
  const raw: { doc: Doc; file: string }[] = [];
  for (const { file, docs } of documents) {
    for (const doc of docs) if (doc && typeof doc === 'object' && !Array.isArray(doc)) raw.push({ doc: doc as Doc, file });
  }
  const ns = (d: Doc) => d.metadata?.namespace || 'default';
  const pods: AppliedPod[] = [];
  for (const { doc, file } of raw.filter((r) => r.doc.kind === 'Pod')) {
    const refs = referencedObjects((doc as IPod).spec!);
    const objects = raw
      .map((r) => r.doc)
      .filter(
        (d) =>
          (ns(d) === ns(doc) &&
            ((d.kind === 'ConfigMap' && refs.configMaps.has(d.metadata?.name ?? '')) ||
              (d.kind === 'Secret' && refs.secrets.has(d.metadata?.name ?? '')))) ||
          // RuntimeClasses are cluster-scoped: the one the pod names goes with it.
          (d.kind === 'RuntimeClass' && d.metadata?.name === (doc as IPod).spec?.runtimeClassName),
      );
    const body = [doc, ...objects].map((d) => yaml.dump(d, { noRefs: true, lineWidth: -1 })).join('---\n');
    pods.push({ namespace: ns(doc), name: podMeta(doc).name, text: `${originComment(file)}${body}` });
  }
  return pods;
}

/**
 * The applied file's first line, naming the file the pod came from. The name comes from the request:
 * one with a line break (or anything but printable ASCII) is quoted and escaped as JSON escapes it,
 * so that it can never end the comment and add documents of its own.
 */
export function originComment(file: string): string {
  const shown = /^[\x20-\x7e]*$/.test(file)
    ? file
    : JSON.stringify(file).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `# handed to the podctl agent from ${shown}\n`;
}

/** Writes a new file and flushes it to the disk, so that a power loss after the rename cannot leave it empty. */
function writeDurably(path: string, text: string): void {
  // 'wx': a new file, mode 0600 whatever was there (the stale temp file is removed first).
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Flushes a directory's entries (a rename into it) to the disk. */
function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

interface AppliedFile {
  /** The text last read (or written): the same text again is not parsed again. */
  text?: string;
  /** The last good version's pods (none yet when the file was never read valid). */
  pods: IPod[];
  objects: SourceObjects;
  /** The file's mtime when its last good version was read: when its ConfigMaps and Secrets were written. */
  mtimeMs?: number;
  error?: string;
}

type ReadResult = { pods: IPod[]; objects: SourceObjects } | { error: string };

export interface AppliedSourceOptions {
  dir: string;
  nodeName: string;
  clock: Clock;
  /** Re-read for hand edits (the file source's 20 s). */
  resyncMs?: number;
  onSnapshot(pods: IPod[], objects: SourceObjects): void;
  /** A file that cannot be read or is invalid; pod: the pod its name stands for, when it names one. */
  onError(file: string, message: string, pod?: { namespace: string; name: string }): void;
  /** Writes a new temp file durably (tests inject a full disk); default: write, fsync, close. */
  writeFile?: (path: string, text: string) => void;
}

/**
 * The agent's own config source: the pods handed to it, one file per pod under <root-dir>/applied.
 * Read synchronously (a handful of small files), so that a hand-over or a delete is in the loop by
 * the time the request is answered. A pod's UID comes from its namespace/name (pod/uid.ts), so the
 * same namespace/name handed over from any file is the same pod (an update, never a second pod).
 * A file holds exactly the pod its name says, with the objects it names: anything else read there
 * is refused, as a parse error is, and the last good version is kept. A file that exists but gave
 * no good version yet (at start) still claims its pod (unreadable): the agent keeps it as it runs.
 */
export class AppliedSource {
  private readonly files = new Map<string, AppliedFile>();
  private timer?: TimerHandle;
  private stopped = true;

  constructor(private readonly opts: AppliedSourceOptions) {}

  start(): void {
    mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    // A write cut short before its rename (the agent holds the root dir's lock: no write of another is under way).
    for (const n of readdirSync(this.opts.dir)) if (n.endsWith('.yaml.tmp')) rmSync(join(this.opts.dir, n), { force: true });
    this.stopped = false;
    this.sync();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
  }

  /** The pod's applied file; throws UnsafePathError for a namespace or name that is not DNS-1123. */
  pathOf(namespace: string, name: string): string {
    return appliedFilePath(this.opts.dir, namespace, name);
  }

  /**
   * Writes the pods' files, all or none, then reads the directory. Each text is first read as the
   * agent reads it back (exactly its pod, valid), then written to a temp file flushed to the disk
   * (0600: they may hold Secrets); only once every one is written are they renamed into place and
   * the directory flushed. A failure (a full disk) removes the temp files, changes nothing, and
   * throws naming the file.
   */
  write(pods: AppliedPod[]): void {
    mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    const staged: { path: string; tmp: string; text: string; read: { pods: IPod[]; objects: SourceObjects } }[] = [];
    try {
      for (const p of pods) {
        const path = this.pathOf(p.namespace, p.name);
        const read = this.read(path, p.text);
        if ('error' in read) throw new Error(`${read.error}\n(nothing was handed over)`);
        const tmp = `${path}.tmp`;
        staged.push({ path, tmp, text: p.text, read });
        rmSync(tmp, { force: true });
        try {
          (this.opts.writeFile ?? writeDurably)(tmp, p.text);
        } catch (err) {
          throw new Error(`cannot write ${path}: ${(err as Error).message}; nothing was handed over`);
        }
      }
    } catch (err) {
      for (const s of staged) rmSync(s.tmp, { force: true });
      throw err;
    }
    for (const s of staged) renameSync(s.tmp, s.path);
    fsyncDir(this.opts.dir);
    // Read already, as written: the sync below finds the same text and does not parse it again.
    for (const s of staged) this.files.set(s.path, { text: s.text, mtimeMs: statSync(s.path).mtimeMs, ...s.read });
    this.sync();
  }

  /** Forgets a pod: removes its file; false when it had none. Throws UnsafePathError for an invalid namespace or name. */
  remove(namespace: string, name: string): boolean {
    const path = this.pathOf(namespace, name);
    const had = this.files.has(path);
    rmSync(path, { force: true });
    this.sync();
    return had;
  }

  has(namespace: string, name: string): boolean {
    return !podRefProblem(namespace, name) && this.files.has(this.pathOf(namespace, name));
  }

  /**
   * Why this source claims the pod though it cannot hand it over: its applied file exists but was
   * not read valid (the message said so, naming the file). Undefined when it has no such file.
   */
  unreadable(namespace: string, name: string): string | undefined {
    if (podRefProblem(namespace, name)) return undefined;
    return this.files.get(this.pathOf(namespace, name))?.error;
  }

  /** A file's text read as an applied file: exactly the pod its name says, valid, with its objects; or why not. */
  private read(path: string, text: string): ReadResult {
    const ref = parseAppliedFileName(basename(path));
    if (!ref) return { error: `${path}: not an applied file (expected <namespace>_<name>.yaml, as the agent writes them)` };
    const key = `${ref.namespace}/${ref.name}`;
    if (text.trim() === '') return { error: `${path}: the file is empty (a write cut short?); expected the pod ${key}` };
    const parsed = parseManifestText(
      text,
      { kind: 'file', path },
      { nodeName: this.opts.nodeName, now: () => new Date(this.opts.clock.now()) },
    );
    const errors = parsed.problems.filter((p) => p.severity === 'error');
    if (errors.length) return { error: errors.map(formatProblem).join('\n') };
    const keys = parsed.pods.map(({ pod }) => podKey(pod));
    if (keys.length !== 1 || keys[0] !== key)
      return { error: `${path}: expected exactly the pod ${key}, found ${keys.length ? `the pod(s) ${keys.join(', ')}` : 'no pod'}` };
    const pods = parsed.pods.map(({ pod }) => {
      // Handed over through the API: no source file would bring it back once deleted.
      const annotations: Record<string, string> = { ...pod.metadata?.annotations, [CONFIG_SOURCE_ANNOTATION]: 'api' };
      delete annotations[CONFIG_FILE_ANNOTATION];
      return { ...pod, metadata: { ...pod.metadata, annotations } };
    });
    return {
      pods,
      objects: {
        configMaps: parsed.configMaps as IConfigMap[],
        secrets: parsed.secrets as ISecret[],
        runtimeClasses: parsed.runtimeClasses,
      },
    };
  }

  /** A file that cannot be read or is invalid: its last good version stays; with none, it still claims its pod. */
  private fail(path: string, problem: string, text?: string): void {
    const state = this.files.get(path) ?? { pods: [], objects: NO_OBJECTS };
    this.files.set(path, state);
    state.text = text;
    const ref = parseAppliedFileName(basename(path));
    const keep = state.pods.length
      ? `keeping the last good version of ${path}`
      : ref
        ? `no good version of ${path} read yet: pod ${ref.namespace}/${ref.name} is ` +
          `kept as it runs until the file is fixed or the pod deleted`
        : `nothing is read from ${path}`;
    const message = `${problem}\n(${keep})`;
    if (state.error !== message) this.opts.onError(path, message, ref);
    state.error = message;
  }

  /** Reads every applied file and hands the whole set over; a file turned invalid keeps its last good version. */
  sync(): void {
    let names: string[];
    try {
      names = readdirSync(this.opts.dir).filter(isManifestFileName).sort();
    } catch (err) {
      this.opts.onError(this.opts.dir, `cannot read: ${(err as Error).message}`);
      names = [];
    }
    const seen = new Set<string>();
    for (const n of names) {
      const path = join(this.opts.dir, n);
      let text: string;
      let mtimeMs: number;
      try {
        mtimeMs = statSync(path).mtimeMs;
        text = readFileSync(path, 'utf8');
      } catch (err) {
        // Gone since the listing: forgotten. Any other error: the file is there, and still claims its pod.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        seen.add(path);
        this.fail(path, `${path}: cannot read: ${(err as Error).message}`);
        continue;
      }
      seen.add(path);
      const state = this.files.get(path);
      if (state && state.text === text) continue;
      const read = this.read(path, text);
      if ('error' in read) {
        this.fail(path, read.error, text);
        continue;
      }
      this.files.set(path, { text, mtimeMs, ...read });
    }
    for (const path of [...this.files.keys()]) if (!seen.has(path)) this.files.delete(path);
    const all = [...this.files.values()];
    this.opts.onSnapshot(
      all.flatMap((f) => f.pods),
      objectsOfFiles(all),
    );
    if (!this.stopped) {
      if (this.timer) this.opts.clock.clearTimeout(this.timer);
      this.timer = this.opts.clock.setTimeout(() => this.sync(), this.opts.resyncMs ?? 20_000);
    }
  }
}
