import type { IPod } from 'kubernetes-models/v1';
import type { SourceObjects } from '../core/objects.js';
import { hygienePolicies, nodeInfoFromFlags, nodeOptionsFromFlags } from './node.js';
import { streamPodLogs } from './log-stream.js';
import { eventLine, eventWorthALine } from './render.js';
import { statusLine } from './status-line.js';
import { connect } from './runtime.js';
import { tracerFor } from './trace.js';
import { statusSummary } from '../core/status/phase.js';
import { errorMessage } from '../core/errors.js';
import { acquireStateLock } from '../core/lock.js';
import { AgentClient } from '../core/node/client.js';
import type { StandaloneNode } from '../core/node/node.js';
import { agentLogFile } from '../core/node/paths.js';
import { startAgentInBackground } from '../core/node/spawn.js';
import type { WaitFor } from '../core/node/wait.js';
import { awaitHandedOver } from './detach.js';
import { watchForRemoval } from './delete.js';
import { podKey, podMeta } from '../core/util/pod-key.js';

/** What `podctl run` does once it has its pods: hand them to the agent, or be the node until Ctrl-C. */

const stamp = () => new Date().toISOString().slice(11, 19);

/** --detach: the agent keeps the pods; wait for them as asked. */
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

/** Foreground with an agent already on the root dir: hand the pods over, follow them, take them back at exit. */
export async function handOverUntilSignal(
  log: (line: string) => void,
  agent: AgentClient,
  texts: { file: string; text: string }[],
  flags: { 'root-dir': string; 'log-root': string; quiet: boolean },
): Promise<void> {
  const refs = await agent.apply(texts);
  const info = await agent.info().catch(() => undefined);
  process.stderr.write(
    `${stamp()} handed ${refs.length} pod(s) to the agent (pid ${info?.pid ?? '?'}) on ${flags['root-dir']}; Ctrl-C takes them back\n`,
  );
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
  for (const r of refs)
    await agent.delete(r.namespace, r.name).catch((err) => process.stderr.write(`${r.namespace}/${r.name}: ${errorMessage(err)}\n`));
  // An agent that stops answering keeps nothing more to wait for.
  await Promise.race([removal.untilGone().catch(() => undefined), untilSignal()]);
  removal.cancel();
  clearInterval(poll);
  stopLogs?.();
  log(`${stamp()} stopped`);
}

/** Foreground with no agent: this process is the node (a short-lived agent serving the socket) until Ctrl-C. */
export async function runUntilSignal(
  log: (line: string) => void,
  admitted: IPod[],
  objects: SourceObjects,
  flags: {
    'root-dir': string;
    'log-root': string;
    'node-name': string;
    'allow-privileged': boolean;
    'pleg-relist-period': string;
    quiet: boolean;
    trace: boolean;
    output: string;
  } & Parameters<typeof connect>[0] &
    Parameters<typeof hygienePolicies>[0] &
    Parameters<typeof nodeInfoFromFlags>[0],
): Promise<void> {
  const lock = acquireStateLock(flags['root-dir']);
  // --trace: the trace is stdout; the status lines are left out (the workers' lines say the same).
  const tracer = tracerFor(
    flags,
    () => node?.pleg,
    (line) => log(line),
  );
  let node: StandaloneNode | undefined;
  const { client } = await connect(flags, tracer?.observeCall);
  try {
    const version = await client.version();
    // The node, and the kubelet in it, load only on this path: --detach and a hand-over never need them.
    const { StandaloneNode } = await import('../core/node/node.js');
    node = new StandaloneNode({
      ...nodeOptionsFromFlags(client, flags, version.runtimeName),
      lock,
      trace: tracer,
      hooks: {
        onError: (err) => process.stderr.write(`${stamp()} error: ${errorMessage(err)}\n`),
        onSourceError: (m) => process.stderr.write(`${stamp()} ${m}\n`),
        // A slow watcher closed by the socket API, said as the agent says it.
        onApiLog: (m) => process.stderr.write(`${stamp()} ${m}\n`),
      },
    });
  } catch (err) {
    client.close();
    lock.release();
    throw err;
  }
  const lastError = new Map<string, string>();
  node.observe({
    onStatus: ({ pod, status }) => tracer || log(statusLine(pod, status)),
    onSyncError: (pod, err) => {
      // Say each new reason once: a pod stuck in ContainerCreating must show why.
      const message = errorMessage(err);
      if (lastError.get(podMeta(pod).uid) === message) return;
      lastError.set(podMeta(pod).uid, message);
      process.stderr.write(`${stamp()} ${podKey(pod)}: ${message} (retrying with backoff)\n`);
    },
  });
  node.subscribeEvents((e) => eventWorthALine(e) && process.stderr.write(`${eventLine(e)}\n`));
  await node.start();
  const refused = node.runPods(admitted, objects);
  for (const r of refused) process.stderr.write(`${podKey(r.pod)}: rejected at admission: ${r.message}\n`);
  // By namespace/name: a pod may run under the UID of the sandbox already there (adopted).
  const keys = new Set(admitted.filter((p) => !refused.some((r) => r.pod === p)).map((p) => podKey(p)));
  const stopLogs =
    flags.quiet || flags.trace
      ? undefined
      : streamPodLogs(
          flags['log-root'],
          () => node!.pods().filter((p) => keys.has(podKey(p))),
          (line) => log(line),
        );

  await untilSignal();
  const say = (line: string) => (tracer ? process.stderr.write(`${line}\n`) : log(line));
  say(`${stamp()} stopping: terminating ${keys.size} pod(s) gracefully (Ctrl-C again to stop waiting)`);
  await Promise.race([node.stopRunPods(), untilSignal()]);
  stopLogs?.();
  await node.stop();
  client.close();
  say(`${stamp()} stopped`);
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const handler = () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolve();
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}
