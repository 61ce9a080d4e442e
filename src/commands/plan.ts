import { Args, Errors, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { planFlags } from '../cli/plan-flags.js';
import { nodeNameFlag, podViewFlags } from '../cli/pod-flags.js';
import { prose } from '../cli/prose.js';

export class Plan extends PodctlCommand {
  static override summary = 'Show what the sync loop would do to the runtime for these manifests, without doing it.';
  static override description = prose`Reads the manifests and the runtime, runs computePodActions for each pod (the same code SyncPod
runs) and prints the actions it would take, and why: create sandbox, pull image, start container (with the CrashLoopBackOff left), kill
container (with the spec fields that changed), kill pod; with --prune, remove pod. Nothing in the runtime changes. The backoff is
estimated from what the runtime records (restart count, last exit time), as a long-running watch would see it.

A pod's UID comes from the node name and the file's path (as the kubelet's static pods): give the same files and --node-name as the run or
watch that runs them. A pod handed to the agent on --root-dir (run --detach) is planned as the agent keeps it, whichever file describes it
now.

Exit codes, as terraform plan -detailed-exitcode: 0 nothing would change, 2 something would, 1 error.`;
  static override examples = [
    '<%= config.bin %> plan pod.yaml',
    '<%= config.bin %> plan manifests/ --prune',
    "<%= config.bin %> plan pod.yaml -o json | jq '.pods[].actions[].action'",
    '<%= config.bin %> plan pod.yaml >/dev/null; echo $?   # 0 in desired state, 2 would change',
  ];
  static override strict = false;
  static override args = {
    paths: Args.string({ description: 'Manifest files or directories (- for stdin).', required: true, ignoreStdin: true }),
  };
  static override flags = {
    'node-name': nodeNameFlag,
    ...podViewFlags,
    ...planFlags,
    output: Flags.string({
      char: 'o',
      summary: 'Output format (json: {apiVersion: podctl/v1, kind: Plan, changes, pods[].actions[]}).',
      options: ['text', 'json'],
      default: 'text',
    }),
  };

  async run(): Promise<void> {
    // The planner: loaded when plan runs, not with the command index.
    const { asPlanError, planManifestsAndPrint } = await import('../cli/plan.js');
    const code = await asPlanError(async () => {
      const { argv, flags } = await this.parse(Plan);
      return planManifestsAndPrint(argv as string[], flags, { prune: flags.prune, output: flags.output, log: (t) => this.log(t) });
    });
    // "Would change" (2) is an answer, not an error: set as the exit code, not thrown through oclif's
    // error handling (which loads its error formatting, a few ms of every plan that finds changes).
    if (code !== 0) process.exitCode = code;
  }

  protected override async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<unknown> {
    // oclif's usage errors exit 2, which here means "would change": make them 1.
    if (!(err instanceof Errors.ExitError) && err.oclif?.exit === 2) err.oclif.exit = 1;
    return super.catch(err);
  }
}
