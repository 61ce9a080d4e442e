import { spawn, execFile } from 'node:child_process';
import { openSync, closeSync, writeFileSync, rmSync } from 'node:fs';

export { livePid, processCmdline } from './pid.js';

/** How the daemons this process started ended, by pid: seen while this process still runs. */
const daemonEnds = new Map<number, string>();

/** How a daemon this process started ended ("exit code 1", "signal SIGKILL"), if it has and this process saw it. */
export function daemonEnd(pid: number): string | undefined {
  return daemonEnds.get(pid);
}

/** How long a daemon just started may read as another program (its exec under way) before it counts as gone. */
export const DAEMON_START_GRACE_MS = 2000;

/**
 * Whether a daemon started moments ago, whose pid does not read as that daemon, has ended. The
 * kernel closes the exec's close-on-exec pipe, which ends spawn(), before it sets the new program's
 * arguments: for a moment the cmdline reads empty, longer for a large binary on a loaded machine
 * (twice in CI a containerd that went on to boot was said to be gone). It ended when its exit was
 * seen, when its pid is gone, or when it stays something else past the grace.
 */
export function daemonStartEnded(s: { exitSeen: boolean; pidExists: boolean; otherForMs: number }): boolean {
  return s.exitSeen || !s.pidExists || s.otherForMs > DAEMON_START_GRACE_MS;
}

/** Starts a daemon detached from us, output to a log file, and records its pid. */
export function startDaemon(cmd: string, args: string[], logFile: string, pidFile: string): number {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd] });
    if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
    const pid = child.pid;
    // An end during start-up is then said with its cause, which the daemon's log may not hold.
    child.once('exit', (code, signal) => daemonEnds.set(pid, signal ? `signal ${signal}` : `exit code ${code}`));
    child.unref();
    writeFileSync(pidFile, `${pid}\n`);
    return pid;
  } finally {
    closeSync(fd);
  }
}

/** SIGTERM, then SIGKILL after the grace period; only the pid we recorded. */
export async function stopPid(
  pid: number,
  graceMs: number,
  isAlive: () => boolean,
  kill: (pid: number, signal: NodeJS.Signals) => void = (p, s) => process.kill(p, s),
): Promise<void> {
  try {
    kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive()) return;
    await sleep(100);
  }
  try {
    kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  for (let i = 0; i < 50 && isAlive(); i++) await sleep(100);
}

export function removeFile(path: string): void {
  rmSync(path, { force: true });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs a command to completion; rejects with its stderr. */
export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 300_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) {
          const detail = (stderr || stdout || err.message).trim().split('\n').slice(-5).join('\n');
          reject(new Error(`${cmd} ${args.join(' ')} failed: ${detail}`));
          return;
        }
        resolve(stdout);
      },
    );
  });
}
