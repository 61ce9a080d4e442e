import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podViewFlags } from '../cli/pod-flags.js';
import { prose } from '../cli/prose.js';

export class Cp extends PodctlCommand {
  static override summary = 'Copy files and directories between a pod and this host (tar through exec, as kubectl cp).';
  static override description = prose`One side is POD:PATH (or NAMESPACE/POD:PATH), the other a local path.

POD:PATH to local: the container runs \`tar cf -\` and podctl unpacks its output; an existing local directory
receives the copy under its own name, otherwise the local path is the copy's new name. The archive is streamed
into a staging directory inside the destination and moved into place only once all of it passed: an entry with
an absolute path, a \`..\` that climbs out of the destination, a symlink pointing outside it, a device node or
a FIFO is refused and nothing is written. Files keep only their permission bits (no setuid, setgid or sticky
bit), less the umask, and belong to the user running podctl.

local to POD:PATH: podctl packs the file or directory and the container unpacks it with its own tar
(its image needs \`tar\`, \`head\` and \`sh\`, as busybox has); PATH is the copy's name in the container.`;
  static override examples = [
    '<%= config.bin %> cp web:/etc/hosts ./hosts',
    '<%= config.bin %> cp ./site web:/www -c app',
    '<%= config.bin %> cp -n team web:/var/log/app ./logs',
  ];
  static override args = {
    src: Args.string({ description: 'Source: POD:PATH or a local path.', required: true, ignoreStdin: true }),
    dest: Args.string({ description: 'Destination: a local path or POD:PATH.', required: true, ignoreStdin: true }),
  };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    container: Flags.string({ char: 'c', summary: "Container (default: the pod's default container)." }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Cp);
    const [cp, { chooseContainer, openPodView, requirePod, requireRunning }] = await Promise.all([
      import('../cli/cp.js'),
      import('../cli/podview.js'),
    ]);
    const { remote, local, toPod } = cp.planCopy(args.src, args.dest);
    const { view, client } = await openPodView(flags);
    try {
      const pod = await requirePod(view, remote.namespace ?? flags.namespace, remote.pod);
      const id = requireRunning(pod, chooseContainer(pod, flags.container)).id;
      if (toPod) await cp.copyToPod(client, id, local, remote.path);
      else await cp.copyFromPod(client, id, remote.path, local);
    } finally {
      client.close();
    }
  }
}
