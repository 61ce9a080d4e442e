import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import type { IConfigMap, IPod, ISecret } from 'kubernetes-models/v1';
import type { Clock, TimerHandle } from '../clock.js';
import { NO_OBJECTS, type SourceObjects } from '../objects.js';
import { CONFIG_FILE_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../pod/load.js';
import { formatProblem, isManifestFileName, parseManifestDocuments, parseManifestText, type ManifestProblem } from '../pod/index.js';
import { referencedObjects } from '../pod/references.js';
import { podKey, podMeta } from '../util/pod-key.js';
import { appliedFileName } from './paths.js';

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
export function splitApplied(files: { file: string; text: string }[], nodeName: string): { pods: AppliedPod[]; problems: ManifestProblem[]; warnings: ManifestProblem[] } {
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
      if (prev) problems.push({ file, index: lp.source.index, kind: 'Pod', name: podMeta(lp.pod).name, field: 'metadata.name', message: `pod ${key} is defined twice (also in ${prev}); pod names must be unique per namespace`, severity: 'error' });
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
          (ns(d) === ns(doc) && ((d.kind === 'ConfigMap' && refs.configMaps.has(d.metadata?.name ?? '')) || (d.kind === 'Secret' && refs.secrets.has(d.metadata?.name ?? '')))) ||
          // RuntimeClasses are cluster-scoped: the one the pod names goes with it.
          (d.kind === 'RuntimeClass' && d.metadata?.name === (doc as IPod).spec?.runtimeClassName),
      );
    const body = [doc, ...objects].map((d) => yaml.dump(d, { noRefs: true, lineWidth: -1 })).join('---\n');
    pods.push({ namespace: ns(doc), name: podMeta(doc).name, text: `# handed to the podctl agent from ${file}\n${body}` });
  }
  return pods;
}

interface AppliedFile {
  pods: IPod[];
  objects: SourceObjects;
  error?: string;
}

export interface AppliedSourceOptions {
  dir: string;
  nodeName: string;
  clock: Clock;
  /** Re-read for hand edits (the file source's 20 s). */
  resyncMs?: number;
  onSnapshot(pods: IPod[], objects: SourceObjects): void;
  onError(file: string, message: string): void;
}

/**
 * The agent's own config source: the pods handed to it, one file per pod under <root-dir>/applied.
 * Read synchronously (a handful of small files), so that a hand-over or a delete is in the loop by
 * the time the request is answered. A pod's UID comes from its applied file's path, so the same
 * namespace/name handed over from any file is the same pod (an update, never a second pod).
 */
export class AppliedSource {
  private readonly files = new Map<string, AppliedFile>();
  private timer?: TimerHandle;
  private stopped = true;

  constructor(private readonly opts: AppliedSourceOptions) {}

  start(): void {
    mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    this.stopped = false;
    this.sync();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
  }

  pathOf(namespace: string, name: string): string {
    return join(this.opts.dir, appliedFileName(namespace, name));
  }

  /** Writes the pods' files (each atomically, 0600: they may hold Secrets), then reads the directory. */
  write(pods: AppliedPod[]): void {
    mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    for (const p of pods) {
      const path = this.pathOf(p.namespace, p.name);
      writeFileSync(`${path}.tmp`, p.text, { mode: 0o600 });
      renameSync(`${path}.tmp`, path);
    }
    this.sync();
  }

  /** Forgets a pod: removes its file; false when it had none. */
  remove(namespace: string, name: string): boolean {
    const path = this.pathOf(namespace, name);
    const had = this.files.has(path);
    rmSync(path, { force: true });
    this.sync();
    return had;
  }

  has(namespace: string, name: string): boolean {
    return this.files.has(this.pathOf(namespace, name));
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
      seen.add(path);
      const state = this.files.get(path) ?? { pods: [], objects: NO_OBJECTS };
      this.files.set(path, state);
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch {
        this.files.delete(path);
        continue;
      }
      const parsed = parseManifestText(text, { kind: 'file', path }, { nodeName: this.opts.nodeName, now: () => new Date(this.opts.clock.now()) });
      const errors = parsed.problems.filter((p) => p.severity === 'error');
      if (errors.length) {
        const message = `${errors.map(formatProblem).join('\n')}\n(keeping the last good version of ${path})`;
        if (state.error !== message) this.opts.onError(path, message);
        state.error = message;
        continue;
      }
      state.error = undefined;
      state.pods = parsed.pods.map(({ pod }) => {
        // Handed over through the API: no source file would bring it back once deleted.
        const annotations: Record<string, string> = { ...pod.metadata?.annotations, [CONFIG_SOURCE_ANNOTATION]: 'api' };
        delete annotations[CONFIG_FILE_ANNOTATION];
        return { ...pod, metadata: { ...pod.metadata, annotations } };
      });
      state.objects = { configMaps: parsed.configMaps as IConfigMap[], secrets: parsed.secrets as ISecret[], runtimeClasses: parsed.runtimeClasses };
    }
    for (const path of [...this.files.keys()]) if (!seen.has(path)) this.files.delete(path);
    const all = [...this.files.values()];
    this.opts.onSnapshot(
      all.flatMap((f) => f.pods),
      { configMaps: all.flatMap((f) => f.objects.configMaps), secrets: all.flatMap((f) => f.objects.secrets), runtimeClasses: all.flatMap((f) => f.objects.runtimeClasses ?? []) },
    );
    if (!this.stopped) {
      if (this.timer) this.opts.clock.clearTimeout(this.timer);
      this.timer = this.opts.clock.setTimeout(() => this.sync(), this.opts.resyncMs ?? 20_000);
    }
  }
}
