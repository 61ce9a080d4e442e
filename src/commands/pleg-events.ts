import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import type { PodLifecycleEvent } from '../core/pleg/generic.js';
import { PLEG_KINDS } from '../core/pleg/kinds.js';
import { prose } from '../cli/prose.js';

export class PlegEvents extends PodctlCommand {
  static override summary = 'Print the pod lifecycle events the PLEG derives from the runtime (one relist, or --follow).';
  static override description = prose`Relists the runtime's sandboxes and containers as the kubelet's generic PLEG does and prints the
events: ContainerStarted, ContainerDied, ContainerRemoved and ContainerChanged (which the kubelet keeps internal), and PodSync when
containerd's CRI records an exit with more than its TaskExit event said (a termination message).

Without --follow, one relist against an empty past: every running container shows as started, every exited one as died. With --follow,
later events come as the agent's PLEG gets them (--pleg, auto by default): from the runtime's event stream where it has one (CRI
GetContainerEvents, or containerd's own event service), else from relists. Works whether or not \`podctl watch\` runs.`;
  static override examples = [
    '<%= config.bin %> pleg-events',
    '<%= config.bin %> pleg-events --follow',
    '<%= config.bin %> pleg-events --follow -o json | jq .',
    '<%= config.bin %> pleg-events --follow --relist-period 100ms --all',
  ];
  static override flags = {
    follow: Flags.boolean({ char: 'f', summary: 'Keep relisting and stream events until Ctrl-C.' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['text', 'json'], default: 'text' }),
    'relist-period': Flags.string({
      summary:
        "How often to relist with --follow (the generic PLEG's period; " +
        'an event-driven PLEG relists every 300 s, and at this period once it falls back).',
      default: '1s',
    }),
    pleg: Flags.string({
      summary:
        "With --follow, where events come from: as the agent's --pleg " +
        "(auto: CRI events, else containerd's event service on containerd, else relist).",
      options: [...PLEG_KINDS],
      default: 'auto',
    }),
    all: Flags.boolean({ summary: 'Every sandbox and container in the runtime, not only those podctl created.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(PlegEvents);
    // The PLEG and the runtime's client: loaded when the command runs, not with the command index.
    const [{ connect }, { PLEG_EVENTS_HEADER, formatPlegEvent, plegForEvents, printPlegEvents }] = await Promise.all([
      import('../cli/runtime.js'),
      import('../cli/pleg-events.js'),
    ]);
    const { client } = await connect(flags);
    const say = (line: string) => process.stderr.write(`${line}\n`);
    const runtimeName = flags.follow ? (await client.version().catch(() => undefined))?.runtimeName : undefined;
    const pleg = plegForEvents(client, { ...flags, pleg: flags.follow ? flags.pleg : 'generic' }, runtimeName, say);
    const print = (e: PodLifecycleEvent) => this.log(formatPlegEvent(e, pleg.cache, flags.output === 'json'));
    if (flags.output === 'text') this.log(PLEG_EVENTS_HEADER);
    const stopped = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    try {
      await printPlegEvents(pleg, print, { follow: flags.follow, stopped });
    } finally {
      client.close();
    }
  }
}
