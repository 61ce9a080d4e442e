import type { IPod } from 'kubernetes-models/v1';
import type { SourceObjects } from '../core/objects.js';
import { errorMessage } from '../core/errors.js';
import { acquireStateLock } from '../core/lock.js';
import type { StandaloneNode } from '../core/node/node.js';
import { podKey, podMeta } from '../core/util/pod-key.js';
import { streamPodLogs } from './log-stream.js';
import { hygienePolicies, nodeInfoFromFlags, nodeOptionsFromFlags } from './node.js';
import { eventLine, eventWorthALine } from './render.js';
import { connect } from './runtime.js';
import { say, sayRejected } from './say.js';
import { stamp, untilSignal } from './signals.js';
import { statusLine } from './status-line.js';
import { tracerFor } from './trace.js';

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
        onError: (err) => say(`${stamp()} error: ${errorMessage(err)}`),
        onSourceError: (m) => say(`${stamp()} ${m}`),
        // A slow watcher closed by the socket API, said as the agent says it.
        onApiLog: (m) => say(`${stamp()} ${m}`),
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
      say(`${stamp()} ${podKey(pod)}: ${message} (retrying with backoff)`);
    },
  });
  node.subscribeEvents((e) => eventWorthALine(e) && say(eventLine(e)));
  await node.start();
  const refused = node.runPods(admitted, objects);
  for (const r of refused) sayRejected(podKey(r.pod), r.message);
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
  const sayStop = (line: string) => (tracer ? say(line) : log(line));
  sayStop(`${stamp()} stopping: terminating ${keys.size} pod(s) gracefully (Ctrl-C again to stop waiting)`);
  await Promise.race([node.stopRunPods(), untilSignal()]);
  stopLogs?.();
  await node.stop();
  client.close();
  sayStop(`${stamp()} stopped`);
}
