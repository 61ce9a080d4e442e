// The manifest set: the texts read (read.ts), parsed into documents (documents.ts), checked as one set.
import { missingReferences, setLookup } from './references.js';
import { ManifestError } from './problems.js';
import { readManifests, type ManifestText, type ReadManifests } from './read.js';
import { parseManifestDocuments, type LoadOptions } from './documents.js';
import type { LoadedPod, ManifestProblem } from './types.js';
import type { IConfigMap, ISecret } from 'kubernetes-models/v1';
import type { RuntimeClassRef } from '../objects.js';
import { podKey, podMeta } from '../util/pod-key.js';

export {
  CONFIG_FILE_ANNOTATION,
  CONFIG_HASH_ANNOTATION,
  CONFIG_SEEN_ANNOTATION,
  CONFIG_SOURCE_ANNOTATION,
  parseManifestDocuments,
  parseManifestText,
  type LoadOptions,
  type ParsedManifest,
} from './documents.js';
export { expandedWeight, MAX_EXPANDED_WEIGHT, MAX_MANIFEST_BYTES, MAX_OBJECT_BYTES, oversizedDocuments } from './object-limits.js';
export { MANIFEST_SCHEMA } from './yaml-schema.js';

export interface ManifestSet {
  pods: LoadedPod[];
  configMaps: IConfigMap[];
  secrets: ISecret[];
  runtimeClasses: RuntimeClassRef[];
  warnings: ManifestProblem[];
  /** The files read, absolute. */
  files: string[];
}

/**
 * Loads every manifest the paths name. All problems of all files are
 * collected; if any is an error, nothing is returned (ManifestError), so no
 * pod of an invalid set is ever started.
 */
export async function loadManifests(paths: string[], opts: LoadOptions): Promise<ManifestSet> {
  return manifestSetFromTexts(await readManifests(paths, opts), opts);
}

/**
 * The manifest set of texts already read (readManifests): what loadManifests returns for the
 * same paths, with the same problems. The agent reads the texts a command hands it with this,
 * so that its answer names the files, documents and fields as the command itself would.
 */
export function manifestSetFromTexts(read: ReadManifests, opts: LoadOptions): ManifestSet {
  return manifestSetWithDocuments(read, opts).set;
}

/** A text of a valid manifest set, with its documents as YAML loaded them (before validation, which works on copies). */
export interface ManifestDocuments {
  entry: ManifestText;
  docs: unknown[];
}

/**
 * manifestSetFromTexts, with each text's documents as loaded: what the agent splits into applied
 * files, so that it parses each text once. The same problems, thrown the same way.
 */
export function manifestSetWithDocuments(read: ReadManifests, opts: LoadOptions): { set: ManifestSet; documents: ManifestDocuments[] } {
  const problems: ManifestProblem[] = [];
  const set: ManifestSet = { pods: [], configMaps: [], secrets: [], runtimeClasses: [], warnings: [], files: [] };
  const documents: ManifestDocuments[] = [];
  const displayOf = new Map<string, string>([['-', '<stdin>']]);
  for (const t of read.entries) {
    if ('problem' in t) {
      problems.push(t.problem);
      continue;
    }
    if (t.kind === 'file') {
      set.files.push(t.path);
      displayOf.set(t.path, t.display);
    }
    const { parsed, docs } = parseManifestDocuments(t.text, t, opts);
    documents.push({ entry: t, docs });
    set.pods.push(...parsed.pods);
    set.configMaps.push(...parsed.configMaps);
    set.secrets.push(...parsed.secrets);
    set.runtimeClasses.push(...parsed.runtimeClasses);
    problems.push(...parsed.problems);
  }
  // Two pods with one namespace/name would fight over one sandbox.
  const byName = new Map<string, LoadedPod>();
  for (const lp of set.pods) {
    const key = podKey(lp.pod);
    const prev = byName.get(key);
    if (prev) {
      problems.push({
        file: lp.source.path,
        index: lp.source.index,
        kind: 'Pod',
        name: podMeta(lp.pod).name,
        field: 'metadata.name',
        message:
          `pod ${key} is defined twice (also in ${prev.source.path}, ` +
          `document ${prev.source.index + 1}); pod names must be unique per namespace`,
        severity: 'error',
      });
    } else byName.set(key, lp);
  }
  // Two pods with one metadata.uid would take over each other's sandbox.
  const byUID = new Map<string, LoadedPod>();
  for (const lp of set.pods) {
    const prev = byUID.get(podMeta(lp.pod).uid);
    if (prev && podKey(prev.pod) !== podKey(lp.pod)) {
      problems.push({
        file: lp.source.path,
        index: lp.source.index,
        kind: 'Pod',
        name: podMeta(lp.pod).name,
        field: 'metadata.uid',
        message:
          `${podMeta(lp.pod).uid} is already the UID of pod ${podKey(prev.pod)} (${prev.source.path}, ` +
          `document ${prev.source.index + 1}); a UID names one pod on the node`,
        severity: 'error',
      });
    } else if (!prev) byUID.set(podMeta(lp.pod).uid, lp);
  }
  // References no document of the set provides: the pod would wait for ever.
  const lookup = setLookup(set.configMaps, set.secrets, set.runtimeClasses);
  for (const lp of set.pods) {
    for (const m of missingReferences(lp.pod, lookup)) {
      const consequence =
        m.reason === 'FailedToRetrieveImagePullSecret'
          ? ''
          : `; no document of this set provides it, so the pod would never start (${m.reason})`;
      problems.push({
        file: displayOf.get(lp.source.path) ?? lp.source.path,
        index: lp.source.index,
        kind: 'Pod',
        name: podMeta(lp.pod).name,
        field: m.field,
        message: `${m.message}${consequence}`,
        severity: 'warning',
      });
    }
  }
  const errors = problems.filter((p) => p.severity === 'error');
  if (errors.length)
    throw new ManifestError(
      errors,
      problems.filter((p) => p.severity === 'warning'),
    );
  set.warnings = problems.filter((p) => p.severity === 'warning');
  return { set, documents };
}
