import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { nodeFlags } from '../cli/node-flags.js';
import { planFlags } from '../cli/plan-flags.js';
import { traceFlags } from '../cli/trace-flags.js';
import { prose } from '../cli/prose.js';

// What a hand-over to a running agent needs is imported first in run() (src/cli/run.ts); the foreground run,
// the plan of --dry-run and the start of an agent are imported when that path is taken.

export class Run extends PodctlCommand {
  static override summary = 'Run pods from manifests: until Ctrl-C, or (--detach) handed to the node agent that keeps them.';
  static override description = prose`Runs every Pod in the given files (multi-document YAML allowed) and keeps it at its desired state:
crashed containers restart with CrashLoopBackOff, failed pulls retry with ImagePullBackOff, probes run.

In the foreground, the pods run until Ctrl-C or SIGTERM, then terminate gracefully (SIGTERM, the pod's grace
period, SIGKILL) and are removed; meanwhile run serves the agent API on <root-dir>/podctl.sock (so get, describe
and events see what it sees) and streams the containers' output as "pod/container | line" (--quiet: not).

When an agent already runs on the root dir, the pods are handed to it and taken back at exit.

--detach hands the pods to the node agent (starting it in the background when none runs: log in
<root-dir>/agent.log) and returns once each pod's phase is Running (--wait=ready: it is Ready; none: at once),
or it completed (phase Succeeded: exit 0); it exits 1 naming the reason when a pod failed (phase Failed: each
container's exit code and message) or cannot start (ErrImagePull, CreateContainerConfigError, ...). Handing over the same
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
  static override args = {
    paths: Args.string({ description: 'Manifest files or directories (- for stdin).', required: true, ignoreStdin: true }),
  };
  static override flags = {
    ...nodeFlags,
    'dry-run': Flags.boolean({
      summary: 'Print the plan (as `podctl plan`) instead of running anything; exit 0 if nothing would change, 2 if something would.',
    }),
    prune: Flags.boolean({ ...planFlags.prune, dependsOn: ['dry-run'] }),
    detach: Flags.boolean({
      char: 'd',
      summary: 'Hand the pods to the node agent (started in the background if none runs) and return once they run.',
    }),
    wait: Flags.string({
      summary:
        'With --detach: return once every pod is running (its phase), ready (its Ready condition), or at once (none); ' +
        'a pod that completed or failed ends the wait too.',
      options: ['running', 'ready', 'none'],
      default: 'running',
    }),
    timeout: Flags.string({ summary: 'With --detach: how long to wait, e.g. 2m.', default: '5m' }),
    quiet: Flags.boolean({ char: 'q', summary: "In the foreground: do not stream the containers' output." }),
    'pleg-relist-period': Flags.string({ summary: 'How often the runtime is relisted for changes.', default: '1s' }),
    ...traceFlags,
  };

  async run(): Promise<void> {
    const { argv, flags, metadata } = await this.withKubeletConfig(await this.parse(Run));
    const { runPods } = await import('../cli/run.js');
    const code = await runPods(argv as string[], flags, metadata, (line) => this.log(line));
    if (code !== 0) this.exit(code);
  }
}
