import { Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';
import { parseDuration } from '../../core/util/duration.js';
import { prose } from '../../cli/prose.js';

export class ImagePrune extends PodctlCommand {
  static override summary = "Remove unused images, as the kubelet's image GC does when the disk fills up.";
  static override description = prose`Removes every image no container uses (any agent's, in any state) and that the runtime does not pin
(the sandbox image), least recently used first. Without --all, images that a podctl pod's spec names are kept
too, so such a pod can start again without a pull. The agent (watch) does the same by itself when the image
filesystem is fuller than --image-gc-high-threshold.`;
  static override examples = [
    '<%= config.bin %> image prune',
    '<%= config.bin %> image prune --all',
    '<%= config.bin %> image prune -o json',
  ];
  static override flags = {
    all: Flags.boolean({ summary: "Also remove unused images that a podctl pod's spec names." }),
    'image-minimum-gc-age': Flags.string({
      summary: 'Keep images the runtime has had for less than this long (by hand: 0s).',
      default: '0s',
    }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'json'], default: 'table' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(ImagePrune);
    const age = flags['image-minimum-gc-age'];
    const minAgeMs = /^0+(ms|s|m|h)?$/.test(age) ? 0 : parseDuration(age, '--image-minimum-gc-age');
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ connect }, { humanBytes, plainTable, shortId }, { realClock }, { ImageGCManager, imagesNamedByPods }] = await Promise.all([
      import('../../cli/runtime.js'),
      import('../../cli/table.js'),
      import('../../core/clock.js'),
      import('../../core/kuberuntime/image-gc.js'),
    ]);
    const { client } = await connect(flags);
    try {
      const gc = new ImageGCManager({ runtime: client, images: client, clock: realClock });
      const keep = flags.all ? undefined : await imagesNamedByPods(client);
      const result = await gc.prune({ minAgeMs, keep });
      if (flags.output === 'json') {
        this.log(JSON.stringify(result, null, 2));
        return;
      }
      if (result.removed.length) {
        this.log(
          plainTable(
            ['IMAGE ID', 'TAGS', 'SIZE'],
            result.removed.map((r) => [shortId(r.id), r.tags.join(', ') || '<none>', humanBytes(r.size)]),
          ),
        );
      }
      this.log(`Removed ${result.removed.length} image(s), ${humanBytes(result.freed)}; kept ${result.inUse} in use or pinned.`);
    } finally {
      client.close();
    }
  }
}
