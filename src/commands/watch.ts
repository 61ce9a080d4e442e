import { Args } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { agentFlags } from '../cli/agent-flags.js';
import { PodctlError } from '../core/errors.js';
import { prose } from '../cli/prose.js';

export class Watch extends PodctlCommand {
  static override summary = 'The node agent following a manifests file or directory (and/or a URL), as a standalone kubelet.';
  static override description = prose`The same agent as \`podctl agent\`, with a manifests source besides the pods handed to it: follows the
manifests as they change (a file or directory, re-read on change and every 20 s; a URL polled every 20 s) and the
runtime as it moves (PLEG relist): adds, updates and removes pods, restarts crashed containers with backoff, cleans
up pods no source wants. One line per pod state change. SIGTERM or Ctrl-C stops the loop and leaves the pods
running, as the kubelet does; --cleanup-on-exit terminates them instead.

While it runs, its API answers on <root-dir>/podctl.sock (mode 0600): GET /v1/healthz, /v1/pods, /v1/events,
/v1/agent, /metrics; POST /v1/pods; DELETE /v1/pods/NS/NAME (and the unversioned /healthz, /pods, /events).`;
  static override examples = [
    '<%= config.bin %> watch manifests/',
    '<%= config.bin %> watch manifests/ --manifest-url http://127.0.0.1:8080/pods.yaml',
    '<%= config.bin %> watch --manifest-url http://127.0.0.1:8080/pods.yaml --manifest-url-header "Authorization: Bearer t0ken"',
    '<%= config.bin %> watch manifests/ --cleanup-on-exit',
    '<%= config.bin %> watch manifests/ --trace',
    '<%= config.bin %> watch manifests/ --trace -o json | jq -c \'select(.type == "worker") | [.pod.name, .outcome, .durationMs]\'',
    'curl --unix-socket /var/lib/podctl/podctl.sock http://podctl/v1/pods',
  ];
  static override args = { path: Args.string({ description: 'Manifest file or directory to follow.', ignoreStdin: true }) };
  static override flags = agentFlags;

  async run(): Promise<void> {
    const { args, flags } = await this.withKubeletConfig(await this.parse(Watch));
    if (!args.path && !flags['manifest-url']) {
      throw new PodctlError('nothing to watch', {
        hint: 'give a manifests path, --manifest-url, or both (`podctl agent` runs the agent with neither)',
        exitCode: 2,
      });
    }
    await (await import('../cli/agent.js')).serveAgent(flags, args.path, (line) => this.log(line), this.config.version);
  }
}
