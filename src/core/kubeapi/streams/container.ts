import type { IContainerStatus, IPod } from 'kubernetes-models/v1';
import { KubeStatusError } from '../status.js';

export const DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';

const badRequest = (message: string) => new KubeStatusError(400, 'BadRequest', message);

/** Every container of the pod by name: init, regular, ephemeral (the API server's VisitContainers order). */
function containerNames(pod: IPod): string[] {
  const spec = pod.spec;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? []), ...(spec?.ephemeralContainers ?? [])].map((c) => c.name);
}

/**
 * The container a log, exec or attach request is for: the one named (it must be the pod's), else
 * the default-container annotation's, else the only one; a pod of several with none named is the
 * API server's 400.
 */
export function resolveContainer(pod: IPod, requested: string | undefined): string {
  const name = pod.metadata?.name ?? '';
  const all = containerNames(pod);
  if (requested) {
    if (!all.includes(requested)) throw badRequest(`container ${requested} is not valid for pod ${name}`);
    return requested;
  }
  const annotated = pod.metadata?.annotations?.[DEFAULT_CONTAINER_ANNOTATION];
  if (annotated && all.includes(annotated)) return annotated;
  const containers = pod.spec?.containers ?? [];
  if (containers.length === 1) return containers[0]!.name;
  if (containers.length === 0) throw badRequest(`pod ${name} does not have a container`);
  throw badRequest(`a container name must be specified for pod ${name}, choose one of: [${all.join(' ')}]`);
}

/** The container's status in the pod's status (init, regular or ephemeral). */
export function containerStatusOf(pod: IPod, container: string): IContainerStatus | undefined {
  const st = pod.status;
  return [...(st?.initContainerStatuses ?? []), ...(st?.containerStatuses ?? []), ...(st?.ephemeralContainerStatuses ?? [])].find(
    (s) => s.name === container,
  );
}

/** The runtime's ID in a status's `containerd://ID`. */
export function runtimeId(containerID: string | undefined): string | undefined {
  if (!containerID) return undefined;
  const i = containerID.indexOf('://');
  return i < 0 ? containerID : containerID.slice(i + 3);
}
