import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { connect } from '../cli/runtime.js';
import { realClock } from '../core/clock.js';
import { parseDuration } from '../core/util/duration.js';
import { errorMessage } from '../core/errors.js';
import { PodStatusReader } from '../core/kuberuntime/pod-status.js';
import { GenericPleg, type PodLifecycleEvent } from '../core/pleg/generic.js';
import { podKey } from '../core/util/pod-key.js';

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
    const print = (e: PodLifecycleEvent) => this.log(this.format(e, pleg, flags.output === 'json'));
    if (flags.output === 'text') this.log(['TIME'.padEnd(12), 'POD'.padEnd(32), 'CONTAINER'.padEnd(16), 'EVENT'.padEnd(17), 'DETAIL'].join(' '));
    if (!flags.follow) {
      try {
        (await pleg.relist()).forEach(print);
      } finally {
        client.close();
      }
      return;
    }
    pleg.watch(print);
    // The first relist surfaces errors such as a missing runtime at once.
    (await pleg.relist()).forEach(print);
    pleg.start();
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    pleg.stop();
    client.close();
  }

  private format(e: PodLifecycleEvent, pleg: GenericPleg, json: boolean): string {
    const c = pleg.cache.get(e.id)?.containers.find((x) => x.id === e.data);
    let detail = '';
    if (e.type === 'ContainerDied') detail = c?.exitCode !== undefined ? `exited with code ${c.exitCode}${c.reason ? ` (${c.reason})` : ''}` : 'exited';
    else if (e.type === 'ContainerStarted') detail = e.containerName ? `running ${c?.image ?? ''}`.trim() : 'sandbox ready';
    else if (e.type === 'ContainerRemoved') detail = 'removed';
    else if (e.type === 'ContainerChanged') detail = `state ${c?.state ?? 'unknown'}`;
    const time = new Date(e.time).toISOString();
    if (json) {
      return JSON.stringify({ time, namespace: e.namespace, pod: e.name, podUID: e.id, container: e.containerName ?? null, id: e.data, event: e.type, detail });
    }
    return [time.slice(11, 23).padEnd(12), podKey(e).padEnd(32), (e.containerName ?? '(sandbox)').padEnd(16), e.type.padEnd(17), `${detail} ${e.data.slice(0, 13)}`].join(' ');
  }
}
