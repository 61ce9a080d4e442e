import { eventLine, eventWorthALine, statusLine } from './render.js';
import { podTable } from './table.js';
import { connect, type GlobalFlags } from './runtime.js';
import { nodeOptionsFromFlags } from './node.js';
import { diskReport } from '../core/stats/disk.js';
import { tracerFor } from './trace.js';
import type { agentFlags } from './agent-flags.js';
import { sourceOptions } from './agent-sources.js';
import { sweepLostShims } from './shim-sweep.js';
import { startNodeKubeApi } from './kube-api.js';
import { errorMessage } from '../core/errors.js';
import { acquireStateLock } from '../core/lock.js';
import { Metrics } from '../core/metrics.js';
import { StandaloneNode } from '../core/node/node.js';
import { podKey, podMeta } from '../core/util/pod-key.js';

type AgentFlags = GlobalFlags & {
  [K in keyof typeof agentFlags]: K extends 'manifest-url-header'
    ? string[] | undefined
    : K extends 'manifest-url' | 'kubelet-config' | 'runtime-handler' | 'node-labels' | 'system-reserved' | 'kube-reserved'
      ? string | undefined
      : K extends 'allow-privileged' | 'cleanup-on-exit' | 'table' | 'trace' | 'kube-api'
        ? boolean
        : K extends 'kube-api-port'
          ? number | undefined
          : K extends
                | 'maximum-dead-containers-per-container'
                | 'maximum-dead-containers'
                | 'image-gc-high-threshold'
                | 'image-gc-low-threshold'
                | 'container-log-max-files'
                | 'max-pods'
            ? number
            : string;
};

/**
 * Runs the node agent in the foreground until SIGTERM or Ctrl-C: the state dir's lock, the node
 * (applied pods, plus PATH and --manifest-url when given), one line per pod state change.
 */
export async function serveAgent(
  flags: AgentFlags,
  path: string | undefined,
  log: (line: string) => void,
  podctlVersion = '0.0.0',
): Promise<void> {
  // A bad flag is refused before the state dir is locked.
  const sources = sourceOptions(flags);
  // One owner per state dir, before anything else is touched.
  const lock = acquireStateLock(flags['root-dir']);
  const metrics = new Metrics();
  // --trace: the trace is stdout; what the agent says otherwise goes to stderr, or is said by the trace.
  const tracer = tracerFor(flags, () => node?.pleg, log);
  const say = (line: string) => (tracer ? process.stderr.write(`${line}\n`) : log(line));
  const stamp = () => new Date().toISOString().slice(11, 19);
  let node: StandaloneNode | undefined;
  let sourceTraced = false;
  const { client } = await connect(flags, (call) => {
    metrics.observeCall(call);
    tracer?.observeCall(call);
  });
  let version: Awaited<ReturnType<typeof client.version>>;
  try {
    version = await client.version();
    metrics.watchDisk(() => diskReport(client, client));
    node = new StandaloneNode({
      ...nodeOptionsFromFlags(client, flags, version.runtimeName),
      pleg: flags.pleg as ConstructorParameters<typeof StandaloneNode>[0]['pleg'],
      manifestPath: path,
      ...sources,
      lock,
      logFile: process.env.PODCTL_AGENT_LOG,
      metrics,
      trace: tracer,
      hooks: {
        onPlegEvent: (e) => {
          if (tracer || e.type !== 'ContainerDied' || !e.containerName) return;
          const c = node!.pleg.cache.get(e.id)?.containers.find((x) => x.id === e.data);
          const exit = c?.exitCode === undefined ? '' : ` (exit ${c.exitCode})`;
          log(`${stamp()} ${e.namespace}/${e.name}  ContainerDied ${e.containerName}${exit}`);
        },
        onRuntimeState: (up, detail) => say(`${stamp()} runtime ${up ? 'is back' : `is down: ${detail}`}`),
        onHousekeeping: (r) => {
          if (tracer) return;
          for (const p of r.removedPods) log(`${stamp()} ${p}  removed (no source wants it)`);
        },
        onError: (err) => process.stderr.write(`${stamp()} error: ${errorMessage(err)}\n`),
        onSourceError: (message) => process.stderr.write(`${stamp()} ${message}\n`),
        onApiLog: (message) => process.stderr.write(`${stamp()} ${message}\n`),
        onConflict: (source, pod, _owner, why) => process.stderr.write(`${stamp()} ${source}: pod ${podKey(pod)} ${why}; ignored\n`),
        onPlegFallback: (reason) => {
          say(`${stamp()} PLEG: ${reason}`);
          sourceTraced = true;
          tracer?.plegSource(node?.pleg.source ?? 'relist', reason);
        },
      },
    });
  } catch (err) {
    client.close();
    lock.release();
    throw err;
  }
  const what = [path, flags['manifest-url']].filter(Boolean).join(' and ');
  const live = flags.table && process.stdout.isTTY;
  if (flags.table && !live) process.stderr.write('--table needs a terminal; printing one line per change instead\n');
  const redraw = () =>
    process.stdout.write(
      `\x1b[2J\x1b[H${stamp()} ${what ? `watching ${what}` : 'agent'}\n\n${podTable(node!.pods(), { allNamespaces: true })}\n`,
    );
  const lastError = new Map<string, string>();
  node.observe({
    onStatus: ({ pod, status }) => (tracer ? undefined : live ? redraw() : log(statusLine(pod, status))),
    onSyncError: (pod, err) => {
      const message = errorMessage(err);
      if (lastError.get(podMeta(pod).uid) === message) return;
      lastError.set(podMeta(pod).uid, message);
      process.stderr.write(`${stamp()} ${podKey(pod)}: ${message} (retrying with backoff)\n`);
    },
    onTerminated: (pod) => {
      lastError.delete(podMeta(pod).uid);
      if (!tracer) log(`${stamp()} ${podKey(pod)}  terminated and removed`);
    },
  });
  node.subscribeEvents((e) => {
    if (!eventWorthALine(e)) return;
    if (live) redraw();
    else process.stderr.write(`${eventLine(e)}\n`);
  });
  metrics.watchPlegSource(() => node!.pleg.source);
  await node.start();
  const sweeps = sweepLostShims(
    client.endpoint,
    (line) => say(`${stamp()} ${line}`),
    (line) => process.stderr.write(`${stamp()} ${line}\n`),
  );
  // The source once it has settled: a CRI without GetContainerEvents says so within milliseconds
  // (then the fallback line names the source), so the first line waits a moment instead of naming one it leaves.
  setTimeout(() => sourceTraced || tracer?.plegSource(node!.pleg.source), 1000).unref();
  let kubeApi: Awaited<ReturnType<typeof startNodeKubeApi>> | undefined;
  try {
    kubeApi = flags['kube-api']
      ? await startNodeKubeApi(flags, node, client, version, podctlVersion, (line) => say(`${stamp()} ${line}`))
      : undefined;
  } catch (err) {
    clearInterval(sweeps);
    await node.stop();
    client.close();
    throw err;
  }
  say(
    `${stamp()} ${what ? `watching ${what}; ` : ''}agent pid ${process.pid} on ${flags['root-dir']}; API on ${node.socket}` +
      (kubeApi ? `; Kubernetes API on ${kubeApi.url} (podctl kubeconfig)` : ''),
  );

  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  if (flags['cleanup-on-exit']) say(`${stamp()} stopping: terminating ${node.pods().length} pod(s)`);
  else say(`${stamp()} stopping; pods keep running (--cleanup-on-exit terminates them)`);
  clearInterval(sweeps);
  await kubeApi?.stop();
  await node.stop({ cleanup: flags['cleanup-on-exit'] });
  client.close();
}
