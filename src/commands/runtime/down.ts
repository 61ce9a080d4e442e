import { PodctlCommand } from '../../cli/base.js';

export class RuntimeDown extends PodctlCommand {
  static override summary = 'Stop the embedded runtime: remove its pods, stop containerd and the registry it started.';
  static override description =
    'Stops only the processes `podctl runtime up` started (by their recorded PIDs), and leaves no mounts or network namespaces behind. ' +
    'Images stay on disk, so the next `up` is quick.';
  static override examples = ['<%= config.bin %> runtime down'];

  async run(): Promise<void> {
    await this.parse(RuntimeDown);
    const [{ removeAllPods }, { embeddedDown }] = await Promise.all([
      import('../../cli/runtime-ready.js'),
      import('../../core/embedded/index.js'),
    ]);
    await embeddedDown({
      log: (line) => process.stderr.write(`${line}\n`),
      beforeStop: (endpoint) => removeAllPods(endpoint),
    });
    this.log('embedded runtime is down');
  }
}
