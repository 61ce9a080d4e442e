import { PodctlError } from '../core/errors.js';
import { AgentRequestError, type AgentClient } from '../core/node/client.js';

/**
 * Asks the agent to forget the pod and waits until it has terminated and removed it (its grace
 * period, then some); false when the agent does not keep this pod, or keeps it from a watch source.
 */
export async function deleteThroughAgent(agent: AgentClient, namespace: string, name: string, grace: number): Promise<boolean> {
  const kept = (await agent.pods()).find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
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
  while ((await agent.pods()).some((p) => p.metadata?.namespace === namespace && p.metadata?.name === name)) {
    if (Date.now() > deadline) throw new PodctlError(`the agent still terminates pod "${name}" after ${seconds + 60} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return true;
}
