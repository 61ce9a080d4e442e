import type { AgentClient } from '../core/node/client.js';
import { agentLogFile } from '../core/node/paths.js';
import { startAgentInBackground } from '../core/node/spawn.js';
import type { WaitFor } from '../core/node/wait.js';
import { awaitHandedOver } from './detach.js';

/** --detach: the agent keeps the pods (started here in the background when none runs); wait for them as asked. */
export async function detachPods(
  log: (line: string) => void,
  agent: AgentClient,
  texts: { file: string; text: string }[],
  flags: { 'root-dir': string },
  waitFor: WaitFor,
  timeoutMs: number,
  nodeArgs: string[],
): Promise<void> {
  let started = '';
  if (!(await agent.running())) {
    // The agent's own default PLEG (auto: on containerd 1.6, its event service), as `podctl agent` started by hand.
    const args = [process.argv[1]!, 'agent', ...nodeArgs];
    const log = agentLogFile(flags['root-dir']);
    const a = await startAgentInBackground({
      rootDir: flags['root-dir'],
      command: process.execPath,
      args,
      env: { ...process.env, PODCTL_AGENT_LOG: log },
    });
    started = `started the agent (pid ${a.pid}) on ${flags['root-dir']}`;
  }
  return awaitHandedOver(log, agent, await agent.apply(texts), started, flags, waitFor, timeoutMs);
}
