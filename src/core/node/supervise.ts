import { resolve } from 'node:path';
import { PodctlError } from '../errors.js';
import { readStateLock } from '../lock.js';

/** The process that owns a state dir (an agent, watch or foreground run), by the PID in its lock. */
export function agentProcess(rootDir: string): { pid: number; since: string; kind: string } | undefined {
  return readStateLock(rootDir);
}

/**
 * Stops the agent of a state dir by the PID in its lock: SIGTERM (it stops its loop and leaves the
 * pods running), then waits until the lock is free. Undefined when no agent runs there.
 */
export async function stopAgent(rootDir: string, timeoutMs = 60_000): Promise<{ pid: number } | undefined> {
  const holder = readStateLock(rootDir);
  if (!holder) return undefined;
  try {
    process.kill(holder.pid, 'SIGTERM');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
  const deadline = Date.now() + timeoutMs;
  while (readStateLock(rootDir)?.pid === holder.pid) {
    if (Date.now() > deadline) throw new PodctlError(`the agent (pid ${holder.pid}) is still running ${Math.round(timeoutMs / 1000)} s after SIGTERM`, { hint: `kill -KILL ${holder.pid} stops it at once; its pods keep running` });
    await new Promise((r) => setTimeout(r, 100));
  }
  return { pid: holder.pid };
}

export interface BootUnitOptions {
  /** The command that runs podctl: node and its bin/run.js, or an installed podctl. */
  exec: string[];
  rootDir: string;
  logRoot: string;
  /** Extra agent flags (e.g. --runtime-endpoint, --allow-privileged). */
  args?: string[];
}

const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `"${a.replace(/(["\\$`])/g, '\\$1')}"`);

function agentCommand(o: BootUnitOptions): string {
  return [...o.exec, 'agent', '--root-dir', resolve(o.rootDir), '--log-root', resolve(o.logRoot), ...(o.args ?? [])].map(quote).join(' ');
}

/** A systemd unit that starts the agent at boot, after containerd, and restarts it if it dies. */
export function systemdUnit(o: BootUnitOptions): string {
  return `[Unit]
Description=podctl node agent (${resolve(o.rootDir)})
After=network-online.target containerd.service
Wants=network-online.target

[Service]
Type=simple
ExecStart=${agentCommand(o)}
# SIGTERM stops the sync loop; the pods keep running, as the kubelet's do.
KillMode=process
KillSignal=SIGTERM
TimeoutStopSec=60
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
`;
}

/** An OpenRC service script for the same (supervise-daemon restarts it if it dies). */
export function openrcScript(o: BootUnitOptions): string {
  const [command, ...rest] = [...o.exec, 'agent', '--root-dir', resolve(o.rootDir), '--log-root', resolve(o.logRoot), ...(o.args ?? [])];
  return `#!/sbin/openrc-run
description="podctl node agent (${resolve(o.rootDir)})"
supervisor=supervise-daemon
command=${quote(command!)}
command_args="${rest.map(quote).join(' ').replace(/"/g, '\\"')}"
output_log=${quote(resolve(o.rootDir, 'agent.log'))}
error_log=${quote(resolve(o.rootDir, 'agent.log'))}

depend() {
\tneed net
\tafter containerd
}
`;
}
