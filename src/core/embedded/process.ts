import { spawn, execFile } from 'node:child_process';
import { openSync, closeSync, writeFileSync, rmSync } from 'node:fs';

export { livePid, processCmdline } from './pid.js';

/** Starts a daemon detached from us, output to a log file, and records its pid. */
export function startDaemon(cmd: string, args: string[], logFile: string, pidFile: string): number {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd] });
    if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
    child.unref();
    writeFileSync(pidFile, `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** SIGTERM, then SIGKILL after the grace period; only the pid we recorded. */
export async function stopPid(pid: number, graceMs: number, isAlive: () => boolean, kill: (pid: number, signal: NodeJS.Signals) => void = (p, s) => process.kill(p, s)): Promise<void> {
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
    execFile(cmd, args, { env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 300_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        const detail = (stderr || stdout || err.message).trim().split('\n').slice(-5).join('\n');
        reject(new Error(`${cmd} ${args.join(' ')} failed: ${detail}`));
        return;
      }
      resolve(stdout);
    });
  });
}
