import { Args, Flags } from '@oclif/core';
import type { IPod } from 'kubernetes-models/v1';
import { PodctlCommand } from '../cli/base.js';
import { nodeFlags } from '../cli/node-flags.js';
import { planFlags } from '../cli/plan-flags.js';
import type { ResultRow } from '../cli/table.js';
import { parseDuration } from '../core/util/duration.js';
import { allContainersRunning, RUN_ONCE_MAX_RETRIES, runOnce } from '../core/runonce.js';
import { podKey, podMeta } from '../core/util/pod-key.js';

export class SyncOnce extends PodctlCommand {
  static override summary = "Run every pod found once, as the kubelet's RunOnce: wait until each runs or fails, print a table.";
  static override description = `Admits and runs every Pod in the given files or directories concurrently, then checks each one until all of
its containers run (or it Succeeded), retrying SyncPod up to --max-retries times with a delay that starts at
--retry-delay and doubles. Exits 0 only if every pod ran. Pods are left running.`;
  static override examples = [
    '<%= config.bin %> sync-once manifests/',
    '<%= config.bin %> sync-once pod.yaml --max-retries 3 --retry-delay 500ms',
    'cat pod.yaml | <%= config.bin %> sync-once - -o yaml',
    '<%= config.bin %> sync-once manifests/ --dry-run -o json',
  ];
  static override strict = false;
  static override args = { paths: Args.string({ description: 'Manifest files or directories (- for stdin).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...nodeFlags,
    'dry-run': Flags.boolean({ summary: 'Print the plan (as `podctl plan`) instead of running anything; exit 0 if nothing would change, 2 if something would.' }),
    prune: Flags.boolean({ ...planFlags.prune, dependsOn: ['dry-run'] }),
    timeout: Flags.string({ summary: 'Bound on the whole run, e.g. 5m.', default: '5m' }),
    'max-retries': Flags.integer({ summary: 'SyncPod retries per pod.', default: RUN_ONCE_MAX_RETRIES, min: 0 }),
    'retry-delay': Flags.string({ summary: 'First delay between retries; doubles each time.', default: '1s' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'json', 'yaml'], default: 'table' }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.withKubeletConfig(await this.parse(SyncOnce));
    // The manifests' validators, the planner and the renderers: loaded when sync-once runs, not with the command index.
    const [{ default: ora }, { admitPods, loadPodsFromArgs }, { printPlan }, { podWithStatus, renderObjects }, { renderResultTable }, { missingReferences }, { buildKubelet, nodeInfoFromFlags }, { connect }, { realClock }, keeper, identity] = await Promise.all([
      import('ora'),
      import('../cli/manifests.js'),
      import('../cli/plan.js'),
      import('../cli/render.js'),
      import('../cli/table.js'),
      import('../core/pod/index.js'),
      import('../cli/node.js'),
      import('../cli/runtime.js'),
      import('../core/clock.js'),
      import('../core/node/keeper.js'),
      import('../core/pod-identity.js'),
    ]);
    const { appliedWhileStopped, keptByMessage, podsKeptByAgent } = keeper;
    const { podsHeldByRuntime, settleIdentities } = identity;
    const set = await loadPodsFromArgs(argv as string[], flags['node-name']);
    const runTimeoutMs = parseDuration(flags.timeout, '--timeout');
    const retryDelayMs = parseDuration(flags['retry-delay'], '--retry-delay');
    const { client } = await connect(flags);
    if (flags['dry-run']) {
      const pods = admitPods(set.pods.map((p) => p.pod)).admitted;
      const output = flags.output === 'json' ? 'json' : 'text';
      const code = await printPlan(client, pods, { prune: flags.prune, output, log: (t) => this.log(t), nodeName: flags['node-name'] }).finally(() => client.close());
      if (code !== 0) this.exit(code);
      return;
    }
    try {
      const version = await client.version();
      const kubelet = await buildKubelet(client, flags, version.runtimeName);
      kubelet.objects.set('file', { configMaps: set.configMaps, secrets: set.secrets, runtimeClasses: set.runtimeClasses });
      // A pod the node on this root dir keeps is its own (the agent, a watch, a foreground run; or handed
      // to the agent, stopped now): running it here too would make a second pod of that namespace/name.
      const rootDir = flags['root-dir'];
      const kept = await podsKeptByAgent(rootDir);
      const keptBy = (pod: IPod): string | undefined => {
        const m = podMeta(pod);
        const k = kept?.get(podKey(pod));
        return k ? keptByMessage(k, rootDir) : kept ? undefined : appliedWhileStopped(rootDir, m.namespace, m.name);
      };
      const refusedHere: { pod: IPod; reason: string; message: string }[] = [];
      const free = set.pods.map((p) => p.pod).filter((pod) => {
        const message = keptBy(pod);
        if (message) refusedHere.push({ pod, reason: 'KeptByNode', message });
        return !message;
      });
      // What the runtime runs under the same namespace/name is that pod (updated, not doubled); a UID another pod holds is refused.
      const settled = settleIdentities(free, await podsHeldByRuntime(client), flags['node-name']);
      for (const r of settled.refused) refusedHere.push({ ...r, reason: 'UIDConflict' });
      const admission = admitPods(settled.pods, { allowPrivileged: flags['allow-privileged'], node: nodeInfoFromFlags(flags) });
      const admitted = admission.admitted;
      const rejected = [...refusedHere, ...admission.rejected];
      // Said whole, on one line each: the table wraps its RESULT column.
      for (const r of refusedHere) process.stderr.write(`${podKey(r.pod)}: refused: ${r.message}\n`);
      const spinner = process.stderr.isTTY && flags.output === 'table' ? ora({ text: `Running ${admitted.length} pod(s)…`, stream: process.stderr }).start() : undefined;
      const running = new Set<string>();
      const results = await runOnce(kubelet, admitted, {
        clock: realClock,
        maxRetries: flags['max-retries'],
        retryDelayMs,
        timeoutMs: runTimeoutMs,
        // The set is read once: what it does not provide now, it never will in this run.
        neverStarts: (pod) => missingReferences(pod, kubelet.objects).find((m) => m.reason !== 'FailedToRetrieveImagePullSecret'),
        onProgress: (pod, status) => {
          if (allContainersRunning(pod, status) || status.phase === 'Succeeded') running.add(podMeta(pod).uid);
          if (spinner) spinner.text = `Running ${admitted.length} pod(s)… ${running.size} done`;
        },
      });
      spinner?.stop();
      const rows: ResultRow[] = [
        ...results.map((r) => ({ pod: r.pod, status: r.status, ok: r.ok, message: r.message })),
        ...rejected.map((r) => ({ pod: r.pod, status: { phase: 'Failed' as const, reason: r.reason, message: r.message }, ok: false, message: `rejected at admission: ${r.message}` })),
      ];
      if (flags.output === 'table') this.log(renderResultTable(rows));
      else this.log(await renderObjects(rows.map((r) => podWithStatus(r.pod, r.status)), flags.output as 'json' | 'yaml'));
      const failed = rows.filter((r) => !r.ok);
      if (failed.length) {
        process.stderr.write(`Error: ${failed.length} of ${rows.length} pod(s) failed: ${failed.map((r) => podKey(r.pod)).join(', ')}\n`);
        this.exit(1);
      }
    } finally {
      client.close();
    }
  }
}
