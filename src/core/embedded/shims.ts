import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { EmbeddedPaths } from './paths.js';
import { sleep } from './process.js';

/** A shim the embedded containerd started: one per pod (its sandbox's id), serving the tasks of that bundle. */
export interface ShimProcess {
  pid: number;
  namespace: string;
  id: string;
  /** Where containerd keeps the task's bundle, and finds the shim again after a restart. */
  bundle: string;
  /** Processes whose parent is the shim: the containers' own, while any runs. */
  children: number[];
}

/** What reading the process table needs, injected so that tests give a table of their own. */
export interface ProcTable {
  pids(): number[];
  cmdline(pid: number): string[] | undefined;
  parent(pid: number): number | undefined;
}

export const hostProcTable = (root = '/proc'): ProcTable => ({
  pids: () => readdirSync(root).filter((e) => /^\d+$/.test(e)).map(Number),
  cmdline: (pid) => {
    try {
      const raw = readFileSync(join(root, String(pid), 'cmdline'), 'utf8');
      return raw ? raw.split('\0').filter(Boolean) : undefined;
    } catch {
      return undefined;
    }
  },
  parent: (pid) => {
    try {
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after its last ")".
      const stat = readFileSync(join(root, String(pid), 'stat'), 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return undefined;
    }
  },
});

const flag = (args: string[], name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

/**
 * The runc shims whose -address is this containerd's socket: only the embedded containerd starts
 * processes with it, so these are ours. Each with its bundle path and its child processes.
 */
export function embeddedShims(paths: EmbeddedPaths, procs: ProcTable = hostProcTable()): ShimProcess[] {
  const pids = procs.pids();
  const shims: ShimProcess[] = [];
  for (const pid of pids) {
    const args = procs.cmdline(pid);
    if (!args || basename(args[0] ?? '') !== 'containerd-shim-runc-v2' || flag(args, '-address') !== paths.socket) continue;
    const namespace = flag(args, '-namespace');
    const id = flag(args, '-id');
    // `start` is the short-lived launcher of a shim, which exits once the shim runs.
    if (!namespace || !id || args.includes('start') || args.includes('delete')) continue;
    shims.push({ pid, namespace, id, bundle: join(paths.stateDir, 'io.containerd.runtime.v2.task', namespace, id), children: [] });
  }
  if (shims.length) {
    const byPid = new Map(shims.map((s) => [s.pid, s]));
    for (const pid of pids) byPid.get(procs.parent(pid) ?? -1)?.children.push(pid);
  }
  return shims;
}

/**
 * Ends the shims containerd has lost, with containerd stopped. containerd 1.6 can lose one: a task
 * deletion that times out under load removes the bundle without the shim's shutdown (containerd#7496),
 * and a container that exits while containerd is down leaves its shim behind (containerd#6771). containerd
 * finds its shims again through their bundles, so one whose bundle is gone is never asked to exit: it
 * lives on, idle, for as long as the host runs. One with no bundle and no process under it serves nothing;
 * one that still has a process under it is left alone (and said), since ending it would orphan that process.
 * Each is ended by its PID: SIGTERM, then SIGKILL after the grace period.
 */
export async function reapLostShims(
  paths: EmbeddedPaths,
  log: (line: string) => void,
  opts: { procs?: ProcTable; kill?: (pid: number, signal: NodeJS.Signals) => void; bundleExists?: (path: string) => boolean; graceMs?: number } = {},
): Promise<number[]> {
  const procs = opts.procs ?? hostProcTable();
  const kill = opts.kill ?? ((pid, signal) => process.kill(pid, signal));
  const bundleExists = opts.bundleExists ?? existsSync;
  const lost = embeddedShims(paths, procs).filter((s) => !bundleExists(s.bundle));
  const ended: number[] = [];
  for (const shim of lost) {
    if (shim.children.length) {
      log(`warning: containerd's shim ${shim.pid} (${shim.namespace}/${shim.id.slice(0, 12)}) has no bundle but runs process ${shim.children.join(', ')}: left alone`);
      continue;
    }
    try {
      kill(shim.pid, 'SIGTERM');
    } catch {
      continue;
    }
    ended.push(shim.pid);
    log(`ended containerd's shim ${shim.pid} (${shim.namespace}/${shim.id.slice(0, 12)}): its bundle was gone, so containerd could no longer stop it`);
  }
  // The same process, by its command line, until the grace period ends; then SIGKILL.
  const alive = (pid: number) => procs.cmdline(pid)?.includes(paths.socket) === true;
  const deadline = Date.now() + (opts.graceMs ?? 3000);
  while (ended.some(alive) && Date.now() < deadline) await sleep(50);
  for (const pid of ended.filter(alive)) {
    try {
      kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
  return ended;
}
