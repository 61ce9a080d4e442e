import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { prose } from '../cli/prose.js';

/** The last lines of each container instance's log that the bundle keeps. */
const LOG_TAIL = 1000;

export class BundleCommand extends PodctlCommand {
  static override id = 'bundle';
  static override summary =
    'Write one archive about a pod for a bug report: manifest, status, events, timeline, runtime inspect, logs, versions.';
  static override description = prose`The archive (.tar.gz, default POD-bundle-TIME.tar.gz) holds under POD-bundle/:
- manifest.yaml: the pod as podctl holds it (defaulted)
- status.json: its v1 status
- events.json, timeline.txt: what describe shows
- inspect/sandbox-*.json: the runtime's verbose status of each sandbox
- inspect/container-*.json: the runtime's verbose status of each container instance
- logs/C/current.log, logs/C/previous.log: the last ${LOG_TAIL} lines of each container's current and previous instance
- trace.txt: trace lines, when an agent keeps them (none does yet: run \`watch --trace\` to see them live)
- versions.json: podctl and runtime versions

Values that may come from a Secret (secretKeyRef, envFrom secretRef), and any environment value, argument or
command word holding one ($(VAR) expansions), are replaced wherever the runtime repeats the container's environment
and command line. The container's own output (logs) is included as written.`;
  static override examples = ['<%= config.bin %> bundle web', '<%= config.bin %> bundle web -o /tmp/web.tar.gz'];
  static override args = { pod: Args.string({ description: 'Pod name (or pod/NAME).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    output: Flags.string({
      char: 'o',
      summary: 'Archive to write (.tar.gz): a new file of mode 0600, which replaces whatever is at that path.',
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(BundleCommand);
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ openPodView }, { bundleOutput, collectBundle, writeBundle }] = await Promise.all([
      import('../cli/podview.js'),
      import('../cli/bundle.js'),
    ]);
    const name = podArg(args.pod);
    const { view, client, statusSocket } = await openPodView(flags);
    const output = bundleOutput(name, flags.output);
    const ref = { namespace: flags.namespace, name };
    const bundle = await collectBundle(view, client, statusSocket, ref, { podctlVersion: this.config.version, logTail: LOG_TAIL }).finally(
      () => client.close(),
    );
    await writeBundle(bundle, output);
    this.log(`Wrote ${output}:`);
    for (const f of bundle.contents) this.log(`  ${f.path}  (${f.size} bytes)`);
    this.log('Values from Secrets are redacted in the inspect output; logs are as the containers wrote them.');
  }
}
