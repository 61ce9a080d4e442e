import { Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';

export class GetImages extends PodctlCommand {
  static override summary = "List the runtime's images, as crictl images does.";
  static override aliases = ['get:image'];
  static override description = 'One row per repository tag (an untagged image shows <none>). -o json prints the CRI Image objects.';
  static override examples = ['<%= config.bin %> get images', '<%= config.bin %> get images -q', '<%= config.bin %> get images -o json'];
  static override flags = {
    quiet: Flags.boolean({ char: 'q', summary: 'Only the image IDs.' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'json'], default: 'table' }),
    'no-headers': Flags.boolean({ summary: 'Print the table without its header line.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(GetImages);
    const [{ connect }, { humanBytes, plainTable, shortId }] = await Promise.all([
      import('../../cli/runtime.js'),
      import('../../cli/table.js'),
    ]);
    const { client } = await connect(flags);
    try {
      const images = (await client.listImages()).sort((a, b) => (a.repoTags[0] ?? a.id).localeCompare(b.repoTags[0] ?? b.id));
      if (flags.output === 'json') {
        this.log(JSON.stringify({ images }, null, 2));
        return;
      }
      if (flags.quiet) {
        for (const i of images) this.log(i.id);
        return;
      }
      const rows: string[][] = [];
      for (const i of images) {
        const tags = i.repoTags.length ? i.repoTags : [`${i.repoDigests[0]?.split('@')[0] ?? '<none>'}:<none>`];
        for (const t of tags) {
          const at = t.lastIndexOf(':');
          rows.push([t.slice(0, at), t.slice(at + 1), shortId(i.id), humanBytes(Number(i.size))]);
        }
      }
      this.log(plainTable(['IMAGE', 'TAG', 'IMAGE ID', 'SIZE'], rows, { noHeaders: flags['no-headers'] }));
    } finally {
      client.close();
    }
  }
}
