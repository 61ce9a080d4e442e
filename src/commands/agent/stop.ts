import { Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';
import { podViewFlags } from '../../cli/pod-flags.js';
import { parseDuration } from '../../core/util/duration.js';

export class AgentStop extends PodctlCommand {
  static override summary = 'Stop the node agent of this --root-dir (SIGTERM to the PID in its lock); its pods keep running.';
  static override description =
    'Waits until it has stopped. Its pods keep running; the next agent on the same --root-dir adopts them without restarting any. ' +
    'No agent running is not an error.';
  static override examples = ['<%= config.bin %> agent stop', '<%= config.bin %> agent stop --root-dir /tmp/lab'];
  static override flags = {
    ...podViewFlags,
    timeout: Flags.string({ summary: 'How long to wait for it to stop.', default: '60s' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(AgentStop);
    const { stopAgent } = await import('../../core/node/supervise.js');
    const stopped = await stopAgent(flags['root-dir'], parseDuration(flags.timeout, '--timeout'));
    this.log(stopped ? `agent pid ${stopped.pid} stopped; its pods keep running` : `no agent runs on ${flags['root-dir']}`);
  }
}
