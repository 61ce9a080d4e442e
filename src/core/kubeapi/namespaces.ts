import { createHash } from 'node:crypto';
import type { INamespace } from 'kubernetes-models/v1';

/**
 * The Namespaces this node serves: default, always, and each namespace a pod is in. podctl has no
 * namespace objects of its own, so each is made as the API server keeps it: phase Active, the
 * kubernetes.io/metadata.name label its admission sets, the kubernetes finalizer, and a UID that is the
 * same for the same name on every call.
 */

/** A stable UID for a namespace's name: a UUID (version 5 layout) from its SHA-1. */
function namespaceUid(name: string): string {
  const h = createHash('sha1').update(`podctl/namespace/${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** A DNS label (RFC 1123), as a namespace's name must be. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * v1 Namespaces for default and `namespacesInUse`, sorted by name, each created at `created` (epoch ms:
 * when this node began serving them). A name that is not a DNS label is refused, naming it.
 */
export function namespaceObjects(namespacesInUse: readonly string[], created: number): INamespace[] {
  if (!Number.isFinite(created)) throw new TypeError(`namespaceObjects: created is ${String(created)}, expected epoch milliseconds`);
  const names = new Set(['default']);
  for (const n of namespacesInUse) {
    if (typeof n !== 'string' || n.length > 63 || !DNS_LABEL.test(n))
      throw new TypeError(
        `namespaceObjects: namespace ${JSON.stringify(n)} is not a DNS label (lowercase letters, digits and '-', at most 63)`,
      );
    names.add(n);
  }
  const creationTimestamp = new Date(created).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return [...names].sort().map((name) => ({
    kind: 'Namespace',
    apiVersion: 'v1',
    metadata: { name, uid: namespaceUid(name), creationTimestamp, labels: { 'kubernetes.io/metadata.name': name } },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  }));
}

/** How many objects of each resource each namespace holds: the namespaces in use, known without listing them. */
export class NamespaceCounts {
  private readonly counts = new Map<string, Map<string, number>>();

  /** An object of the resource came (1) into the namespace or went (-1) from it. */
  add(resource: string, namespace: string | undefined, by: 1 | -1): void {
    let byNamespace = this.counts.get(resource);
    if (!byNamespace) this.counts.set(resource, (byNamespace = new Map()));
    const ns = namespace ?? '';
    const n = (byNamespace.get(ns) ?? 0) + by;
    if (n > 0) byNamespace.set(ns, n);
    else byNamespace.delete(ns);
  }

  /** The namespaces an object of any of these resources is in. */
  inUse(resources: readonly string[]): Set<string> {
    const used = new Set<string>();
    for (const r of resources) for (const ns of this.counts.get(r)?.keys() ?? []) used.add(ns);
    return used;
  }
}
