import { mkdirSync, openSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { PodctlError } from './errors.js';

interface LockRecord {
  pid: number;
  /** The holder's /proc/<pid>/cmdline, so that a reused PID is not mistaken for it. */
  cmdline: string;
  since: string;
}

function cmdlineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
}

/** What the holder runs: agent, watch or run (the podctl command in its command line). */
function holderKind(rec: LockRecord): string {
  const args = rec.cmdline.split('\0');
  return args.find((a) => a === 'agent' || a === 'watch' || a === 'run') ?? 'agent';
}

/** The lock's holder while it runs (the agent on this state dir), else undefined. */
export function readStateLock(dir: string, name = 'watch.lock'): { pid: number; since: string; kind: string } | undefined {
  let rec: LockRecord;
  try {
    rec = JSON.parse(readFileSync(join(dir, name), 'utf8')) as LockRecord;
  } catch {
    return undefined;
  }
  return holderAlive(rec) ? { pid: rec.pid, since: rec.since, kind: holderKind(rec) } : undefined;
}

/** A lock is held while its PID runs the same command line it recorded. */
function holderAlive(rec: LockRecord): boolean {
  const cmdline = cmdlineOf(rec.pid);
  return cmdline !== undefined && cmdline !== '' && cmdline === rec.cmdline;
}

/**
 * One owner per state directory: a lock file naming the holder's PID. A
 * second owner refuses at once, naming the first; a lock left by a process
 * that died (even by SIGKILL) is taken over.
 */
export function acquireStateLock(dir: string, name = 'watch.lock'): { path: string; release(): void } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, name);
  const me: LockRecord = { pid: process.pid, cmdline: cmdlineOf(process.pid) ?? process.argv.join('\0'), since: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      return {
        path,
        release: () => {
          try {
            if ((JSON.parse(readFileSync(path, 'utf8')) as LockRecord).pid === me.pid) unlinkSync(path);
          } catch {
            // Already gone: nothing to release.
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let rec: LockRecord | undefined;
    try {
      rec = JSON.parse(readFileSync(path, 'utf8')) as LockRecord;
    } catch {
      rec = undefined;
    }
    if (rec && holderAlive(rec)) {
      throw new PodctlError(`another podctl ${holderKind(rec)} (pid ${rec.pid}, since ${rec.since}) owns ${dir}`, {
        hint: `stop it first, or give this one another --root-dir`,
        exitCode: 1,
      });
    }
    // Stale (its holder is gone) or unreadable: take it over.
    try {
      unlinkSync(path);
    } catch {
      // Someone else took it over first; the next attempt says who.
    }
  }
  throw new PodctlError(`could not take the lock ${path}`, { hint: 'another podctl is starting on the same --root-dir', exitCode: 1 });
}
