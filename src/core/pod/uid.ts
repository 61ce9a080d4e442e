import { md5Hex } from '../util/md5.js';

/**
 * A static pod's UID, as the kubelet derives one (config/common.go: md5 over
 * the node, the source and the pod) with two departures: neither the pod's
 * content nor its source (the file's path, the URL) is hashed, only its
 * namespace and name. The namespace/name is the pod's identity on the node:
 * every command that runs it, from whichever file, reaches the same sandbox,
 * and editing a container replaces just that container.
 */
export function staticPodUID(nodeName: string, namespace: string, name: string): string {
  return md5Hex(`host:${nodeName}`, `pod:${namespace}/${name}`);
}

/** Whether the pod's UID is the one its namespace/name derives (not an explicit metadata.uid). */
export function hasDerivedUID(pod: { metadata?: { uid?: string; namespace?: string; name?: string } }, nodeName: string): boolean {
  const m = pod.metadata ?? {};
  return m.uid === staticPodUID(nodeName, m.namespace ?? 'default', m.name ?? '');
}

const RFC4122_UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX32_UID = /^[0-9a-f]{32}$/i;

/** What a manifest's metadata.uid must look like: the API server's UUIDs, or the kubelet's hashed static pod UIDs. */
export const POD_UID_EXPECTED = 'a UID such as 3f2b9c1e-7d4a-4b8e-9f0a-12c34d56e78f (RFC 4122) or 32 hex digits';

/** A UID the API server or the kubelet could have given a pod; nothing else becomes a path element. */
export function isValidPodUID(uid: string): boolean {
  return RFC4122_UID.test(uid) || HEX32_UID.test(uid);
}
