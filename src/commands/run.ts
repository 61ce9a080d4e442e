import { Args, Flags } from '@oclif/core';
import type { IPod } from 'kubernetes-models/v1';
import { PodctlCommand } from '../cli/base.js';
import { admitPods, loadPodsFromArgs } from '../cli/manifests.js';
import { admissionFlags, agentArgs, hygienePolicies, nodeFlags, nodeInfoFromFlags, nodeOptionsFromFlags } from '../cli/node.js';
import { planFlags, printPlan, withAgentUIDs } from '../cli/plan.js';
import { streamPodLogs } from '../cli/log-stream.js';
import { eventLine, eventWorthALine, statusLine } from '../cli/render.js';
import { connect } from '../cli/runtime.js';
import { statusSummary } from '../core/kubelet.js';
import { realClock } from '../core/clock.js';
import { parseDuration } from '../core/cri/endpoint.js';
import { PodctlError, errorMessage } from '../core/errors.js';
import { acquireStateLock } from '../core/lock.js';
import { AgentClient, StandaloneNode, agentLogFile, startAgentInBackground, waitForPods, type AppliedPodRef, type WaitFor } from '../core/node/index.js';
import { traceFlags, tracerFor } from '../cli/trace.js';

const stamp = () => new Date().toISOString().slice(11, 19);

export class Run extends PodctlCommand {
  static override summary = 'Run pods from manifests: until Ctrl-C, or (--detach) handed to the node agent that keeps them.';
  static override description = `Runs every Pod in the given files (multi-document YAML allowed) and keeps it at its desired state:
crashed containers restart with CrashLoopBackOff, failed pulls retry with ImagePullBackOff, probes run.
In the foreground, the pods run until Ctrl-C or SIGTERM, then terminate gracefully (SIGTERM, the pod's grace
period, SIGKILL) and are removed; meanwhile run serves the agent API on <root-dir>/podctl.sock (so get, describe
and events see what it sees) and streams the containers' output as "pod/container | line" (--quiet: not).
When an agent already runs on the root dir, the pods are handed to it and taken back at exit.
--detach hands the pods to the node agent (starting it in the background when none runs: log in
<root-dir>/agent.log) and returns once each pod runs (--wait=ready: is Ready; none: at once); it exits 1 naming
the reason when a pod cannot start (ErrImagePull, CreateContainerConfigError, ...). Handing over the same
namespace/name again, from any file, updates that pod (containers replaced as \`podctl plan\` shows).
Manifests are validated first: an invalid one hands nothing over.`;
  static override examples = [
    '<%= config.bin %> run examples/hello.yaml',
    '<%= config.bin %> run pod.yaml --detach',
    '<%= config.bin %> run pod.yaml --detach --wait=ready --timeout 2m',
    '<%= config.bin %> run pod.yaml --dry-run',
    '<%= config.bin %> run pod.yaml --trace -o json',
  ];
  static override strict = false;
  static override args = { paths: Args.string({ description: 'Manifest files or directories (- for stdin).', required: true }) };
  static override flags = {
    ...nodeFlags,
    ...admissionFlags,
    'dry-run': Flags.boolean({ summary: 'Print the plan (as `podctl plan`) instead of running anything; exit 0 if nothing would change, 2 if something would.' }),
    prune: Flags.boolean({ ...planFlags.prune, dependsOn: ['dry-run'] }),
    detach: Flags.boolean({ char: 'd', summary: 'Hand the pods to the node agent (started in the background if none runs) and return once they run.' }),
    wait: Flags.string({ summary: 'With --detach: return once every pod is running, ready (its Ready condition), or at once (none).', options: ['running', 'ready', 'none'], default: 'running' }),
    timeout: Flags.string({ summary: 'With --detach: how long to wait, e.g. 2m.', default: '5m' }),
    quiet: Flags.boolean({ char: 'q', summary: 'In the foreground: do not stream the containers\' output.' }),
    'pleg-relist-period': Flags.string({ summary: 'How often the runtime is relisted for changes.', default: '1s' }),
    ...traceFlags,
  };

  async run(): Promise<void> {
    const { argv, flags, metadata } = this.withKubeletConfig(await this.parse(Run));
    const texts: { file: string; text: string }[] = [];
    const set = await loadPodsFromArgs(argv as string[], flags['node-name'], texts);
    const timeoutMs = parseDuration(flags.timeout, '--timeout');
    if (flags['dry-run']) {
      const { client } = await connect(flags);
      const pods = await withAgentUIDs(admitPods(set.pods.map((p) => p.pod)).admitted, flags['root-dir']);
      const code = await printPlan(client, pods, { prune: flags.prune, output: 'text', log: (t) => this.log(t) }).finally(() => client.close());
      if (code !== 0) this.exit(code);
      return;
    }
    const { admitted, rejected } = admitPods(set.pods.map((p) => p.pod), { allowPrivileged: flags['allow-privileged'], node: nodeInfoFromFlags(flags) });
    for (const r of rejected) process.stderr.write(`${r.pod.metadata!.namespace}/${r.pod.metadata!.name}: rejected at admission: ${r.message}\n`);
    if (flags.detach && rejected.length) throw new PodctlError(`${rejected.length} pod(s) rejected at admission; nothing was handed to the agent`);
    if (admitted.length === 0) throw new PodctlError('no pod was admitted', { exitCode: 1 });

    const agent = new AgentClient(flags['root-dir']);
    if (flags.detach) return this.detach(agent, texts, flags, flags.wait as WaitFor, timeoutMs, agentArgs(flags, metadata, { also: ['pleg-relist-period', 'runtime-endpoint', 'image-endpoint'] }));
    if (await agent.running()) return this.handOverUntilSignal(agent, texts, flags);
    return this.runUntilSignal(admitted, { configMaps: set.configMaps, secrets: set.secrets }, flags);
  }

  /** --detach: the agent keeps the pods; wait for them as asked. */
  private async detach(agent: AgentClient, texts: { file: string; text: string }[], flags: { 'root-dir': string }, waitFor: WaitFor, timeoutMs: number, nodeArgs: string[]): Promise<void> {
    let started = '';
    if (!(await agent.running())) {
      const args = [process.argv[1]!, 'agent', ...nodeArgs, '--pleg', 'generic'];
      const log = agentLogFile(flags['root-dir']);
      const a = await startAgentInBackground({ rootDir: flags['root-dir'], command: process.execPath, args, env: { ...process.env, PODCTL_AGENT_LOG: log } });
      started = `started the agent (pid ${a.pid}) on ${flags['root-dir']}`;
    }
    const refs = await agent.apply(texts);
    const results = await waitForPods(agent, refs, { waitFor, timeoutMs, clock: realClock });
    for (const r of results) if (r.pod?.status) this.log(statusLine(r.pod, r.pod.status));
    const info = await agent.info().catch(() => undefined);
    const where = `${started ? `${started}; ` : ''}agent pid ${info?.pid ?? '?'}, log ${info?.log ?? agentLogFile(flags['root-dir'])}, API ${agent.socket}`;
    process.stderr.write(`${where}\n`);
    const failed = results.filter((r) => !r.ok);
    if (failed.length) {
      for (const f of failed) process.stderr.write(`${f.ref.namespace}/${f.ref.name}: ${f.reason}: ${f.message}\n`);
      const reasons = [...new Set(failed.map((f) => f.reason))].join(', ');
      throw new PodctlError(`${failed.length} of ${results.length} pod(s) ${waitFor === 'ready' ? 'not ready' : 'not running'} (${reasons})`, {
        hint: `the agent keeps them and retries; \`podctl describe pod NAME --root-dir ${flags['root-dir']}\` says why, \`podctl delete pod NAME\` removes one`,
      });
    }
  }

  /** Foreground with an agent already on the root dir: hand the pods over, follow them, take them back at exit. */
  private async handOverUntilSignal(agent: AgentClient, texts: { file: string; text: string }[], flags: { 'root-dir': string; 'log-root': string; quiet: boolean }): Promise<void> {
    const refs = await agent.apply(texts);
    const info = await agent.info().catch(() => undefined);
    process.stderr.write(`${stamp()} handed ${refs.length} pod(s) to the agent (pid ${info?.pid ?? '?'}) on ${flags['root-dir']}; Ctrl-C takes them back\n`);
    const mine = (p: IPod) => refs.some((r) => r.namespace === p.metadata?.namespace && r.name === p.metadata?.name);
    let pods: IPod[] = [];
    const last = new Map<string, string>();
    const poll = setInterval(() => {
      agent
        .pods()
        .then((all) => {
          pods = all.filter(mine);
          for (const p of pods) {
            if (!p.status || last.get(p.metadata!.uid!) === statusSummary(p.status)) continue;
            last.set(p.metadata!.uid!, statusSummary(p.status));
            this.log(statusLine(p, p.status));
          }
        })
        .catch(() => undefined);
    }, 500);
    const stopLogs = flags.quiet ? undefined : streamPodLogs(flags['log-root'], () => pods, (line) => this.log(line));
    await untilSignal();
    this.log(`${stamp()} stopping: terminating ${refs.length} pod(s) gracefully (Ctrl-C again to stop waiting)`);
    for (const r of refs) await agent.delete(r.namespace, r.name).catch((err) => process.stderr.write(`${r.namespace}/${r.name}: ${errorMessage(err)}\n`));
    await Promise.race([untilGone(agent, refs), untilSignal()]);
    clearInterval(poll);
    stopLogs?.();
    this.log(`${stamp()} stopped`);
  }

  /** Foreground with no agent: this process is the node (a short-lived agent serving the socket) until Ctrl-C. */
  private async runUntilSignal(
    admitted: IPod[],
    objects: { configMaps: never[] | import('kubernetes-models/v1').IConfigMap[]; secrets: import('kubernetes-models/v1').ISecret[] },
    flags: { 'root-dir': string; 'log-root': string; 'node-name': string; 'allow-privileged': boolean; 'pleg-relist-period': string; quiet: boolean; trace: boolean; output: string } & Parameters<typeof connect>[0] &
      Parameters<typeof hygienePolicies>[0],
  ): Promise<void> {
    const lock = acquireStateLock(flags['root-dir']);
    // --trace: the trace is stdout; the status lines are left out (the workers' lines say the same).
    const tracer = tracerFor(flags, () => node?.pleg, (line) => this.log(line));
    let node: StandaloneNode | undefined;
    const { client } = await connect(flags, tracer?.observeCall);
    try {
      const version = await client.version();
      node = new StandaloneNode({
        ...nodeOptionsFromFlags(client, flags, version.runtimeName),
        lock,
        trace: tracer,
        hooks: { onError: (err) => process.stderr.write(`${stamp()} error: ${errorMessage(err)}\n`), onSourceError: (m) => process.stderr.write(`${stamp()} ${m}\n`) },
      });
    } catch (err) {
      client.close();
      lock.release();
      throw err;
    }
    const lastError = new Map<string, string>();
    node.observe({
      onStatus: ({ pod, status }) => tracer || this.log(statusLine(pod, status)),
      onSyncError: (pod, err) => {
        // Say each new reason once: a pod stuck in ContainerCreating must show why.
        const message = errorMessage(err);
        if (lastError.get(pod.metadata!.uid!) === message) return;
        lastError.set(pod.metadata!.uid!, message);
        process.stderr.write(`${stamp()} ${pod.metadata!.namespace}/${pod.metadata!.name}: ${message} (retrying with backoff)\n`);
      },
    });
    node.subscribeEvents((e) => eventWorthALine(e) && process.stderr.write(`${eventLine(e)}\n`));
    await node.start();
    const refused = node.runPods(admitted, objects);
    for (const r of refused) process.stderr.write(`${r.pod.metadata!.namespace}/${r.pod.metadata!.name}: rejected at admission: ${r.message}\n`);
    const uids = new Set(admitted.filter((p) => !refused.some((r) => r.pod === p)).map((p) => p.metadata!.uid!));
    const stopLogs = flags.quiet || flags.trace ? undefined : streamPodLogs(flags['log-root'], () => node!.pods().filter((p) => uids.has(p.metadata!.uid!)), (line) => this.log(line));

    await untilSignal();
    const say = (line: string) => (tracer ? process.stderr.write(`${line}\n`) : this.log(line));
    say(`${stamp()} stopping: terminating ${uids.size} pod(s) gracefully (Ctrl-C again to stop waiting)`);
    await Promise.race([node.stopRunPods(), untilSignal()]);
    stopLogs?.();
    await node.stop();
    client.close();
    say(`${stamp()} stopped`);
  }
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

/** Resolves once none of the pods is on the agent any more. */
async function untilGone(agent: AgentClient, refs: AppliedPodRef[]): Promise<void> {
  for (;;) {
    const pods = await agent.pods().catch(() => []);
    if (!pods.some((p) => refs.some((r) => r.namespace === p.metadata?.namespace && r.name === p.metadata?.name))) return;
    await new Promise((r) => setTimeout(r, 300));
  }
}
