import yaml from 'js-yaml';
import type { IConfigMap, ISecret } from 'kubernetes-models/v1';
import type { RuntimeClassRef } from '../objects.js';
import { canonicalJSON } from '../util/canonical-json.js';
import { md5Hex } from '../util/md5.js';
import { applyPodDefaults } from './defaults.js';
import { POD_FIELDS } from './fields.js';
import { DNS1123_LABEL_EXPECTED, DNS1123_SUBDOMAIN_EXPECTED, isDNS1123Label, isDNS1123Subdomain } from './names.js';
import { expandedWeight, MAX_MANIFEST_BYTES, MAX_OBJECT_BYTES, objectSizeProblem, oversizedDocuments } from './object-limits.js';
import type { LoadedPod, ManifestProblem, Pod, PodSource } from './types.js';
import { staticPodUID } from './uid.js';
import { validateDocument } from './validate.js';
import { MANIFEST_SCHEMA } from './yaml-schema.js';

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
          : `expected a list of objects, ` +
              `got ${obj.items !== null && typeof obj.items === 'object' ? 'a mapping' : JSON.stringify(obj.items)}`,
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
        message:
          `the document is ${bytes} bytes; expected at most ${MAX_OBJECT_BYTES} bytes (1.5 MiB), the ` +
          `most the API server stores of one object (etcd's request limit); refused before it is parsed`,
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
