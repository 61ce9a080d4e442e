import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { PodctlError } from '../core/errors.js';
import { prose } from '../cli/prose.js';

export class Attach extends PodctlCommand {
  static override summary = "Attach to a running container's output (and with -i its input): CRI Attach over the streaming server.";
  static override description = prose`Prints what the container writes from now on, until it exits or Ctrl-C; with -i, what you type goes to
its stdin (the container needs stdin: true in its spec); -t uses its terminal when its spec asks for one (tty: true).

The same WebSocket protocol as exec -it (v4.channel.k8s.io).`;
  static override examples = ['<%= config.bin %> attach web', '<%= config.bin %> attach web -c shell -it'];
  static override baseFlags = {
    ...PodctlCommand.baseFlags,
    'image-endpoint': Flags.string({ summary: 'CRI image service endpoint (defaults to the runtime endpoint).', helpGroup: 'GLOBAL' }),
  };
  static override args = { pod: Args.string({ description: 'Pod name (or pod/NAME).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    container: Flags.string({ char: 'c', summary: "Container (default: the pod's default container)." }),
    stdin: Flags.boolean({ char: 'i', summary: "Pass stdin to the container's stdin." }),
    tty: Flags.boolean({ char: 't', summary: "Use the container's terminal (its spec must have tty: true)." }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Attach);
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ streamAttach }, { chooseContainer, openPodView, requirePod, requireRunning }] = await Promise.all([
      import('../cli/attach.js'),
      import('../cli/podview.js'),
    ]);
    const name = podArg(args.pod);
    const { view, client } = await openPodView(flags);
    try {
      const pod = await requirePod(view, flags.namespace, name);
      const container = chooseContainer(pod, flags.container);
      const id = requireRunning(pod, container).id;
      const spec = pod.spec.containers.find((c) => c.name === container) ?? pod.spec.initContainers?.find((c) => c.name === container);
      // The runtime attaches to the stdio the container was created with: a terminal only if it has one.
      const tty = flags.tty && spec?.tty === true;
      if (flags.tty && !tty) process.stderr.write(`Unable to use a TTY: container ${container} did not allocate one\n`);
      if (flags.stdin && !spec?.stdin)
        throw new PodctlError(`container "${container}" was not created with stdin: true, so -i has nothing to attach to`, { exitCode: 2 });
      await streamAttach(client, id, { stdin: flags.stdin, tty, what: 'attach' });
    } finally {
      client.close();
    }
  }
}
