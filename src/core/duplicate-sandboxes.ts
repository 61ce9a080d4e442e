import type { IPod } from 'kubernetes-models/v1';
import type { PodIdentity } from './kuberuntime/labels.js';
import { AGENT_LABEL, isManagedByPodctl, podIdentityFromLabels } from './kuberuntime/labels.js';
import { podKey, podMeta } from './util/pod-key.js';

/** The agent label of sync-once's pods: no node keeps them, so a node's cleanup may take them. */
const SYNC_ONCE_AGENT = 'run';

/**
 * Sandboxes of a namespace/name the node keeps under another UID: a second pod of one name, as an
 * older podctl left them (a UID hashed from each file's path). The kubelet's pod manager keys pods
 * by full name, so housekeeping removes these with the orphans. Only this node's own sandboxes and
 * sync-once's are taken: another root dir's node keeps its own.
 */
export function duplicateSandboxes(
  sandboxes: readonly { labels?: Record<string, string> }[],
  desired: Iterable<IPod>,
  agent: string,
): Map<string, PodIdentity> {
  const kept = new Map<string, string>();
  for (const pod of desired) kept.set(podKey(pod), podMeta(pod).uid);
  const out = new Map<string, PodIdentity>();
  for (const s of sandboxes) {
    if (!isManagedByPodctl(s.labels)) continue;
    const label = s.labels?.[AGENT_LABEL];
    if (label !== agent && label !== SYNC_ONCE_AGENT) continue;
    const id = podIdentityFromLabels(s.labels ?? {});
    const uid = id && kept.get(podKey(id));
    if (id && uid !== undefined && uid !== id.uid) out.set(id.uid, id);
  }
  return out;
}
