import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { nodeFlags } from '../cli/node-flags.js';
import { planFlags } from '../cli/plan-flags.js';
import { parseDuration } from '../core/util/duration.js';
import { RUN_ONCE_MAX_RETRIES } from '../core/runonce.js';
import { prose } from '../cli/prose.js';

export class SyncOnce extends PodctlCommand {
  static override summary = "Run every pod found once, as the kubelet's RunOnce: wait until each runs or fails, print a table.";
  static override description = prose`Admits and runs every Pod in the given files or directories concurrently, then checks each one until
all of its containers run (or it Succeeded), retrying SyncPod up to --max-retries times with a delay that starts at --retry-delay and
doubles. A pod that can never start in this run (a ConfigMap or Secret no document provides, an image the runtime found in no registry)
fails at once. Each change of a pod's status is printed on stderr. Exits 0 only if every pod ran. Pods are left running.`;
  static override examples = [
    '<%= config.bin %> sync-once manifests/',
    '<%= config.bin %> sync-once pod.yaml --max-retries 3 --retry-delay 500ms',
    'cat pod.yaml | <%= config.bin %> sync-once - -o yaml',
    '<%= config.bin %> sync-once manifests/ --dry-run -o json',
  ];
  static override strict = false;
  static override args = {
    paths: Args.string({ description: 'Manifest files or directories (- for stdin).', required: true, ignoreStdin: true }),
  };
  static override flags = {
    ...nodeFlags,
    'dry-run': Flags.boolean({
      summary: 'Print the plan (as `podctl plan`) instead of running anything; exit 0 if nothing would change, 2 if something would.',
    }),
    prune: Flags.boolean({ ...planFlags.prune, dependsOn: ['dry-run'] }),
    timeout: Flags.string({ summary: 'Bound on the whole run, e.g. 5m.', default: '5m' }),
    'max-retries': Flags.integer({ summary: 'SyncPod retries per pod.', default: RUN_ONCE_MAX_RETRIES, min: 0 }),
    'retry-delay': Flags.string({ summary: 'First delay between retries; doubles each time.', default: '1s' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'json', 'yaml'], default: 'table' }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.withKubeletConfig(await this.parse(SyncOnce));
    // The manifests' validators, the planner and the kubelet: loaded when sync-once runs, not with the command index.
    const [{ admitPods, loadPodsFromArgs }, { printPlan }, { connect }, { syncPodsOnce }] = await Promise.all([
      import('../cli/manifests.js'),
      import('../cli/plan.js'),
      import('../cli/runtime.js'),
      import('../cli/sync-once.js'),
    ]);
    const set = await loadPodsFromArgs(argv as string[], flags['node-name']);
    const timing = {
      timeoutMs: parseDuration(flags.timeout, '--timeout'),
      retryDelayMs: parseDuration(flags['retry-delay'], '--retry-delay'),
    };
    const { client } = await connect(flags);
    const log = (text: string) => this.log(text);
    try {
      if (flags['dry-run']) {
        const pods = admitPods(set.pods.map((p) => p.pod)).admitted;
        const output = flags.output === 'json' ? 'json' : 'text';
        const code = await printPlan(client, pods, { prune: flags.prune, output, log, nodeName: flags['node-name'] });
        if (code !== 0) this.exit(code);
        return;
      }
      const code = await syncPodsOnce(client, set, flags, timing, log);
      if (code !== 0) this.exit(code);
    } finally {
      client.close();
    }
  }
}
