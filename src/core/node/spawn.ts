import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { PodctlError } from '../errors.js';
import { AgentClient } from './client.js';
import { agentLogFile } from './paths.js';

/** The last lines of the agent's log, for an error that says why it did not start. */
function logTail(path: string, lines = 10): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * Starts the agent in the background: a new session (no controlling terminal, so Ctrl-C and the
 * shell's exit do not reach it), output appended to <root-dir>/agent.log. Resolves once it answers on
 * its socket; the agent takes the state dir's lock itself, so a race with another start leaves one.
 */
export async function startAgentInBackground(opts: {
  rootDir: string;
  command: string;
  args: string[];
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}): Promise<{ pid: number; log: string }> {
  mkdirSync(opts.rootDir, { recursive: true, mode: 0o700 });
  const log = agentLogFile(opts.rootDir);
  const fd = openSync(log, 'a', 0o600);
  const child = spawn(opts.command, opts.args, { detached: true, stdio: ['ignore', fd, fd], env: opts.env ?? process.env });
  closeSync(fd);
  let exited: number | string | undefined;
  child.on('exit', (code, signal) => (exited = code ?? signal ?? 'unknown'));
  child.unref();
  const client = new AgentClient(opts.rootDir);
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (await client.running(500)) return { pid: child.pid!, log };
    if (exited !== undefined) {
      // Another agent may have won the race for the lock: then it answers.
      if (await client.running(1000)) return { pid: (await client.info()).pid, log };
      throw new PodctlError(`the agent did not start (exit ${exited})`, { hint: `its log ${log} ends with:\n${logTail(log)}` });
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new PodctlError(
    `the agent (pid ${child.pid}) does not answer on its socket after ${Math.round((opts.timeoutMs ?? 30_000) / 1000)} s`,
    { hint: `see ${log}` },
  );
}
