import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { parseDuration } from '../core/util/duration.js';
import { PodctlError } from '../core/errors.js';
import { prose } from '../cli/prose.js';

export class Exec extends PodctlCommand {
  static override summary = "Run a command in a pod's container; podctl exits with the command's exit code.";
  static override description = prose`Without -i/-t: the CRI's ExecSync (output printed when the command ends, --timeout bounds it).

With -i and/or -t: the CRI's Exec, streamed over WebSocket (the Kubernetes v4.channel.k8s.io protocol) from the URL
the runtime returns; -t gives the command a terminal (when stdin is one) that follows your window's size.

containerd 1.6's streaming server speaks v4 at most (it refuses v5.channel.k8s.io), and v4 cannot close the
remote stdin: with -i, a command that reads stdin to its end (cat) never sees EOF; end it from its input (exit).

podctl's own failures (no such pod, a container that is not running, a bad flag) exit 1 or 2; otherwise the exit
code is the command's.`;
  static override examples = [
    '<%= config.bin %> exec web -- cat /etc/hostname',
    "<%= config.bin %> exec web -c sidecar -- sh -c 'exit 3'; echo $?",
    '<%= config.bin %> exec -it web -- sh',
    '<%= config.bin %> exec web --timeout 10s -- wget -qO- 127.0.0.1:8080/healthz',
  ];
  static override strict = false;
  // -i is kubectl's --stdin here: the image endpoint keeps only its long name.
  static override baseFlags = {
    ...PodctlCommand.baseFlags,
    'image-endpoint': Flags.string({ summary: 'CRI image service endpoint (defaults to the runtime endpoint).', helpGroup: 'GLOBAL' }),
  };
  // stdin belongs to the remote command, never to the argument parser.
  static override args = { pod: Args.string({ description: 'Pod name (or pod/NAME).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    container: Flags.string({ char: 'c', summary: "Container (default: the pod's default container)." }),
    stdin: Flags.boolean({ char: 'i', summary: 'Pass stdin to the command.' }),
    tty: Flags.boolean({ char: 't', summary: 'Give the command a terminal (stdin must be one).' }),
    timeout: Flags.string({ summary: 'Without -i/-t: how long the command may run, e.g. 30s.', default: '5m' }),
  };

  async run(): Promise<void> {
    // The command is everything after --, parsed by no one but the container.
    const argv = [...this.argv];
    const dash = argv.indexOf('--');
    const cmd = dash < 0 ? [] : argv.slice(dash + 1);
    const { args, flags } = await this.parse(Exec, dash < 0 ? argv : argv.slice(0, dash));
    if (cmd.length === 0)
      throw new PodctlError('no command given', { hint: `put it after --, e.g. \`podctl exec ${args.pod} -- sh\``, exitCode: 2 });
    const name = podArg(args.pod);
    // What only this command's path uses: loaded when it runs, not with the command index.
    const { chooseContainer, openPodView, requirePod, requireRunning } = await import('../cli/podview.js');
    const { view, client } = await openPodView(flags);
    let code: number;
    try {
      const pod = await requirePod(view, flags.namespace, name);
      const instance = requireRunning(pod, chooseContainer(pod, flags.container));
      let tty = flags.tty;
      if (tty && !process.stdin.isTTY) {
        process.stderr.write('Unable to use a TTY - input is not a terminal or the right kind of file\n');
        tty = false;
      }
      if (!flags.stdin && !tty) {
        const timeoutS = Math.ceil(parseDuration(flags.timeout, '--timeout') / 1000);
        const res = await client.execSync(instance.id, cmd, timeoutS);
        process.stdout.write(res.stdout);
        process.stderr.write(res.stderr);
        code = res.exitCode;
      } else {
        const { url } = await client.exec({ containerId: instance.id, cmd, tty, stdin: flags.stdin || tty, stdout: true, stderr: !tty });
        code = await this.stream(url, flags.stdin || tty, tty);
      }
    } finally {
      client.close();
    }
    if (code !== 0) this.exit(code);
  }

  private async stream(url: string, stdin: boolean, tty: boolean): Promise<number> {
    const input = process.stdin;
    // stdin flows once the stream is open (its data listener resumes it): nothing typed before is lost.
    const { streamExec } = await import('../core/exec/stream.js');
    if (tty) input.setRawMode(true);
    try {
      return await streamExec(url, {
        stdin: stdin ? input : undefined,
        stdout: process.stdout,
        stderr: process.stderr,
        size: tty ? () => ({ width: process.stdout.columns ?? 80, height: process.stdout.rows ?? 24 }) : undefined,
        onResize: tty
          ? (listener) => {
              process.stdout.on('resize', listener);
              return () => process.stdout.off('resize', listener);
            }
          : undefined,
      });
    } catch (err) {
      throw new PodctlError(`exec: ${(err as Error).message}`, { cause: err });
    } finally {
      if (tty) input.setRawMode(false);
      input.pause();
    }
  }
}
