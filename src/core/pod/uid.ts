import { createHash } from 'node:crypto';
import type { Pod, PodSource } from './types.js';

/**
 * A static pod's UID, as the kubelet derives one (config/common.go: md5 over
 * the node, the source and the pod) with one departure: the pod's content is
 * not hashed, only its namespace and name, so editing a container in the file
 * keeps the pod (and its sandbox) and replaces just that container.
 */
export function staticPodUID(nodeName: string, source: Pick<PodSource, 'kind' | 'path'>, namespace: string, name: string): string {
  const h = createHash('md5');
  h.update(`host:${nodeName}`);
  h.update(source.kind === 'http' ? `url:${source.path}` : `file:${source.path}`);
  h.update(`pod:${namespace}/${name}`);
  return h.digest('hex');
}

/** The kubelet's kubecontainer.GetPodFullName. */
export function podFullName(pod: Pod): string {
  return `${pod.metadata?.name}_${pod.metadata?.namespace ?? 'default'}`;
}
