import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';

export class Info extends PodctlCommand {
  static override summary = 'Show the runtime endpoint, its versions and its conditions (RuntimeReady, NetworkReady).';
  static override examples = [
    '<%= config.bin %> info',
    '<%= config.bin %> info -o json',
    '<%= config.bin %> info --runtime-endpoint unix:///run/containerd/containerd.sock',
  ];
  static override flags = {
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['text', 'json'], default: 'text' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Info);
    const { client, endpoints } = await (await import('../cli/runtime.js')).connect(flags);
    try {
      const [version, status] = await Promise.all([client.version(), client.status(false)]);
      const conditions = (status.status?.conditions ?? []).map((c) => ({
        type: c.type,
        status: c.status,
        reason: c.reason,
        message: c.message,
      }));
      const info = {
        endpoint: endpoints.runtime.endpoint,
        endpointSource: endpoints.runtime.source,
        imageEndpoint: endpoints.image.endpoint,
        runtimeName: version.runtimeName,
        runtimeVersion: version.runtimeVersion,
        runtimeApiVersion: version.runtimeApiVersion,
        conditions,
      };
      if (flags.output === 'json') {
        this.log(JSON.stringify(info, null, 2));
        return;
      }
      this.log(`Endpoint:        ${info.endpoint} (from ${info.endpointSource})`);
      if (info.imageEndpoint !== info.endpoint) this.log(`Image endpoint:  ${info.imageEndpoint}`);
      this.log(`Runtime:         ${info.runtimeName} ${info.runtimeVersion} (CRI ${info.runtimeApiVersion})`);
      this.log('Conditions:');
      for (const c of conditions) {
        const extra = c.status ? '' : `  ${[c.reason, c.message].filter(Boolean).join(': ')}`;
        this.log(`  ${c.type.padEnd(14)} ${String(c.status)}${extra}`);
      }
      // A runtime that is not ready is a failure worth an exit code.
      if (conditions.some((c) => !c.status)) this.exit(1);
    } finally {
      client.close();
    }
  }
}
