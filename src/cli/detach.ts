import { realClock } from '../core/clock.js';
import { PodctlError } from '../core/errors.js';
import type { AgentClient } from '../core/node/client.js';
import type { AppliedPodRef } from '../core/node/node.js';
import { agentLogFile } from '../core/node/paths.js';
import { waitForPods, type WaitFor } from '../core/node/wait.js';
import { statusLine } from './status-line.js';

/**
 * The end of `run --detach`: the pods the agent now keeps, waited for. Its own module, so that the
 * hand-over to a running agent loads none of the foreground run's (src/cli/run.ts).
 */

/** --detach once the agent keeps the pods: wait for them as asked, then say where the agent is; `started` says it was started here. */
export async function awaitHandedOver(
  log: (line: string) => void,
  agent: AgentClient,
  refs: AppliedPodRef[],
  started: string,
  flags: { 'root-dir': string },
  waitFor: WaitFor,
  timeoutMs: number,
): Promise<void> {
  // The agent's pid and log for the last line, asked while the pods start rather than after.
  const agentInfo = agent.info().catch(() => undefined);
  const results = await waitForPods(agent, refs, { waitFor, timeoutMs, clock: realClock });
  for (const r of results) if (r.pod?.status) log(statusLine(r.pod, r.pod.status));
  // A pod that ran to completion is done, as a Job's pod is: said as such, not as running.
  for (const r of results) if (r.completed) log(`${r.ref.namespace}/${r.ref.name} completed`);
  const info = await agentInfo;
  const logFile = info?.log ?? agentLogFile(flags['root-dir']);
  const where = `${started ? `${started}; ` : ''}agent pid ${info?.pid ?? '?'}, log ${logFile}, API ${agent.socket}`;
  process.stderr.write(`${where}\n`);
  const failed = results.filter((r) => !r.ok);
  if (failed.length) {
    for (const f of failed) process.stderr.write(`${f.ref.namespace}/${f.ref.name}: ${f.reason}: ${f.message}\n`);
    const reasons = [...new Set(failed.map((f) => f.reason))].join(', ');
    const podFailed = failed.every((f) => f.pod?.status?.phase === 'Failed');
    const what = podFailed ? 'failed' : waitFor === 'ready' ? 'not ready' : 'not running';
    throw new PodctlError(`${failed.length} of ${results.length} pod(s) ${what} (${reasons})`, {
      hint: podFailed
        ? `a Failed pod is not started again; \`podctl logs NAME --all-containers --root-dir ${flags['root-dir']}\` shows its output, ` +
          '`podctl delete pod NAME` removes it'
        : `the agent keeps them and retries; \`podctl describe pod NAME --root-dir ${flags['root-dir']}\` says why, ` +
          '`podctl delete pod NAME` removes one',
    });
  }
}
