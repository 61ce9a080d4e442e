import { qualifiedNameProblem } from './names.js';
import { isObject } from './schema.js';

/** The pod fields a v1 fieldRef may name at all (the API server's ConvertDownwardAPIFieldLabel); spec.host is spec.nodeName's old name. */
const POD_FIELD_LABELS = new Set([
  'metadata.annotations',
  'metadata.labels',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.host',
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.serviceAccountName',
  'spec.schedulerName',
  'status.phase',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
]);
/** Of those, what an env var may take, and what a downwardAPI volume file may (metadata only). */
export const ENV_FIELD_PATHS = [
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
];
export const VOLUME_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.labels', 'metadata.annotations', 'metadata.uid'];
/** What a resourceFieldRef may name (and hugepages-<size> of either). */
const RESOURCE_FIELD_PATHS = [
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
];

/**
 * The API server's validateObjectFieldSelector: apiVersion v1, and a field path the place takes, or
 * one label or annotation by key (metadata.labels['app']). An env var with another path would fail
 * only when its container is created, after the pod's sandbox is up.
 */
export function checkFieldRef(ref: unknown, at: string, allowed: readonly string[], err: (field: string, message: string) => void): void {
  if (!isObject(ref)) return;
  const { apiVersion, fieldPath } = ref as { apiVersion?: unknown; fieldPath?: unknown };
  if (typeof apiVersion === 'string' && apiVersion !== 'v1')
    err(`${at}.apiVersion`, `${JSON.stringify(apiVersion)} is not supported; expected "v1"`);
  if (typeof fieldPath !== 'string') return;
  if (fieldPath === '') return err(`${at}.fieldPath`, 'required; expected a pod field such as metadata.name');
  const sub = /^(.+?)\['(.*)'\]$/s.exec(fieldPath);
  if (sub) {
    const [, path, key] = sub as unknown as [string, string, string];
    if (path !== 'metadata.labels' && path !== 'metadata.annotations')
      return err(
        `${at}.fieldPath`,
        `${JSON.stringify(fieldPath)} is invalid; only metadata.labels and metadata.annotations take a key, as metadata.labels['app']`,
      );
    const problem = qualifiedNameProblem(path === 'metadata.annotations' ? key.toLowerCase() : key);
    if (problem) err(`${at}.fieldPath`, `${JSON.stringify(fieldPath)} is invalid: the key ${problem}`);
    return;
  }
  if (allowed.includes(fieldPath === 'spec.host' ? 'spec.nodeName' : fieldPath)) return;
  const expected =
    `expected one of ${allowed.map((f) => JSON.stringify(f)).join(', ')}, ` +
    `or metadata.labels['<key>'] or metadata.annotations['<key>']`;
  err(
    `${at}.fieldPath`,
    POD_FIELD_LABELS.has(fieldPath)
      ? `${JSON.stringify(fieldPath)} is not supported here; ${expected}`
      : `${JSON.stringify(fieldPath)} is not a pod field; ${expected}`,
  );
}

/** The API server's validateContainerResourceFieldSelector: a resource it knows, and in a volume the container it is of. */
export function checkResourceFieldRef(ref: unknown, at: string, inVolume: boolean, err: (field: string, message: string) => void): void {
  if (!isObject(ref)) return;
  const { resource, containerName } = ref as { resource?: unknown; containerName?: unknown };
  if (inVolume && (containerName === undefined || containerName === ''))
    err(`${at}.containerName`, 'required in a volume; expected the name of the container whose resources are read');
  if (typeof resource !== 'string') return;
  if (RESOURCE_FIELD_PATHS.includes(resource) || /^(limits|requests)\.hugepages-.+/.test(resource)) return;
  err(
    `${at}.resource`,
    `${JSON.stringify(resource)} is not supported; expected one ` +
      `of ${RESOURCE_FIELD_PATHS.map((f) => JSON.stringify(f)).join(', ')} (or limits.hugepages-<size>, requests.hugepages-<size>)`,
  );
}
