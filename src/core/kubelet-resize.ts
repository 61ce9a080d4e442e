import type { IPod } from 'kubernetes-models/v1';
import { podRequests, type NodeInfo } from './admission.js';
import type { RuntimePodStatus } from './container/types.js';
import { podAsCreated, resizeDecision } from './kuberuntime/resize.js';

/**
 * Whether the resize the spec asks for fits this node (the kubelet's canResizePod): Infeasible
 * when the pod's new requests exceed what the node can ever allocate, Deferred when the pods
 * admitted beside it (others) leave too little now. No node info (a foreground run): always fits.
 */
export function resizePending(
  pod: IPod,
  status: RuntimePodStatus,
  node: NodeInfo | undefined,
  others: () => IPod[],
): { reason: string; message: string } | undefined {
  if (!node) return undefined;
  const running = status.containers.filter((c) => c.state === 'running');
  const resizing = running.some((cs) => {
    const c = pod.spec!.containers.find((x) => x.name === cs.name);
    return c !== undefined && resizeDecision(c, cs)?.kind === 'resize';
  });
  if (!resizing) return undefined;
  const want = podRequests(pod);
  const now = podRequests(podAsCreated(pod, status.containers));
  const requests = others().map((p) => podRequests(p));
  for (const k of ['cpu', 'memory'] as const) {
    if (want[k] <= now[k]) continue;
    if (want[k] > node.allocatable[k])
      return {
        reason: 'Infeasible',
        message: `Node didn't have enough capacity: ${k}, requested: ${want[k]}, capacity: ${node.allocatable[k]}`,
      };
    const used = requests.reduce((sum, r) => sum + r[k], 0);
    if (used + want[k] > node.allocatable[k])
      return {
        reason: 'Deferred',
        message: `Node didn't have enough resource: ${k}, requested: ${want[k]}, used: ${used}, capacity: ${node.allocatable[k]}`,
      };
  }
  return undefined;
}

/** The spec the containers keep while a resize is pending: what they were created with. */
export { podAsCreated };
