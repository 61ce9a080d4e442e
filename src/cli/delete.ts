import { PodctlError } from '../core/errors.js';
import { AgentRequestError, type AgentClient } from '../core/node/client.js';

/** How often the agent's pods are read while its watch says nothing: a safety net for a watch that breaks or has not started. */
const POLL_MS = 1000;

/** A pod the agent keeps; by namespace and name, and by UID when known. */
export interface AgentPodRef {
  namespace: string;
  name: string;
  uid?: string;
}

/**
 * Watches the agent for these pods' end: DELETED on its watch, which the agent sends as it drops a
 * pod from its list. Opened before the pods are deleted, so that no end is missed. untilGone
 * resolves once none of them is on the agent, without reading the list of every pod again and
 * again; the list is still read every pollMs, for a watch that breaks (or an agent without one).
 */
export function watchForRemoval(
  agent: Pick<AgentClient, 'pods' | 'watchPods'>,
  refs: AgentPodRef[],
  opts: { pollMs?: number } = {},
): { untilGone(deadline?: { at: number; error: () => Error }): Promise<void>; cancel(): void } {
  const removed = new Set<AgentPodRef>();
  let wake: (() => void) | undefined;
  const watch = agent.watchPods(
    (e) => {
      const m = e.object?.metadata;
      if (e.type !== 'DELETED' || !m) return;
      const ref = refs.find((r) => m.namespace === r.namespace && m.name === r.name && (!r.uid || m.uid === r.uid));
      if (!ref) return;
      removed.add(ref);
      wake?.();
    },
    () => undefined,
  );
  return {
    async untilGone(deadline) {
      for (;;) {
        if (refs.every((r) => removed.has(r))) return;
        const listed = await agent.pods();
        if (!refs.some((r) => !removed.has(r) && listed.some((p) => p.metadata?.namespace === r.namespace && p.metadata?.name === r.name)))
          return;
        if (deadline && Date.now() > deadline.at) throw deadline.error();
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, opts.pollMs ?? POLL_MS);
        });
        clearTimeout(timer);
        wake = undefined;
      }
    },
    cancel: () => watch.cancel(),
  };
}

/**
 * Asks the agent to forget the pod and waits until it has terminated and removed it (its grace
 * period, then some); false when the agent does not keep this pod, or keeps it from a watch source.
 */
export async function deleteThroughAgent(
  agent: Pick<AgentClient, 'pods' | 'delete' | 'watchPods'>,
  namespace: string,
  name: string,
  grace: number,
  opts: { pollMs?: number } = {},
): Promise<boolean> {
  const kept = (await agent.pods()).find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
  const removal = watchForRemoval(agent, [{ namespace, name, uid: kept?.metadata?.uid }], opts);
  try {
    try {
      await agent.delete(namespace, name, grace);
    } catch (err) {
      // 404: not the agent's; 405: a status server that takes no deletes; 409: its watch PATH or URL keeps it
      // (deleted here, with the warning that it comes back).
      if (err instanceof AgentRequestError && [404, 405, 409].includes(err.status)) return false;
      throw err;
    }
    const seconds = grace >= 0 ? grace : (kept?.spec?.terminationGracePeriodSeconds ?? 30);
    await removal.untilGone({
      at: Date.now() + (seconds + 60) * 1000,
      error: () => new PodctlError(`the agent still terminates pod "${name}" after ${seconds + 60} s`),
    });
    return true;
  } finally {
    removal.cancel();
  }
}
