import { PodctlError } from '../core/errors.js';
import { AgentRequestError, type AgentClient } from '../core/node/client.js';

/** How often the agent's pods are read while its watch says nothing: a safety net for a watch that breaks or starts late. */
const POLL_MS = 1000;

/**
 * Asks the agent to forget the pod and waits until it has terminated and removed it (its grace
 * period, then some); false when the agent does not keep this pod, or keeps it from a watch source.
 */
export async function deleteThroughAgent(agent: Pick<AgentClient, 'pods' | 'delete' | 'watchPods'>, namespace: string, name: string, grace: number, opts: { pollMs?: number } = {}): Promise<boolean> {
  const kept = (await agent.pods()).find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
  // The agent's watch says when the pod leaves it (DELETED, as it leaves the pod list), without a
  // list of every pod read every quarter second. Opened before the delete, so that the end is not missed.
  let gone!: () => void;
  const deleted = new Promise<void>((resolve) => (gone = resolve));
  const watch = agent.watchPods(
    (e) => {
      const m = e.object?.metadata;
      if (e.type === 'DELETED' && m?.namespace === namespace && m?.name === name && (!kept?.metadata?.uid || m.uid === kept.metadata.uid)) gone();
    },
    () => undefined,
  );
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
    const deadline = Date.now() + (seconds + 60) * 1000;
    let timer: NodeJS.Timeout | undefined;
    try {
      while ((await agent.pods()).some((p) => p.metadata?.namespace === namespace && p.metadata?.name === name)) {
        if (Date.now() > deadline) throw new PodctlError(`the agent still terminates pod "${name}" after ${seconds + 60} s`);
        const pause = new Promise<'poll'>((resolve) => (timer = setTimeout(() => resolve('poll'), opts.pollMs ?? POLL_MS)));
        if ((await Promise.race([deleted.then(() => 'deleted' as const), pause])) === 'deleted') break;
      }
    } finally {
      clearTimeout(timer);
    }
    return true;
  } finally {
    watch.cancel();
  }
}
