import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podViewFlags } from '../cli/pod-flags.js';

export class Stats extends PodctlCommand {
  static override summary = "Resource use of podctl's running containers (CRI ListContainerStats), as crictl stats shows it.";
  static override description =
    'Samples twice, --interval apart, for CPU %; memory is the working set; DISK and INODES are the writable layer. Then per pod ' +
    'the disk its logs, emptyDirs and writable layers use, and the image filesystem. -o json prints the CRI stats of the second ' +
    'sample, with pods and imageFilesystem.';
  static override examples = ['<%= config.bin %> stats', '<%= config.bin %> stats -A', '<%= config.bin %> stats --pod web -o json'];
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    'all-namespaces': Flags.boolean({ char: 'A', summary: 'Containers of every namespace.' }),
    pod: Flags.string({ summary: 'Only the containers of this pod.' }),
    interval: Flags.integer({ summary: 'Milliseconds between the two samples.', default: 1000, min: 100 }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'json'], default: 'table' }),
    'no-headers': Flags.boolean({ summary: 'Print the table without its header line.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Stats);
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ connect }, { humanBytes, plainTable, shortId }, L, { diskReport }, { cpuPercent, renderDiskReport }] = await Promise.all([
      import('../cli/runtime.js'),
      import('../cli/table.js'),
      import('../core/kuberuntime/labels.js'),
      import('../core/stats/disk.js'),
      import('../cli/stats.js'),
    ]);
    const { client } = await connect(flags);
    try {
      const selector: Record<string, string> = { [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
      if (!flags['all-namespaces']) selector[L.POD_NAMESPACE_LABEL] = flags.namespace;
      if (flags.pod) selector[L.POD_NAME_LABEL] = flags.pod;
      const running = await client.listContainers({ labelSelector: selector, state: { state: 'CONTAINER_RUNNING' } });
      const ids = new Set(running.map((c) => c.id));
      const sample = async () =>
        (await client.listContainerStats({ labelSelector: selector })).filter((s) => ids.has(s.attributes?.id ?? ''));
      const first = new Map((await sample()).map((s) => [s.attributes!.id, s]));
      await new Promise((r) => setTimeout(r, flags.interval));
      const second = await sample();
      const disk = await diskReport(client, client, { namespace: flags['all-namespaces'] ? undefined : flags.namespace, name: flags.pod });
      if (flags.output === 'json') {
        this.log(JSON.stringify({ stats: second, pods: disk.pods, imageFilesystem: disk.imageFilesystem }, null, 2));
        return;
      }
      if (!second.length) {
        process.stderr.write('No running containers found.\n');
        const rest = renderDiskReport(disk, { noHeaders: flags['no-headers'], allNamespaces: flags['all-namespaces'] });
        if (rest) this.log(rest);
        return;
      }
      const byId = new Map(running.map((c) => [c.id, c]));
      const rows = second
        .map((s) => {
          const c = byId.get(s.attributes!.id);
          const cpu = cpuPercent(first.get(s.attributes!.id), s);
          return [
            shortId(s.attributes!.id),
            `${flags['all-namespaces'] ? `${c?.labels[L.POD_NAMESPACE_LABEL]}/` : ''}${c?.labels[L.POD_NAME_LABEL] ?? ''}/` +
              (c?.labels[L.CONTAINER_NAME_LABEL] ?? s.attributes?.metadata?.name ?? ''),
            cpu === undefined ? '-' : cpu.toFixed(2),
            s.memory?.workingSetBytes ? humanBytes(Number(s.memory.workingSetBytes.value)) : '-',
            s.writableLayer?.usedBytes ? humanBytes(Number(s.writableLayer.usedBytes.value)) : '-',
            s.writableLayer?.inodesUsed ? String(s.writableLayer.inodesUsed.value) : '-',
          ];
        })
        .sort((a, b) => a[1]!.localeCompare(b[1]!));
      this.log(plainTable(['CONTAINER', 'NAME', 'CPU %', 'MEM', 'DISK', 'INODES'], rows, { noHeaders: flags['no-headers'] }));
      this.log('');
      this.log(renderDiskReport(disk, { noHeaders: flags['no-headers'], allNamespaces: flags['all-namespaces'] }));
    } finally {
      client.close();
    }
  }
}
