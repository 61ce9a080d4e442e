import { randomBytes } from 'node:crypto';
import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { parseDuration } from '../core/util/duration.js';
import { PodctlError } from '../core/errors.js';
import { prose } from '../cli/prose.js';

export class Debug extends PodctlCommand {
  static override summary = "Run a debug container in a running pod's sandbox (kubectl debug's ephemeral containers).";
  static override description = prose`The container joins the pod's network and IPC namespaces; with --target it also joins that container's
PID namespace, so ps shows the target's processes. It shows under ephemeralContainerStatuses in get -o json and
under "Ephemeral Containers" in describe; it is never restarted, never counts toward the pod's phase, readiness or
restarts, and goes with the pod.

With -i/-t: attaches to it (Ctrl-D or exit ends it). With a command and no -i/-t: waits for it to end, prints its
output and exits with its exit code. Without either: starts it and prints its name.`;
  static override examples = [
    '<%= config.bin %> debug web -it --image=busybox:1.36 --target=app',
    '<%= config.bin %> debug web --image=busybox:1.36 --target=app -- ps ax',
    '<%= config.bin %> debug web --image=busybox:1.36 -c probe -- wget -qO- 127.0.0.1:8080/healthz',
    '<%= config.bin %> debug web --copy-to=web-debug --image=busybox:1.36 -c shell -it',
  ];
  static override strict = false;
  static override baseFlags = {
    ...PodctlCommand.baseFlags,
    'image-endpoint': Flags.string({ summary: 'CRI image service endpoint (defaults to the runtime endpoint).', helpGroup: 'GLOBAL' }),
  };
  static override args = { pod: Args.string({ description: 'Pod name (or pod/NAME).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    image: Flags.string({ summary: 'Image of the debug container.', required: true }),
    target: Flags.string({ summary: "Share this container's PID namespace." }),
    container: Flags.string({ char: 'c', summary: 'Name of the debug container (default: debugger-XXXXX).' }),
    stdin: Flags.boolean({ char: 'i', summary: "Keep the container's stdin open and attach to it." }),
    tty: Flags.boolean({ char: 't', summary: 'Give the container a terminal.' }),
    timeout: Flags.string({ summary: 'With a command and no -i/-t: how long to wait for it to end.', default: '5m' }),
    'copy-to': Flags.string({
      summary: 'Start a copy of the pod under this name with the debug container added, and leave the original alone.',
    }),
  };

  async run(): Promise<void> {
    const argv = [...this.argv];
    const dash = argv.indexOf('--');
    const cmd = dash < 0 ? [] : argv.slice(dash + 1);
    const { args, flags } = await this.parse(Debug, dash < 0 ? argv : argv.slice(0, dash));
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [
      { attachDebugContainer, copyDebugPod, createDebugContainer, printWhenDone },
      { chooseContainer, openPodView, requirePod, requireRunning },
    ] = await Promise.all([import('../cli/debug.js'), import('../cli/podview.js')]);
    const name = podArg(args.pod);
    const { view, client } = await openPodView(flags);
    let code = 0;
    try {
      const rp = await requirePod(view, flags.namespace, name);
      if (rp.sandbox.state !== 'SANDBOX_READY') throw new PodctlError(`pod "${name}" is not running (its sandbox is not ready)`);
      const targetId = flags.target === undefined ? undefined : requireRunning(rp, chooseContainer(rp, flags.target, '--target')).id;
      const debugName = flags.container ?? `debugger-${randomBytes(3).toString('hex').slice(0, 5)}`;
      const taken = [...rp.runtime.containers, ...(rp.runtime.ephemeral ?? [])].map((c) => c.name);
      if (taken.includes(debugName) || rp.spec.containers.some((c) => c.name === debugName)) {
        throw new PodctlError(`-c ${debugName}: pod "${name}" already has a container of that name`, { exitCode: 2 });
      }
      if (flags['copy-to']) {
        code = await copyDebugPod(
          client,
          rp,
          flags['copy-to'],
          { name: debugName, image: flags.image, ...(cmd.length ? { command: cmd } : {}), stdin: flags.stdin || flags.tty, tty: flags.tty },
          flags,
        );
        return;
      }
      const id = await createDebugContainer(client, rp, debugName, flags.image, cmd, targetId, flags.stdin, flags.tty);
      process.stderr.write(`Created debug container ${debugName}${flags.target ? ` targeting ${flags.target}` : ''}\n`);
      if (flags.stdin || flags.tty) code = await attachDebugContainer(client, id, flags.stdin, flags.tty);
      else if (cmd.length) code = await printWhenDone(client, id, parseDuration(flags.timeout, '--timeout'));
      else this.log(debugName);
    } finally {
      client.close();
    }
    if (code !== 0) this.exit(code);
  }
}
