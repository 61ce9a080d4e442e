import { Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';
import { namespaceFlag, podViewFlags } from '../../cli/pod-flags.js';
import { prose } from '../../cli/prose.js';

const STATE: Record<string, string> = {
  CONTAINER_CREATED: 'Created',
  CONTAINER_RUNNING: 'Running',
  CONTAINER_EXITED: 'Exited',
  CONTAINER_UNKNOWN: 'Unknown',
};

export class GetContainers extends PodctlCommand {
  static override summary = "List the containers of podctl's pods, in crictl ps's spirit.";
  static override aliases = ['get:container'];
  static override description = prose`Running containers by default (-a: exited ones too), with the pod each belongs to. The IDs are what
\`podctl inspect container\` and crictl take. -o json prints the CRI Container objects.`;
  static override examples = [
    '<%= config.bin %> get containers',
    '<%= config.bin %> get containers -a -A',
    '<%= config.bin %> get containers --pod web -o json',
    '<%= config.bin %> get containers -q',
  ];
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    'all-namespaces': Flags.boolean({ char: 'A', summary: 'Containers of every namespace.' }),
    all: Flags.boolean({ char: 'a', summary: 'Exited and created containers too.' }),
    pod: Flags.string({ summary: 'Only the containers of this pod.' }),
    quiet: Flags.boolean({ char: 'q', summary: 'Only the full container IDs.' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'json'], default: 'table' }),
    'no-headers': Flags.boolean({ summary: 'Print the table without its header line.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(GetContainers);
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ connect }, { age, plainTable, shortId }, L, { toRuntimeContainerStatus }] = await Promise.all([
      import('../../cli/runtime.js'),
      import('../../cli/table.js'),
      import('../../core/kuberuntime/labels.js'),
      import('../../core/kuberuntime/pod-status.js'),
    ]);
    const { client } = await connect(flags);
    try {
      const selector: Record<string, string> = { [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
      if (!flags['all-namespaces']) selector[L.POD_NAMESPACE_LABEL] = flags.namespace;
      if (flags.pod) selector[L.POD_NAME_LABEL] = flags.pod;
      const [containers, sandboxes] = await Promise.all([
        client.listContainers({ labelSelector: selector }),
        client.listPodSandbox({ labelSelector: selector }),
      ]);
      const shown = containers.filter((c) => flags.all || c.state === 'CONTAINER_RUNNING').sort((a, b) => b.createdAt - a.createdAt);
      if (flags.output === 'json') {
        this.log(JSON.stringify({ containers: shown }, null, 2));
        return;
      }
      if (flags.quiet) {
        for (const c of shown) this.log(c.id);
        return;
      }
      const podOf = new Map(sandboxes.map((s) => [s.id, s]));
      const now = Date.now();
      const rows = shown.map((c) => [
        shortId(c.id),
        // The image as the pod spec names it (containerd 1.6 lists only the image ID).
        toRuntimeContainerStatus(c).image || shortId(c.imageRef),
        `${age(Math.floor(c.createdAt / 1e6), now)} ago`,
        STATE[c.state] ?? c.state,
        c.labels[L.CONTAINER_NAME_LABEL] ?? c.metadata?.name ?? '',
        String(c.metadata?.attempt ?? 0),
        shortId(c.podSandboxId),
        (flags['all-namespaces'] ? `${c.labels[L.POD_NAMESPACE_LABEL]}/` : '') +
          (c.labels[L.POD_NAME_LABEL] ?? podOf.get(c.podSandboxId)?.metadata?.name ?? ''),
      ]);
      if (!rows.length) {
        process.stderr.write('No containers found.\n');
        return;
      }
      this.log(
        plainTable(['CONTAINER', 'IMAGE', 'CREATED', 'STATE', 'NAME', 'ATTEMPT', 'POD ID', 'POD'], rows, {
          noHeaders: flags['no-headers'],
        }),
      );
    } finally {
      client.close();
    }
  }
}
