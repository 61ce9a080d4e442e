import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podViewFlags } from '../cli/pod-flags.js';
import { prose } from '../cli/prose.js';

export class Delete extends PodctlCommand {
  static override summary = 'Delete pods gracefully, as the kubelet terminates them (preStop, SIGTERM, the grace period, SIGKILL).';
  static override description = prose`Stops each container with the pod's terminationGracePeriodSeconds (or --grace-period; --force is
--grace-period=0, where the kubelet's minimum of 2 s still applies), then removes its containers and sandbox.

Names the pods as arguments (pod NAME…, pod/NAME), by manifest (-f FILE…), every pod of a namespace (--all), or
those whose labels match (-l).

When the node agent runs on --root-dir, it is told to forget each pod it keeps (its applied file goes, so the pod
never comes back) and podctl waits for the termination it performs; other pods are terminated here, and the applied
file of a pod handed to an agent that is not running goes too. A pod the
running watch keeps from a file or URL comes back: podctl says so and what to change. A pod that does not exist is
an error (exit 1) after the others are deleted.`;
  static override examples = [
    '<%= config.bin %> delete pod web',
    '<%= config.bin %> delete pod web db -n lab --grace-period 5',
    '<%= config.bin %> delete pod/web --force',
    '<%= config.bin %> delete -f pods.yaml',
    '<%= config.bin %> delete pods --all -n lab',
    '<%= config.bin %> delete pods -l app=web',
  ];
  static override strict = false;
  static override args = { resource: Args.string({ description: 'pod (or pods), then the names; or pod/NAME.', ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    filename: Flags.string({ char: 'f', summary: 'Delete the pods this manifest (file or directory) defines.', multiple: true }),
    'grace-period': Flags.integer({ summary: "Seconds each container gets to stop (-1: the pod's own).", default: -1, min: -1 }),
    force: Flags.boolean({ summary: 'No grace: --grace-period=0.' }),
    all: Flags.boolean({ summary: 'Every pod of the namespace (-n).' }),
    selector: Flags.string({
      char: 'l',
      summary: "The pods of the namespace (-n) whose labels match, as kubectl's -l: app=web, 'tier in (a,b)'.",
    }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Delete);
    const { deletePods } = await import('../cli/delete.js');
    await deletePods(argv as string[], flags, (name) => this.log(`pod "${name}" deleted`), this.config.bin);
  }
}
