import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { errorMessage } from '../core/errors.js';

export class Version extends PodctlCommand {
  static override summary = 'Print the podctl version and, when reachable, the runtime name and versions.';
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version -o json'];
  static override flags = {
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['text', 'json'], default: 'text' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Version);
    const result: Record<string, unknown> = { client: { version: this.config.version } };
    let runtimeError: string | undefined;
    try {
      const { client } = await (await import('../cli/runtime.js')).connect(flags);
      try {
        const v = await client.version();
        result.runtime = { name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion, endpoint: client.endpoint };
      } finally {
        client.close();
      }
    } catch (err) {
      runtimeError = errorMessage(err);
      result.runtimeError = runtimeError;
    }
    if (flags.output === 'json') {
      this.log(JSON.stringify(result, null, 2));
      return;
    }
    this.log(`Client Version:  ${this.config.version}`);
    const rt = result.runtime as { name: string; version: string; apiVersion: string; endpoint: string } | undefined;
    if (rt) {
      this.log(`Runtime Name:    ${rt.name}`);
      this.log(`Runtime Version: ${rt.version}`);
      this.log(`Runtime API:     ${rt.apiVersion}`);
      this.log(`Endpoint:        ${rt.endpoint}`);
    } else {
      this.log(`Runtime:         unreachable (${runtimeError})`);
    }
  }
}
