import type { IPod } from 'kubernetes-models/v1';
import { statusSummary } from '../core/status/phase.js';
import { errorMessage } from '../core/errors.js';
import type { AgentClient } from '../core/node/client.js';
import { podMeta } from '../core/util/pod-key.js';
import { watchForRemoval } from './delete.js';
import { streamPodLogs } from './log-stream.js';
import { say } from './say.js';
import { stamp, untilSignal } from './signals.js';
import { statusLine } from './status-line.js';

/** Foreground with an agent already on the root dir: hand the pods over, follow them, take them back at exit. */
export async function handOverUntilSignal(
  log: (line: string) => void,
  agent: AgentClient,
  texts: { file: string; text: string }[],
  flags: { 'root-dir': string; 'log-root': string; quiet: boolean },
): Promise<void> {
  const refs = await agent.apply(texts);
  const info = await agent.info().catch(() => undefined);
  say(`${stamp()} handed ${refs.length} pod(s) to the agent (pid ${info?.pid ?? '?'}) on ${flags['root-dir']}; Ctrl-C takes them back`);
  const mine = (p: IPod) => refs.some((r) => r.namespace === p.metadata?.namespace && r.name === p.metadata?.name);
  let pods: IPod[] = [];
  const last = new Map<string, string>();
  const poll = setInterval(() => {
    agent
      .pods()
      .then((all) => {
        pods = all.filter(mine);
        for (const p of pods) {
          if (!p.status || last.get(podMeta(p).uid) === statusSummary(p.status)) continue;
          last.set(podMeta(p).uid, statusSummary(p.status));
          log(statusLine(p, p.status));
        }
      })
      .catch(() => undefined);
  }, 500);
  const stopLogs = flags.quiet
    ? undefined
    : streamPodLogs(
        flags['log-root'],
        () => pods,
        (line) => log(line),
      );
  await untilSignal();
  log(`${stamp()} stopping: terminating ${refs.length} pod(s) gracefully (Ctrl-C again to stop waiting)`);
  const removal = watchForRemoval(agent, refs);
  for (const r of refs) await agent.delete(r.namespace, r.name).catch((err) => say(`${r.namespace}/${r.name}: ${errorMessage(err)}`));
  // An agent that stops answering keeps nothing more to wait for.
  await Promise.race([removal.untilGone().catch(() => undefined), untilSignal()]);
  removal.cancel();
  clearInterval(poll);
  stopLogs?.();
  log(`${stamp()} stopped`);
}
