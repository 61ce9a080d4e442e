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
    if (Date.now() > deadline)
      throw new PodctlError(`the agent (pid ${holder.pid}) is still running ${Math.round(timeoutMs / 1000)} s after SIGTERM`, {
        hint: `kill -KILL ${holder.pid} stops it at once; its pods keep running`,
      });
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

/**
 * A word of a systemd command line (systemd.service, "Command lines"): double-quoted with C-style
 * escapes for `\` and `"`, `%` doubled (a specifier otherwise), and `$` doubled in the arguments
 * (environment substitution; the executable's path is not substituted). Words of only safe
 * characters stay bare, as systemctl writes them. systemd refuses an executable whose path holds a
 * quote or a backslash, however quoted ("Executable name contains special characters").
 */
function systemdWord(a: string, executable = false): string {
  if (executable && /["'\\]/.test(a)) {
    throw new PodctlError(
      `agent install: systemd does not start an executable whose path holds a quote or a backslash: ${JSON.stringify(a)}`,
      { hint: 'run podctl (and node) from a path without them' },
    );
  }
  if (/^[\w@+=:,./-]+$/.test(a)) return a;
  const escaped = a.replace(/[\\"]/g, '\\$&').replace(/%/g, '%%');
  return `"${executable ? escaped : escaped.replace(/\$/g, '$$$$')}"`;
}

/** A value for a line of a unit file where only specifiers are expanded (Description=). */
const systemdText = (a: string) => a.replace(/%/g, '%%');

/** A shell word: bare when of safe characters only, else in single quotes, where sh expands nothing. */
const shellWord = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);

/** The agent's argv, refused when a word holds a control character (a newline would end the line of a unit file). */
function agentArgv(o: BootUnitOptions): string[] {
  const argv = [...o.exec, 'agent', '--root-dir', resolve(o.rootDir), '--log-root', resolve(o.logRoot), ...(o.args ?? [])];
  // eslint-disable-next-line no-control-regex
  const bad = argv.find((a) => /[\x00-\x1f\x7f]/.test(a));
  if (bad !== undefined)
    throw new PodctlError(
      `agent install: ${JSON.stringify(bad)} holds a control character, which a unit file or init script cannot carry`,
      { hint: 'choose paths and flag values without control characters (newline, tab, …)' },
    );
  return argv;
}

/** A systemd unit that starts the agent at boot, after containerd, and restarts it if it dies. */
export function systemdUnit(o: BootUnitOptions): string {
  const argv = agentArgv(o);
  return `[Unit]
Description=podctl node agent (${systemdText(resolve(o.rootDir))})
After=network-online.target containerd.service
Wants=network-online.target

[Service]
Type=simple
ExecStart=${argv.map((a, i) => systemdWord(a, i === 0)).join(' ')}
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

/**
 * An OpenRC service script for the same (supervise-daemon restarts it if it dies). openrc-run sources
 * the script, then its supervise-daemon.sh passes command, command_args and the logs through `eval`:
 * those values are shell words quoted twice, so that both evaluations give each word back as it is.
 */
export function openrcScript(o: BootUnitOptions): string {
  const [command, ...rest] = agentArgv(o);
  const evaluated = (words: string[]) => shellWord(words.map(shellWord).join(' '));
  const log = resolve(o.rootDir, 'agent.log');
  return `#!/sbin/openrc-run
description=${shellWord(`podctl node agent (${resolve(o.rootDir)})`)}
supervisor=supervise-daemon
command=${evaluated([command!])}
command_args=${evaluated(rest)}
output_log=${evaluated([log])}
error_log=${evaluated([log])}

depend() {
\tneed net
\tafter containerd
}
`;
}
