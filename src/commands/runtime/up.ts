import { Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';
import { prose } from '../../cli/prose.js';

export class RuntimeUp extends PodctlCommand {
  static override summary = 'Start the embedded containerd and its loopback image registry (installing what is missing).';
  static override description = prose`Configures and starts a private containerd on its own root, state dir and socket, a CNI bridge
network, and an image registry on 127.0.0.1 holding the small images podctl builds (busybox, pause). The embedded runtime is offline by
design: docker.io, registry.k8s.io, quay.io, ghcr.io and gcr.io resolve to the loopback registry only, and nothing falls back to a public
host. Idempotent: when it is up already, it returns at once.`;
  static override examples = ['<%= config.bin %> runtime up', '<%= config.bin %> runtime up --no-install'];
  static override flags = {
    install: Flags.boolean({ summary: 'Install missing Debian packages with apt-get (as root).', default: true, allowNo: true }),
    'wait-timeout': Flags.integer({ summary: 'Seconds to wait for RuntimeReady and NetworkReady.', default: 60 }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(RuntimeUp);
    const [{ sandboxIds, waitRuntimeReady }, { embeddedUp }] = await Promise.all([
      import('../../cli/runtime-ready.js'),
      import('../../core/embedded/index.js'),
    ]);
    const status = await embeddedUp({
      install: flags.install,
      timeoutMs: flags['wait-timeout'] * 1000,
      log: (line) => process.stderr.write(`${line}\n`),
      waitReady: (endpoint, signal) => waitRuntimeReady(endpoint, signal),
      sandboxIds,
    });
    this.log(`embedded runtime is up at ${status.endpoint}`);
    this.log(`image registry on ${status.registry.address} serving: ${status.images.join(', ')}`);
  }
}
