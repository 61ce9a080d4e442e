import type { IPod } from 'kubernetes-models/v1';
import type { RuntimeService } from './cri/client.js';
import { AGENT_LABEL, isManagedByPodctl, MANAGED_BY_LABEL, MANAGED_BY_VALUE, podIdentityFromLabels } from './kuberuntime/labels.js';
import { hasDerivedUID } from './pod/uid.js';
import { podKey, podMeta } from './util/pod-key.js';

/**
 * The namespace/name is a pod's identity on the node (the kubelet's pod manager keys pods by full
 * name), whatever command runs it; its UID names one pod. What the runtime already holds is checked
 * before a command runs pods, so that it reaches the sandbox already there instead of making a second.
 */

/** A pod sandbox podctl made, as its labels name it. */
export interface HeldPod {
  namespace: string;
  name: string;
  uid: string;
  ready: boolean;
  createdAt: number;
  /** The agent label it was made under ('run': sync-once). */
  agent: string;
}

/** The podctl sandboxes on the runtime, newest first. */
export async function podsHeldByRuntime(runtime: Pick<RuntimeService, 'listPodSandbox'>): Promise<HeldPod[]> {
  const sandboxes = await runtime.listPodSandbox({ labelSelector: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } });
  return heldFromSandboxes(sandboxes);
}

export function heldFromSandboxes(
  sandboxes: readonly { labels?: Record<string, string>; state?: string; createdAt?: string | number | { toString(): string } }[],
): HeldPod[] {
  const held: HeldPod[] = [];
  for (const s of sandboxes) {
    if (!isManagedByPodctl(s.labels)) continue;
    const id = podIdentityFromLabels(s.labels ?? {});
    if (!id) continue;
    held.push({ ...id, ready: s.state === 'SANDBOX_READY', createdAt: Number(s.createdAt ?? 0), agent: s.labels?.[AGENT_LABEL] ?? '' });
  }
  return held.sort((a, b) => b.createdAt - a.createdAt);
}

export interface SettledPods {
  /** The pods to run, a derived UID replaced by the one of the sandbox already running under that namespace/name. */
  pods: IPod[];
  /** Pods that would make a second pod of a namespace/name, or share a UID with another pod. */
  refused: { pod: IPod; message: string }[];
}

/**
 * Each pod against what runs: a UID another namespace/name holds is refused, naming that pod; a ready
 * sandbox of the same namespace/name under another UID (an older podctl hashed the file's path into
 * the UID) is adopted when the pod's UID is derived, and refused when metadata.uid is explicit.
 */
export function settleIdentities(pods: IPod[], held: HeldPod[], nodeName: string): SettledPods {
  const out: SettledPods = { pods: [], refused: [] };
  for (const pod of pods) {
    const m = podMeta(pod);
    const key = podKey(pod);
    const other = held.find((h) => h.uid === m.uid && podKey(h) !== key);
    if (other) {
      out.refused.push({
        pod,
        message:
          `metadata.uid ${m.uid} is already the UID of pod ${podKey(other)} on ` + `this node; give this pod another metadata.uid, or none`,
      });
      continue;
    }
    const running = held.find((h) => h.ready && podKey(h) === key && h.uid !== m.uid);
    if (!running) {
      out.pods.push(pod);
    } else if (hasDerivedUID(pod, nodeName)) {
      out.pods.push({ ...pod, metadata: { ...pod.metadata, uid: running.uid } });
    } else {
      out.refused.push({
        pod,
        message:
          `pod ${key} already runs on this node with UID ${running.uid}; delete it first ` +
          `(podctl delete pod ${m.name} -n ${m.namespace}) to run it with metadata.uid ${m.uid}`,
      });
    }
  }
  return out;
}
