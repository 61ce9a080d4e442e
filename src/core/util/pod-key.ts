type Named = { namespace?: string; name?: string };

/**
 * A pod's key, namespace/name, as the API server and kubectl name a pod (the namespace
 * "default" when unset). Takes a pod (its metadata) or any reference with namespace and name.
 */
export function podKey(pod: { metadata?: Named } | Named): string {
  const m: Named = ('metadata' in pod ? (pod as { metadata?: Named }).metadata : (pod as Named)) ?? {};
  return `${m.namespace ?? 'default'}/${m.name ?? ''}`;
}
