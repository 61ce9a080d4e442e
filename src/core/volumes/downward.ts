import type { IContainer, IPod } from 'kubernetes-models/v1';
import { bytes, milliCPU, parseQuantity } from '../util/quantity.js';
import { PayloadError } from './errors.js';

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const NAMED_ESCAPES: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\\': '\\\\',
  '"': '\\"',
};

/** Go's strconv.Quote (fmt %q), which the kubelet uses for label and annotation values. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (NAMED_ESCAPES[ch]) out += NAMED_ESCAPES[ch];
    else if (PRINTABLE.test(ch)) out += ch;
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    // A lone surrogate is invalid UTF-8 in Go's eyes and becomes U+FFFD there.
    else if (cp >= 0xd800 && cp <= 0xdfff) out += '\\ufffd';
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** The kubelet's fieldpath.FormatMap: sorted key="value" lines, no trailing newline. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${goQuote(m![k]!)}`)
    .join('\n');
}

/** The fieldRef paths Kubernetes accepts in a downwardAPI volume (validVolumeDownwardAPIFieldPathExpressions). */
export const VOLUME_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'metadata.labels', 'metadata.annotations'];

const SUBSCRIPT = /^metadata\.(labels|annotations)\['(.*)'\]$/;

/** The value of a downwardAPI volume item's fieldRef, as ExtractFieldPathAsString. */
export function volumeFieldValue(pod: IPod, fieldPath: string): string {
  const m = pod.metadata ?? {};
  const sub = SUBSCRIPT.exec(fieldPath);
  if (sub) {
    const map = sub[1] === 'labels' ? m.labels : m.annotations;
    return map?.[sub[2]!] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return m.name ?? '';
    case 'metadata.namespace':
      return m.namespace ?? 'default';
    case 'metadata.uid':
      return m.uid ?? '';
    case 'metadata.labels':
      return formatMap(m.labels);
    case 'metadata.annotations':
      return formatMap(m.annotations);
  }
  // Kubernetes' validation rejects every other path in a volume (status.podIP, spec.nodeName are env-only).
  throw new PayloadError(
    `fieldRef "${fieldPath}" is not supported in a downwardAPI volume ` +
      `(supported: ${VOLUME_FIELD_PATHS.join(', ')}, metadata.labels['<key>'], metadata.annotations['<key>'])`,
  );
}

/** Node allocatable, used for a limit the container leaves unset (the kubelet's MergeContainerResourceLimits). */
export interface Allocatable {
  cpuCores: number;
  memoryBytes: number;
  ephemeralStorageBytes: number;
}

function findContainer(pod: IPod, name: string): IContainer | undefined {
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find((c) => c.name === name);
}

/** The value of a resourceFieldRef, as ExtractContainerResourceValue: ceil(value / divisor), cpu in millicores. */
export function resourceFieldValue(
  pod: IPod,
  ref: { containerName?: string; resource: string; divisor?: string | number },
  node: Allocatable,
): string {
  if (!ref.containerName) throw new PayloadError(`resourceFieldRef "${ref.resource}": containerName is required in a volume`);
  const c = findContainer(pod, ref.containerName);
  if (!c) throw new PayloadError(`container ${ref.containerName} not found`);
  const limits = c.resources?.limits ?? {};
  const requests = c.resources?.requests ?? {};
  const [kind, resource] = ref.resource.split('.', 2) as [string, string];
  const isCPU = resource === 'cpu';
  if ((kind !== 'limits' && kind !== 'requests') || !['cpu', 'memory', 'ephemeral-storage'].includes(resource)) {
    throw new PayloadError(`unsupported container resource : ${ref.resource}`);
  }
  const raw = kind === 'limits' ? limits[resource] : requests[resource];
  let value: number;
  if (isCPU) value = milliCPU(raw) ?? (kind === 'limits' ? Math.ceil(node.cpuCores * 1000) : 0);
  else if (resource === 'memory') value = bytes(raw) ?? (kind === 'limits' ? node.memoryBytes : 0);
  else value = bytes(raw) ?? (kind === 'limits' ? node.ephemeralStorageBytes : 0);
  const divisorValue = parseQuantity(ref.divisor ?? '1');
  if (divisorValue === undefined || divisorValue <= 0)
    throw new PayloadError(`resourceFieldRef "${ref.resource}": invalid divisor ${String(ref.divisor)}`);
  const divisor = isCPU ? Math.ceil(divisorValue * 1000 - 1e-9) : Math.ceil(divisorValue - 1e-9);
  return String(Math.ceil(value / divisor));
}
