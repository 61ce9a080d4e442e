import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { connect } from '../cli/runtime.js';
import { realClock } from '../core/clock.js';
import { parseDuration } from '../core/util/duration.js';
import { errorMessage } from '../core/errors.js';
import { PodStatusReader } from '../core/kuberuntime/pod-status.js';
import { GenericPleg, type PodLifecycleEvent } from '../core/pleg/generic.js';
import { PLEG_EVENTS_HEADER, formatPlegEvent, printPlegEvents } from '../cli/pleg-events.js';

export class PlegEvents extends PodctlCommand {
  static override summary = 'Print the pod lifecycle events the PLEG derives from the runtime (one relist, or --follow).';
  static override description = `Relists the runtime's sandboxes and containers as the kubelet's generic PLEG does and prints the events:
ContainerStarted, ContainerDied, ContainerRemoved and ContainerChanged (which the kubelet keeps internal).
Without --follow, one relist against an empty past: every running container shows as started, every exited
one as died. Works whether or not \`podctl watch\` runs.`;
  static override examples = [
    '<%= config.bin %> pleg-events',
    '<%= config.bin %> pleg-events --follow',
    '<%= config.bin %> pleg-events --follow -o json | jq .',
    '<%= config.bin %> pleg-events --follow --relist-period 100ms --all',
  ];
  static override flags = {
    follow: Flags.boolean({ char: 'f', summary: 'Keep relisting and stream events until Ctrl-C.' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['text', 'json'], default: 'text' }),
    'relist-period': Flags.string({ summary: 'How often to relist with --follow.', default: '1s' }),
    all: Flags.boolean({ summary: 'Every sandbox and container in the runtime, not only those podctl created.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(PlegEvents);
    const { client } = await connect(flags);
    const statusReader = new PodStatusReader({ runtime: client, clock: realClock });
    const pleg = new GenericPleg({
      runtime: client,
      clock: realClock,
      relistPeriodMs: parseDuration(flags['relist-period'], '--relist-period'),
      labelSelector: flags.all ? {} : undefined,
      inspect: (uid, name, namespace) => statusReader.getPodStatus(uid, name, namespace, { all: flags.all }),
      onError: (err) => process.stderr.write(`Error: ${errorMessage(err)}\n`),
    });
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
