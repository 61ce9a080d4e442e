import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';
import { namespaceFlag, podViewFlags } from '../../cli/pod-flags.js';
import type { PodOutput as Output, PodTableOptions } from '../../cli/table.js';
import { yamlDumper } from '../../cli/yaml.js';
import { PodctlError } from '../../core/errors.js';
import type { PodQuery, ViewedPod } from '../../core/podview/index.js';
import { podMeta } from '../../core/util/pod-key.js';
import { prose } from '../../cli/prose.js';

export class GetPods extends PodctlCommand {
  static override summary = "List podctl's pods with kubectl's columns, whether or not `podctl watch` runs.";
  static override aliases = ['get:pod', 'get:po'];
  static override description = prose`Asks the running watch first (<root-dir>/podctl.sock, its /pods: the status its loop keeps, with probe
results), and reads every other pod podctl made from the runtime by podctl's labels. For a pod read from the
runtime, readiness that comes from a readiness probe is unknown (shown not ready) and a note says so.

-o json prints a v1 PodList (a v1 Pod with NAME); -w prints a row whenever a pod changes, until Ctrl-C.`;
  static override examples = [
    '<%= config.bin %> get pods',
    '<%= config.bin %> get pods -A -o wide',
    '<%= config.bin %> get pods web -o yaml',
    '<%= config.bin %> get pods -n lab -o name',
    "<%= config.bin %> get pods -l 'app=web,tier in (front,back)'",
    '<%= config.bin %> get pods --no-headers | wc -l',
    '<%= config.bin %> get pods -w',
  ];
  static override args = { name: Args.string({ description: 'Only this pod.', ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    'all-namespaces': Flags.boolean({ char: 'A', summary: 'Pods of every namespace.' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'wide', 'json', 'yaml', 'name'], default: 'table' }),
    'no-headers': Flags.boolean({ summary: 'Print the table without its header line.' }),
    watch: Flags.boolean({ char: 'w', summary: 'After the listing, print each pod again whenever it changes.' }),
    'show-labels': Flags.boolean({ summary: "A LABELS column, as kubectl's --show-labels." }),
    selector: Flags.string({
      char: 'l',
      summary: "Only pods whose labels match, as kubectl's -l: app=web, tier!=db, 'env in (a,b)', !canary.",
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(GetPods);
    const output = flags.output as Output;
    const query: PodQuery = { namespace: flags['all-namespaces'] ? undefined : flags.namespace, name: args.name };
    if (args.name && flags.selector !== undefined) throw new PodctlError('a pod name and --selector cannot both be given', { exitCode: 2 });
    // Loaded with -l only.
    const matches = flags.selector === undefined ? undefined : (await import('../../cli/selector.js')).labelFilter(flags.selector);
    const { followPods, openPodLister } = await import('../../cli/pod-lister.js');
    const view = await openPodLister(flags);
    // js-yaml loads only for -o yaml.
    const dumpYaml = output === 'yaml' ? await yamlDumper() : undefined;
    const tableOpts: PodTableOptions = {
      allNamespaces: flags['all-namespaces'],
      wide: output === 'wide',
      showLabels: flags['show-labels'],
      noHeaders: flags['no-headers'],
      dumpYaml,
    };
    const list = async () => (await view.list(query)).filter((v) => !matches || matches(v.pod.metadata?.labels));
    try {
      const viewed = await list();
      if (args.name && viewed.length === 0 && !flags.watch)
        throw new PodctlError(`pod "${args.name}" not found in namespace ${flags.namespace}`);
      await this.print(viewed, output, tableOpts, !!args.name, flags['all-namespaces'] ? 'any' : flags.namespace);
      if (flags.watch)
        await followPods(list, viewed, output, tableOpts, (line) => this.log(line), { changes: (wake) => view.changes(wake) });
    } finally {
      view.close();
    }
  }

  private async print(viewed: ViewedPod[], output: Output, opts: PodTableOptions, single: boolean, nsLabel: string): Promise<void> {
    const pods = viewed.map((v) => v.pod);
    if (output === 'json' || output === 'yaml') {
      // One named pod prints as a Pod; a listing is a v1 PodList.
      const doc = single ? pods[0] : { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '' }, items: pods };
      this.log(output === 'json' ? JSON.stringify(doc, null, 2) : opts.dumpYaml!(doc).trimEnd());
      return;
    }
    if (output === 'name') {
      for (const p of pods) this.log(`pod/${podMeta(p).name}`);
      return;
    }
    if (pods.length === 0) {
      process.stderr.write(`No resources found in ${nsLabel} namespace.\n`);
      return;
    }
    // The table code (cli-table3) loads only when there are rows to lay out.
    this.log((await import('../../cli/table.js')).podTable(pods, opts));
    const unknown = viewed.filter((v) => v.readinessUnknown.length);
    if (unknown.length) {
      const names = unknown.map((v) => `${podMeta(v.pod).name} (${v.readinessUnknown.join(', ')})`).join('; ');
      process.stderr.write(`note: no running watch knows the readiness probes of ${names}: shown not ready\n`);
    }
  }
}
