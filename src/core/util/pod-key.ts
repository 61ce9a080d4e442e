import type { IPod } from 'kubernetes-models/v1';

type ObjectMeta = NonNullable<IPod['metadata']>;
type Named = { namespace?: string; name?: string };

/**
 * A pod's key, namespace/name, as the API server and kubectl name a pod (the namespace
 * "default" when unset). Takes a pod (its metadata) or any reference with namespace and name.
 */
export function podKey(pod: { metadata?: Named } | Named): string {
  const m: Named = ('metadata' in pod ? (pod as { metadata?: Named }).metadata : (pod as Named)) ?? {};
  return `${m.namespace ?? 'default'}/${m.name ?? ''}`;
}

/** A loaded pod's metadata: loading gave every pod a name, a namespace and a UID. */
export type PodMeta = ObjectMeta & { name: string; namespace: string; uid: string };

/**
 * The metadata of a pod that came through loading (or was rebuilt from the runtime's labels),
 * typed as such. A pod without them never gets this far; '' stands in rather than a crash.
 */
export function podMeta(pod: { metadata?: ObjectMeta }): PodMeta {
  const m = pod.metadata ?? {};
  if (m.name !== undefined && m.namespace !== undefined && m.uid !== undefined) return m as PodMeta;
  return { ...m, name: m.name ?? '', namespace: m.namespace ?? 'default', uid: m.uid ?? '' };
}
