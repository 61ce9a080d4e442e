import { Args, Flags } from '@oclif/core';
import type { IPod } from 'kubernetes-models/v1';
import { PodctlCommand } from '../cli/base.js';
import { admitPods, loadPodsFromArgs, podsKeptByWatch } from '../cli/manifests.js';
import { admissionFlags, buildKubelet, nodeFlags, nodeInfoFromFlags } from '../cli/node.js';
import { planFlags, printPlan } from '../cli/plan.js';
import { eventLine, eventWorthALine, renderResultTable, statusLine } from '../cli/render.js';
import { connect } from '../cli/runtime.js';
import { realClock } from '../core/clock.js';
import { parseDuration } from '../core/cri/endpoint.js';
import { PodctlError, errorMessage } from '../core/errors.js';
import { SyncLoop } from '../core/loop.js';
import { allContainersRunning, notRunningReasons } from '../core/runonce.js';
import { traceFlags, tracerFor } from '../cli/trace.js';

export class Run extends PodctlCommand {
  static override summary = 'Run pods from manifests and keep them at their desired state until Ctrl-C.';
  static override description = `Runs every Pod in the given files (multi-document YAML allowed) on the CRI runtime and keeps it there:
crashed containers restart with CrashLoopBackOff, failed pulls retry with ImagePullBackOff, and state
changes are printed as they happen. Ctrl-C or SIGTERM terminates the pods gracefully (SIGTERM, the pod's
grace period, SIGKILL) and removes their sandboxes. Running the same file again while its pods run
changes nothing.`;
  static override examples = [
    '<%= config.bin %> run examples/hello.yaml',
    '<%= config.bin %> run pod.yaml --detach',
    '<%= config.bin %> run pods.yaml --detach --timeout 2m',
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
    detach: Flags.boolean({ char: 'd', summary: 'Return once every pod runs, leaving the pods running.' }),
    timeout: Flags.string({ summary: 'With --detach: how long to wait for every pod to run, e.g. 2m.', default: '5m' }),
    'pleg-relist-period': Flags.string({ summary: 'How often the runtime is relisted for changes.', default: '1s' }),
    ...traceFlags,
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Run);
    const set = await loadPodsFromArgs(argv as string[], flags['node-name']);
    const timeoutMs = parseDuration(flags.timeout, '--timeout');
    // --trace: the trace is stdout; the status lines are left out (the workers' lines say the same).
    const tracer = tracerFor(flags, () => pleg, (line) => this.log(line));
    const { client } = await connect(flags, tracer?.observeCall);
    if (flags['dry-run']) {
      const pods = admitPods(set.pods.map((p) => p.pod)).admitted;
      const code = await printPlan(client, pods, { prune: flags.prune, output: 'text', log: (t) => this.log(t) }).finally(() => client.close());
      if (code !== 0) this.exit(code);
      return;
    }
    const version = await client.version();
    const kubelet = buildKubelet(client, flags, version.runtimeName, { trace: tracer });
    tracer?.attach(kubelet);
    kubelet.objects.set('file', { configMaps: set.configMaps, secrets: set.secrets });
    const { admitted, rejected } = admitPods(set.pods.map((p) => p.pod), {
      allowPrivileged: flags['allow-privileged'],
      keptByWatch: { pods: await podsKeptByWatch(flags['root-dir']), rootDir: flags['root-dir'] },
      node: nodeInfoFromFlags(flags),
    });
    for (const r of rejected) process.stderr.write(`${r.pod.metadata!.namespace}/${r.pod.metadata!.name}: rejected at admission: ${r.message}\n`);
    if (admitted.length === 0) throw new PodctlError('no pod was admitted', { exitCode: 1 });

    const pleg = kubelet.createPleg({ relistPeriodMs: parseDuration(flags['pleg-relist-period'], '--pleg-relist-period') });
    const loop = new SyncLoop({ kubelet, pleg, clock: realClock, trace: tracer });
    const stamp = () => new Date().toISOString().slice(11, 19);
    const lastError = new Map<string, string>();
    kubelet.observe({
      onStatus: ({ pod, status }) => tracer || this.log(statusLine(pod, status)),
      onSyncError: (pod, err) => {
        // Say each new reason once: a pod stuck in ContainerCreating must show why.
        const uid = pod.metadata!.uid!;
        const message = errorMessage(err);
        if (lastError.get(uid) === message) return;
        lastError.set(uid, message);
        process.stderr.write(`${stamp()} ${pod.metadata!.namespace}/${pod.metadata!.name}: ${message} (retrying with backoff)\n`);
      },
    });
    kubelet.events.subscribe((e) => eventWorthALine(e) && process.stderr.write(`${eventLine(e)}\n`));
    loop.start();
    loop.addPods(admitted);

    if (flags.detach) {
      const ok = await this.waitRunning(kubelet, admitted, timeoutMs);
      loop.stop();
      await kubelet.workers.waitIdle();
      client.close();
      if (!ok) {
        const rows = admitted.map((pod) => {
          const status = kubelet.statuses.get(pod.metadata!.uid!);
          const running = status ? allContainersRunning(pod, status) || status.phase === 'Succeeded' : false;
          return { pod, status, ok: running, message: running ? undefined : notRunningReasons(status).message || 'not running yet' };
        });
        this.log(renderResultTable(rows));
        throw new PodctlError(`not every pod runs after ${flags.timeout}`, { hint: 'the pods are left as they are; see `podctl run` without --detach for their progress' });
      }
      return;
    }

    await this.untilSignal();
    const say = (line: string) => (tracer ? process.stderr.write(`${line}\n`) : this.log(line));
    say(`${stamp()} stopping: terminating ${admitted.length} pod(s) gracefully (Ctrl-C again to stop waiting)`);
    pleg.stop();
    const terminated = new Promise<void>((resolve) => {
      const left = new Set(admitted.map((p) => p.metadata!.uid!));
      kubelet.observe({
        onTerminated: (pod) => {
          left.delete(pod.metadata!.uid!);
          if (left.size === 0) resolve();
        },
      });
    });
    loop.removePods(admitted.map((p) => p.metadata!.uid!));
    await Promise.race([terminated, this.untilSignal()]);
    loop.stop();
    client.close();
    say(`${stamp()} stopped`);
  }

  private waitRunning(kubelet: ReturnType<typeof buildKubelet>, pods: IPod[], timeoutMs: number): Promise<boolean> {
    const done = () =>
      pods.every((pod) => {
        const status = kubelet.statuses.get(pod.metadata!.uid!);
        return status !== undefined && (allContainersRunning(pod, status) || status.phase === 'Succeeded');
      });
    return new Promise((resolve) => {
      if (done()) return resolve(true);
      const timer = setTimeout(() => {
        unobserve();
        resolve(false);
      }, timeoutMs);
      const unobserve = kubelet.observe({
        onStatus: () => {
          if (!done()) return;
          clearTimeout(timer);
          unobserve();
          resolve(true);
        },
      });
    });
  }

  private untilSignal(): Promise<void> {
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
}
