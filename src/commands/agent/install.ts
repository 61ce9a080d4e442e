import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { PodctlCommand } from '../../cli/base.js';
import { nodeFlags } from '../../cli/node-flags.js';
import { prose } from '../../cli/prose.js';

export class AgentInstall extends PodctlCommand {
  static override summary = 'Write a systemd unit (or an OpenRC script) that starts the node agent at boot.';
  static override description = prose`Writes podctl-agent.service into --dir (default /etc/systemd/system), running this podctl's
agent on --root-dir and --log-root with the node flags given here (log rotation, GC, --kubelet-config, …); then enable it with
\`systemctl daemon-reload && systemctl enable --now podctl-agent\`.

--init openrc writes /etc/init.d/podctl-agent instead (\`rc-update add podctl-agent default\`). Nothing is started.`;
  static override examples = [
    '<%= config.bin %> agent install',
    '<%= config.bin %> agent install --init openrc',
    '<%= config.bin %> agent install --dir /tmp/units --root-dir /srv/podctl',
  ];
  static override flags = {
    ...nodeFlags,
    init: Flags.string({ summary: 'Which init system.', options: ['systemd', 'openrc'], default: 'systemd' }),
    dir: Flags.string({ summary: 'Where to write it (default /etc/systemd/system, or /etc/init.d for openrc).' }),
  };

  async run(): Promise<void> {
    const { flags, metadata } = await this.parse(AgentInstall);
    const [{ agentArgs }, { openrcScript, systemdUnit }] = await Promise.all([
      import('../../cli/node.js'),
      import('../../core/node/supervise.js'),
    ]);
    const unit = {
      exec: [process.execPath, process.argv[1]!],
      rootDir: flags['root-dir'],
      logRoot: flags['log-root'],
      // The unit gives --root-dir and --log-root itself; the rest only as given here.
      args: agentArgs(flags, metadata, { also: ['runtime-endpoint'], always: [], omit: ['root-dir', 'log-root'] }),
    };
    const openrc = flags.init === 'openrc';
    const dir = flags.dir ?? (openrc ? '/etc/init.d' : '/etc/systemd/system');
    const path = join(dir, openrc ? 'podctl-agent' : 'podctl-agent.service');
    // Made first: a value the format cannot carry is refused before anything is written.
    const text = openrc ? openrcScript(unit) : systemdUnit(unit);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path, text);
    if (openrc) chmodSync(path, 0o755);
    this.log(`wrote ${path}`);
    this.log(
      openrc
        ? 'start it at boot: rc-update add podctl-agent default && rc-service podctl-agent start'
        : 'start it at boot: systemctl daemon-reload && systemctl enable --now podctl-agent',
    );
  }
}
