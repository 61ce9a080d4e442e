import { PodctlCommand } from '../../cli/base.js';
import { agentFlags } from '../../cli/agent-flags.js';
import { prose } from '../../cli/prose.js';

export class Agent extends PodctlCommand {
  static override summary = 'Run the node agent in the foreground: it keeps the pods handed to it at their desired state.';
  static override description = prose`One agent per host and --root-dir (a lock refuses a second). It keeps the pods handed to it by
\`podctl run --detach\` (one file per pod under <root-dir>/applied, read again when it restarts, so the pods
outlive it and are adopted without a restart), restarts crashed containers with backoff, runs probes, records
events and serves every other command on <root-dir>/podctl.sock. \`run --detach\` starts it in the background
when none runs (output in <root-dir>/agent.log); \`podctl agent install\` starts it at boot. SIGTERM stops it
and leaves the pods running; \`podctl agent stop\` sends that SIGTERM, \`podctl agent status\` says whether it runs.`;
  static override examples = [
    '<%= config.bin %> agent',
    '<%= config.bin %> agent --root-dir /tmp/lab',
    '<%= config.bin %> agent --manifest-url http://127.0.0.1:8080/pods.yaml',
  ];
  static override flags = agentFlags;

  async run(): Promise<void> {
    const { flags } = await this.withKubeletConfig(await this.parse(Agent));
    await (await import('../../cli/agent.js')).serveAgent(flags, undefined, (line) => this.log(line), this.config.version);
  }
}
