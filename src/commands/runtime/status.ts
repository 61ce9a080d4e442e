import { Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';

export class RuntimeStatus extends PodctlCommand {
  static override summary = 'Show whether the embedded runtime runs, its endpoint and its registry.';
  static override examples = ['<%= config.bin %> runtime status', '<%= config.bin %> runtime status -o json'];
  static override flags = {
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['text', 'json'], default: 'text' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(RuntimeStatus);
    const status = await (await import('../../core/embedded/index.js')).embeddedStatus();
    if (flags.output === 'json') {
      this.log(JSON.stringify(status, null, 2));
      return;
    }
    this.log(`Endpoint:   ${status.endpoint}`);
    this.log(`Running:    ${status.running}`);
    this.log(`containerd: ${status.containerd.running ? `running (pid ${status.containerd.pid})` : 'stopped'}`);
    this.log(`Registry:   ${status.registry.running ? `running on ${status.registry.address} (pid ${status.registry.pid})` : 'stopped'}`);
    this.log(`Root:       ${status.root}`);
    if (status.images.length) this.log(`Images:     ${status.images.join(', ')}`);
  }
}
