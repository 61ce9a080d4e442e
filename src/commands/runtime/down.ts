import { PodctlCommand } from '../../cli/base.js';
import { removeAllPods } from '../../cli/runtime-ready.js';
import { embeddedDown } from '../../core/embedded/index.js';

export class RuntimeDown extends PodctlCommand {
  static override summary = 'Stop the embedded runtime: remove its pods, stop containerd and the registry it started.';
  static override description = 'Stops only the processes `podctl runtime up` started (by their recorded PIDs), and leaves no mounts or network namespaces behind. Images stay on disk, so the next `up` is quick.';
  static override examples = ['<%= config.bin %> runtime down'];

  async run(): Promise<void> {
    await this.parse(RuntimeDown);
    await embeddedDown({
      log: (line) => process.stderr.write(`${line}\n`),
      beforeStop: (endpoint) => removeAllPods(endpoint),
    });
    this.log('embedded runtime is down');
  }
}
