import { Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';
import { podViewFlags } from '../../cli/pod-flags.js';
import { PodctlError } from '../../core/errors.js';

export class AgentStatus extends PodctlCommand {
  static override summary = 'Whether the node agent runs on this --root-dir: its PID, since when, its socket, log and pods.';
  static override description = 'Exit 0 when it runs and answers, 1 otherwise. -o json prints what its /v1/agent says.';
  static override examples = ['<%= config.bin %> agent status', '<%= config.bin %> agent status --root-dir /tmp/lab -o json'];
  static override flags = {
    ...podViewFlags,
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['text', 'json'], default: 'text' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(AgentStatus);
    const [{ AgentClient }, { agentLogFile }, { agentProcess }] = await Promise.all([
      import('../../core/node/client.js'),
      import('../../core/node/paths.js'),
      import('../../core/node/supervise.js'),
    ]);
    const holder = agentProcess(flags['root-dir']);
    const client = new AgentClient(flags['root-dir']);
    const info = holder && (await client.running()) ? await client.info().catch(() => undefined) : undefined;
    if (flags.output === 'json') {
      this.log(JSON.stringify({ running: !!info, ...(holder ?? {}), ...(info ?? {}) }, null, 2));
    } else if (holder) {
      this.log(`${holder.kind} pid ${holder.pid} on ${flags['root-dir']} since ${holder.since}`);
      this.log(
        info
          ? `API ${info.socket}; ${info.pods} pod(s); log ${info.log ?? agentLogFile(flags['root-dir'])}`
          : `it does not answer on ${client.socket}`,
      );
    }
    if (!holder)
      throw new PodctlError(`no agent runs on ${flags['root-dir']}`, {
        hint: '`podctl run --detach FILE` starts one; `podctl agent` runs one in the foreground',
      });
    if (!info) this.exit(1);
  }
}
