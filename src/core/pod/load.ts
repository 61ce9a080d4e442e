import yaml from 'js-yaml';
import type { IConfigMap, ISecret } from 'kubernetes-models/v1';
import { canonicalJSON } from '../util/canonical-json.js';
import { md5Hex } from '../util/md5.js';
import { applyPodDefaults } from './defaults.js';
import type { LoadedPod, ManifestProblem, Pod, PodSource } from './types.js';
import { staticPodUID } from './uid.js';
import { POD_FIELDS } from './fields.js';
import { missingReferences, setLookup } from './references.js';
import { validateDocument } from './validate.js';
import { ManifestError } from './problems.js';
import { readManifests, type ManifestText, type ReadManifests } from './read.js';
import { DNS1123_LABEL_EXPECTED, DNS1123_SUBDOMAIN_EXPECTED, isDNS1123Label, isDNS1123Subdomain } from './names.js';
import type { RuntimeClassRef } from '../objects.js';
import { podKey, podMeta } from '../util/pod-key.js';

/**
 * Integers as Kubernetes reads manifests (YAML 1.1, through go-yaml): a
 * leading 0 means octal, so `defaultMode: 0400` is 256, not 400 as YAML 1.2
 * (js-yaml's default) would have it, which would make a secret group-writable.
 */
const yaml11Int = new yaml.Type('tag:yaml.org,2002:int', {
  kind: 'scalar',
  resolve: (data: string | null) => data !== null && /^[-+]?(0|[1-9][0-9_]*|0[0-7_]+|0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+)$/.test(data),
  construct: (data: string) => {
    const clean = data.replace(/_/g, '');
    const sign = clean.startsWith('-') ? -1 : 1;
    const digits = clean.replace(/^[-+]/, '');
    if (/^0[0-7]+$/.test(digits)) return sign * parseInt(digits.slice(1), 8);
    if (digits.startsWith('0o')) return sign * parseInt(digits.slice(2), 8);
    if (digits.startsWith('0x')) return sign * parseInt(digits.slice(2), 16);
    if (digits.startsWith('0b')) return sign * parseInt(digits.slice(2), 2);
    return sign * parseInt(digits, 10);
  },
  predicate: (v: unknown) => typeof v === 'number' && Number.isInteger(v),
  represent: (v: object) => String(v),
});

/**
 * YAML 1.1 booleans, as the kubelet's YAML reader (go-yaml v2) resolves them:
 * `readOnly: yes` is true there, and `value: no` is a boolean where a string
 * belongs (an error on a cluster, so an error here too, not a silent "no").
 */
const YAML11_TRUE = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const YAML11_FALSE = new Set(['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);
const yaml11Bool = new yaml.Type('tag:yaml.org,2002:bool', {
  kind: 'scalar',
  resolve: (data: string | null) => data !== null && (YAML11_TRUE.has(data) || YAML11_FALSE.has(data)),
  construct: (data: string) => YAML11_TRUE.has(data),
  predicate: (v: unknown) => typeof v === 'boolean',
  represent: (v: object) => String(v),
});

// js-yaml exports its built-in types at run time; @types/js-yaml does not declare them.
const builtin = (yaml as unknown as { types: Record<'null' | 'float' | 'str' | 'seq' | 'map', yaml.Type> }).types;

export const MANIFEST_SCHEMA = new yaml.Schema({
  implicit: [builtin.null, yaml11Bool, yaml11Int, builtin.float],
  explicit: [builtin.str, builtin.seq, builtin.map],
});

export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';
export const CONFIG_FILE_ANNOTATION = 'podctl.io/config.file';

export interface LoadOptions {
  nodeName: string;
  now?: () => Date;
  readStdin?: () => Promise<string>;
  /** kubectl --validate=strict by default. */
  unknownFields?: 'error' | 'warn';
}

export interface ParsedManifest {
  pods: LoadedPod[];
  configMaps: IConfigMap[];
  secrets: ISecret[];
  runtimeClasses: RuntimeClassRef[];
  problems: ManifestProblem[];
}

export interface ManifestSet {
  pods: LoadedPod[];
  configMaps: IConfigMap[];
  secrets: ISecret[];
  runtimeClasses: RuntimeClassRef[];
  warnings: ManifestProblem[];
  /** The files read, absolute. */
  files: string[];
}

const SUPPORTED = new Set(['Pod', 'ConfigMap', 'Secret', 'RuntimeClass']);
/** Where the workload kinds keep the pod they make (a manifest of one is skipped, with this hint). */
const POD_TEMPLATE_OF: Record<string, string> = {
  Deployment: 'spec.template',
  ReplicaSet: 'spec.template',
  ReplicationController: 'spec.template',
  StatefulSet: 'spec.template',
  DaemonSet: 'spec.template',
  Job: 'spec.template',
  CronJob: 'spec.jobTemplate.spec.template',
};
/** The apiVersion each supported kind is read in. */
const API_VERSION_OF: Record<string, string> = { Pod: 'v1', ConfigMap: 'v1', Secret: 'v1', RuntimeClass: 'node.k8s.io/v1' };
/**
 * The typed lists whose items may leave out their kind (kubectl get -o yaml writes them with it; the kubelet's file source reads a
 * PodList).
 */
const ITEM_KIND_OF: Record<string, string> = { PodList: 'Pod', ConfigMapList: 'ConfigMap', SecretList: 'Secret' };

/**
 * One object of a manifest: a document, or an item of a v1 List (or PodList…) document, which kubectl and the kubelet read as its items.
 */
interface ManifestObject {
  doc: unknown;
  /** The YAML document it is, or is an item of. */
  index: number;
  /** Its place in the list (`items[2]`), to prefix the fields its problems name. */
  item?: string;
}

/** The documents with each list replaced by its items; a list's own problem is said once, as its document's. */
function manifestObjects(docs: unknown[], listProblem: (index: number, field: string, message: string) => void): ManifestObject[] {
  const out: ManifestObject[] = [];
  docs.forEach((doc, index) => {
    const obj = doc as { apiVersion?: unknown; kind?: unknown; items?: unknown } | null;
    const isList =
      obj !== null &&
      typeof obj === 'object' &&
      !Array.isArray(obj) &&
      obj.apiVersion === 'v1' &&
      (obj.kind === 'List' || (typeof obj.kind === 'string' && obj.kind in ITEM_KIND_OF));
    if (!isList) return void out.push({ doc, index });
    if (!Array.isArray(obj.items)) {
      return listProblem(
        index,
        'items',
        obj.items === undefined
          ? `required; expected the ${String(obj.kind)}'s objects`
          : `expected a list of objects, got ${obj.items !== null && typeof obj.items === 'object' ? 'a mapping' : JSON.stringify(obj.items)}`,
      );
    }
    const itemKind = ITEM_KIND_OF[obj.kind as string];
    obj.items.forEach((item: unknown, k: number) => {
      // A typed list's items are of its type: kind and apiVersion may be left out, as in the API's own lists.
      const typed =
        itemKind && item !== null && typeof item === 'object' && !Array.isArray(item)
          ? { kind: itemKind, apiVersion: 'v1', ...(item as object) }
          : item;
      out.push({ doc: typed, index, item: `items[${k}]` });
    });
  });
  return out;
}

/**
 * A node.k8s.io/v1 RuntimeClass, validated as the API server does what a node uses of it: a
 * name, and a handler that is a DNS label (the CRI runtime handler it selects). Its overhead
 * and scheduling belong to a cluster's admission and scheduler: warned and ignored.
 */
function runtimeClassProblems(
  doc: Record<string, unknown>,
  unknown: 'error' | 'warn',
): { field: string; message: string; severity: 'error' | 'warning' }[] {
  const out: { field: string; message: string; severity: 'error' | 'warning' }[] = [];
  const name = (doc.metadata as { name?: unknown } | undefined)?.name;
  if (typeof name !== 'string' || !isDNS1123Subdomain(name))
    out.push({ field: 'metadata.name', message: `required; expected ${DNS1123_SUBDOMAIN_EXPECTED}`, severity: 'error' });
  if (typeof doc.handler !== 'string' || !isDNS1123Label(doc.handler)) {
    out.push({
      field: 'handler',
      message: `required; expected the CRI runtime handler's name (${DNS1123_LABEL_EXPECTED}), e.g. runc or crun`,
      severity: 'error',
    });
  }
  for (const field of ['overhead', 'scheduling']) {
    if (doc[field] !== undefined)
      out.push({ field, message: 'ignored: a single node has no scheduler or RuntimeClass admission to apply it', severity: 'warning' });
  }
  for (const field of Object.keys(doc)) {
    if (!['apiVersion', 'kind', 'metadata', 'handler', 'overhead', 'scheduling'].includes(field))
      out.push({ field, message: 'unknown field', severity: unknown === 'error' ? 'error' : 'warning' });
  }
  return out;
}

/** A manifest file (or URL body) larger than this is refused before it is parsed. */
export const MAX_MANIFEST_BYTES = 8 << 20;
/**
 * The most one object may be: etcd's request limit (--max-request-bytes, 1.5 MiB by default), past
 * which the API server answers "etcdserver: request is too large" whatever the object is.
 */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;
/** The typed lists (and v1 List) whose items are objects of their own: kubectl sends each item alone. */
const LIST_KIND =
  /^kind:[ \t]*["']?(List|PodList|ConfigMapList|SecretList)["']?[ \t]*(#.*)?$|"kind"\s*:\s*"(List|PodList|ConfigMapList|SecretList)"/m;

/**
 * The documents of a text larger than one object may be whose own text is larger too, with their
 * indices as js-yaml numbers them, found without parsing: a document marker (---) at the start of a
 * line always starts a document, even inside a block or quoted scalar. A List's document may be
 * larger than an object (its items are measured once parsed); text before the first marker is a
 * document only when it holds more than comments and directives.
 */
export function oversizedDocuments(text: string, limit = MAX_OBJECT_BYTES): { index: number; bytes: number }[] {
  if (Buffer.byteLength(text) <= limit) return [];
  const pieces = text.split(/^---(?=[ \t\r\n]|$)/m);
  const first = pieces[0]!;
  const firstIsDocument = /^(?![ \t\r]*(#|%|$))/m.test(first);
  const out: { index: number; bytes: number }[] = [];
  (firstIsDocument ? pieces : pieces.slice(1)).forEach((piece, index) => {
    // UTF-8 is at most 3 bytes a UTF-16 unit: a short piece is not measured.
    if (piece.length * 3 <= limit) return;
    const bytes = Buffer.byteLength(piece);
    if (bytes > limit && !LIST_KIND.test(piece)) out.push({ index, bytes });
  });
  return out;
}

/** Why one object (a document, or an item of a List) is too large to be stored; undefined when it is not. */
function objectSizeProblem(doc: unknown): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(doc) ?? '');
  if (bytes <= MAX_OBJECT_BYTES) return undefined;
  return `the object is ${bytes} bytes as JSON (as kubectl sends it); expected at most ${MAX_OBJECT_BYTES} bytes (1.5 MiB), the most the API server stores of one object (etcd's request limit)`;
}

/**
 * What one document may expand to once its aliases are followed: nodes plus string
 * characters. A real pod is a few thousand; an alias bomb is billions.
 */
export const MAX_EXPANDED_WEIGHT = 4_000_000;

/**
 * The size of a document as a tree, aliases followed, computed over the shared graph
 * js-yaml returns (each node once, memoised), so a bomb is measured without expanding it;
 * a problem message when it is too large or refers to itself.
 */
export function expandedWeight(doc: unknown): string | undefined {
  const memo = new Map<object, number>();
  const active = new Set<object>();
  let cyclic = false;
  const weigh = (v: unknown): number => {
    if (typeof v === 'string') return 1 + v.length;
    if (v === null || typeof v !== 'object') return 1;
    const known = memo.get(v);
    if (known !== undefined) return known;
    if (active.has(v)) {
      cyclic = true;
      return 0;
    }
    active.add(v);
    let w = 1;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      w += weigh(child);
      if (w > MAX_EXPANDED_WEIGHT || cyclic) break;
    }
    active.delete(v);
    memo.set(v, w);
    return w;
  };
  const total = weigh(doc);
  if (cyclic) return 'an alias refers to a node that contains it (a recursive document); expected a tree';
  if (total > MAX_EXPANDED_WEIGHT)
    return `the document expands to more than ${MAX_EXPANDED_WEIGHT.toLocaleString('en-US')} nodes and characters once its YAML aliases are followed (an alias bomb?); refused before validation`;
  return undefined;
}

/** Splits YAML (or JSON) text into documents and validates each; pure. */
export function parseManifestText(
  text: string,
  source: { kind: PodSource['kind']; path: string; display?: string },
  opts: LoadOptions,
): ParsedManifest {
  return parseManifestDocuments(text, source, opts).parsed;
}

/**
 * parseManifestText, with the documents as YAML loaded them (before validation, which works on
 * copies: aliases still shared, nothing defaulted); none when the text is too large or not YAML.
 */
export function parseManifestDocuments(
  text: string,
  source: { kind: PodSource['kind']; path: string; display?: string },
  opts: LoadOptions,
): { parsed: ParsedManifest; docs: unknown[] } {
  const file = source.display ?? source.path;
  const out: ParsedManifest = { pods: [], configMaps: [], secrets: [], runtimeClasses: [], problems: [] };
  if (Buffer.byteLength(text) > MAX_MANIFEST_BYTES) {
    out.problems.push({
      file,
      index: -1,
      field: '',
      message: `the manifest is ${Buffer.byteLength(text)} bytes; at most ${MAX_MANIFEST_BYTES} (${MAX_MANIFEST_BYTES >> 20} MiB) are read`,
      severity: 'error',
    });
    return { parsed: out, docs: [] };
  }
  // An object the API server would never store is refused before the parse, which takes seconds and hundreds of MB on megabytes.
  const oversized = oversizedDocuments(text);
  if (oversized.length) {
    for (const { index, bytes } of oversized) {
      out.problems.push({
        file,
        index,
        field: '',
        message: `the document is ${bytes} bytes; expected at most ${MAX_OBJECT_BYTES} bytes (1.5 MiB), the most the API server stores of one object (etcd's request limit); refused before it is parsed`,
        severity: 'error',
      });
    }
    return { parsed: out, docs: [] };
  }
  let docs: unknown[];
  try {
    docs = yaml.loadAll(text, undefined, { filename: file, json: true, schema: MANIFEST_SCHEMA });
  } catch (err) {
    const e = err as yaml.YAMLException;
    // Count the documents before the error, so the message can name the one at fault.
    const separators = e.mark ? (text.slice(0, e.mark.position).match(/^---/gm) ?? []).length : 0;
    const before = Math.max(0, separators - (/^\s*---/.test(text) ? 1 : 0));
    const where = e.mark ? ` at line ${e.mark.line + 1}, column ${e.mark.column + 1}` : '';
    out.problems.push({ file, index: before, field: '', message: `invalid YAML${where}: ${e.reason ?? e.message}`, severity: 'error' });
    return { parsed: out, docs: [] };
  }
  const seen = opts.now?.() ?? new Date();
  // Aliases share nodes: bound what they expand to before anything walks a document (a list's items among them).
  const bounded = docs.map((loaded, index) => {
    const expansion = loaded === null || loaded === undefined ? undefined : expandedWeight(loaded);
    if (expansion !== undefined) out.problems.push({ file, index, field: '', message: expansion, severity: 'error' });
    return expansion === undefined ? loaded : undefined;
  });
  const objects = manifestObjects(bounded, (index, field, message) =>
    out.problems.push({ file, index, kind: 'List', field, message, severity: 'error' }),
  );
  objects.forEach(({ doc: loaded, index, item }) => {
    if (loaded === null || loaded === undefined) return;
    // Then unshared: validation and defaults work on a copy of each object.
    const doc: unknown = typeof loaded === 'object' ? structuredClone(loaded) : loaded;
    const at = (field: string) =>
      item === undefined ? field : field === '' ? item : field.startsWith('[') ? `${item}${field}` : `${item}.${field}`;
    const problem = (field: string, message: string, severity: 'error' | 'warning' = 'error', kind?: string, name?: string) =>
      out.problems.push({ file, index, kind, name, field: at(field), message, severity });
    if (typeof doc !== 'object' || Array.isArray(doc)) {
      problem('', `expected a Kubernetes object (a mapping with apiVersion and kind), got ${Array.isArray(doc) ? 'a list' : typeof doc}`);
      return;
    }
    // A List's items, and what aliases expand to, are measured here: before validation, the expensive part.
    const tooLarge = objectSizeProblem(doc);
    if (tooLarge) {
      problem('', tooLarge);
      return;
    }
    const obj = doc as Record<string, unknown>;
    const kind = obj.kind;
    const apiVersion = obj.apiVersion;
    const name =
      typeof (obj.metadata as { name?: unknown } | undefined)?.name === 'string' ? (obj.metadata as { name: string }).name : undefined;
    if (typeof kind !== 'string' || kind === '') {
      problem('kind', 'required; expected Pod (or ConfigMap, Secret, RuntimeClass)');
      return;
    }
    if (typeof apiVersion !== 'string' || apiVersion === '') {
      problem('apiVersion', `required; expected ${API_VERSION_OF[kind] ?? 'v1'} for ${kind}`, 'error', kind, name);
      return;
    }
    const cased = [...SUPPORTED].find((k) => k.toLowerCase() === kind.toLowerCase());
    if (!SUPPORTED.has(kind) && cased) {
      // kind is case-sensitive: the API server knows no kind "pod" either.
      problem('kind', `"${kind}" is not a kind; did you mean ${cased}? (kinds are case-sensitive)`, 'error', kind, name);
      return;
    }
    if (!SUPPORTED.has(kind)) {
      const template = POD_TEMPLATE_OF[kind];
      const hint = template ? `; a controller makes its pods: to run one here, write a Pod of ${template}'s metadata and spec` : '';
      problem(
        'kind',
        `${kind} is not supported by podctl (only Pod, ConfigMap, Secret and RuntimeClass); skipped${hint}`,
        'warning',
        kind,
        name,
      );
      return;
    }
    if (apiVersion !== API_VERSION_OF[kind]) {
      problem('apiVersion', `"${apiVersion}" is not supported for ${kind}; expected ${API_VERSION_OF[kind]}`, 'error', kind, name);
      return;
    }
    const problems =
      kind === 'RuntimeClass'
        ? runtimeClassProblems(obj, opts.unknownFields ?? 'error')
        : validateDocument(kind as 'Pod' | 'ConfigMap' | 'Secret', obj, opts.unknownFields ?? 'error');
    for (const p of problems) problem(p.field, p.message, p.severity, kind, name);
    if (problems.some((p) => p.severity === 'error')) return;
    if (kind === 'RuntimeClass') out.runtimeClasses.push({ name: name!, handler: obj.handler as string });
    else if (kind === 'ConfigMap') out.configMaps.push(obj as unknown as IConfigMap);
    else if (kind === 'Secret') {
      const secret = normalizeSecret(obj as unknown as ISecret, (field, message) => problem(field, message, 'error', kind, name));
      if (secret) out.secrets.push(secret);
    } else {
      const podSource: PodSource = { kind: source.kind, path: source.path, index };
      const nodeName = (obj.spec as { nodeName?: unknown } | undefined)?.nodeName;
      const other = POD_FIELDS['spec.nodeName']?.except?.otherNode;
      if (typeof nodeName === 'string' && nodeName !== '' && nodeName !== opts.nodeName && other) {
        problem('spec.nodeName', `"${nodeName}" is not this host: ${other.reason} ("${opts.nodeName}")`, 'warning', kind, name);
      }
      out.pods.push({ pod: finishPod(obj as unknown as Pod, podSource, opts.nodeName, seen), source: podSource });
    }
  });
  return { parsed: out, docs: objects.map((o) => o.doc) };
}

/** stringData merges into data as base64, as the API server does; data must be base64. */
function normalizeSecret(secret: ISecret, problem: (field: string, message: string) => void): ISecret | undefined {
  const data: Record<string, string> = { ...(secret.data ?? {}) };
  let ok = true;
  for (const [k, v] of Object.entries(data)) {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) {
      problem(`data[${JSON.stringify(k)}]`, 'expected a base64-encoded value (use stringData for plain text)');
      ok = false;
    }
  }
  for (const [k, v] of Object.entries(secret.stringData ?? {})) data[k] = Buffer.from(v, 'utf8').toString('base64');
  if (!ok) return undefined;
  // The API server's checks of the two docker config types: the key is there and holds JSON.
  const dockerKey =
    secret.type === 'kubernetes.io/dockerconfigjson'
      ? '.dockerconfigjson'
      : secret.type === 'kubernetes.io/dockercfg'
        ? '.dockercfg'
        : undefined;
  if (dockerKey) {
    const value = data[dockerKey];
    if (value === undefined) {
      problem(
        `data[${JSON.stringify(dockerKey)}]`,
        `Required value: a Secret of type ${secret.type} holds its docker config under ${dockerKey}`,
      );
      return undefined;
    }
    try {
      JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
    } catch (err) {
      problem(`data[${JSON.stringify(dockerKey)}]`, `Invalid value: <secret contents redacted>: ${(err as Error).message}`);
      return undefined;
    }
  }
  const out: ISecret = { ...secret, data };
  delete out.stringData;
  return out;
}

function finishPod(raw: Pod, source: PodSource, nodeName: string, seen: Date): Pod {
  const pod = applyPodDefaults(raw);
  // Loading is what gives a pod its UID: this writes the pod's own metadata.
  const meta = (pod.metadata ??= {});
  meta.uid = raw.metadata?.uid || staticPodUID(nodeName, meta.namespace ?? 'default', meta.name ?? '');
  meta.annotations = {
    ...(meta.annotations ?? {}),
    [CONFIG_SOURCE_ANNOTATION]: source.kind === 'http' ? 'http' : 'file',
    [CONFIG_HASH_ANNOTATION]: md5Hex(canonicalJSON(raw)),
    [CONFIG_SEEN_ANNOTATION]: seen.toISOString(),
  };
  if (source.kind === 'file') meta.annotations[CONFIG_FILE_ANNOTATION] = source.path;
  // As the kubelet's static pod source: the pod runs on this node, whatever it names.
  pod.spec!.nodeName = nodeName;
  return pod;
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
        message: `pod ${key} is defined twice (also in ${prev.source.path}, document ${prev.source.index + 1}); pod names must be unique per namespace`,
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
        message: `${podMeta(lp.pod).uid} is already the UID of pod ${podKey(prev.pod)} (${prev.source.path}, document ${prev.source.index + 1}); a UID names one pod on the node`,
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
