import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { prose } from '../cli/prose.js';

export class Events extends PodctlCommand {
  static override summary = "The kubelet's events about podctl's pods, as kubectl get events lists them.";
  static override description = prose`From the running watch (/events on its status socket): Created, Started, Killing, BackOff, Failed,
probe failures, each with its count. Without a watch, the events the runtime's records imply (Created, Started,
ContainerDied of the container instances it holds), and a note saying so. -w keeps printing new and repeated
events until Ctrl-C; -o json prints a v1 EventList (with -w, one v1 Event per line).`;
  static override examples = [
    '<%= config.bin %> events',
    '<%= config.bin %> events -A -w',
    '<%= config.bin %> events --for pod/web',
    '<%= config.bin %> events -o json',
  ];
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    'all-namespaces': Flags.boolean({ char: 'A', summary: 'Events of every namespace.' }),
    for: Flags.string({ summary: 'Only the events of this pod (pod/NAME or NAME).' }),
    watch: Flags.boolean({ char: 'w', summary: 'Keep printing new and repeated events.' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'json'], default: 'table' }),
    'no-headers': Flags.boolean({ summary: 'Print the table without its header line.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Events);
    const pod = flags.for === undefined ? undefined : podArg(flags.for);
    const namespace = flags['all-namespaces'] ? undefined : flags.namespace;
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ openPodView }, { printEvents }] = await Promise.all([import('../cli/podview.js'), import('../cli/events.js')]);
    const { view, client, statusSocket } = await openPodView(flags);
    const query = { namespace, pod, output: flags.output, watch: flags.watch, noHeaders: flags['no-headers'] };
    await printEvents(view, statusSocket, query, (text) => this.log(text)).finally(() => client.close());
  }
}
