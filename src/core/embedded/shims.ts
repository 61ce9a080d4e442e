import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { EmbeddedPaths } from './paths.js';
import { processCmdline, stopPid } from './process.js';

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
  /** When the process started (clock ticks since boot): a PID reused by a new process has another. */
  startTime(pid: number): string | undefined;
}

/** The fields of /proc/PID/stat after "pid (comm)": comm may hold spaces and parentheses, so read after its last ")". */
const statFields = (pid: number): string[] | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
};

export const hostProcTable = (): ProcTable => ({
  pids: () =>
    readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .map(Number),
  cmdline: (pid) => processCmdline(pid),
  // state ppid pgrp ... (stat(5): ppid is field 4, starttime field 22).
  parent: (pid) => {
    const f = statFields(pid);
    return f ? Number(f[1]) : undefined;
  },
  startTime: (pid) => statFields(pid)?.[19],
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

interface ReapOptions {
  procs?: ProcTable;
  kill?: (pid: number, signal: NodeJS.Signals) => void;
  bundleExists?: (path: string) => boolean;
  graceMs?: number;
}

/** The shims without a bundle; one that still runs a process is said and left alone, since ending it would orphan that process. */
function lostShims(
  paths: EmbeddedPaths,
  log: (line: string) => void,
  procs: ProcTable,
  bundleExists: (path: string) => boolean,
): ShimProcess[] {
  return embeddedShims(paths, procs).filter((shim) => {
    if (bundleExists(shim.bundle)) return false;
    if (shim.children.length)
      log(
        `warning: containerd's shim ${shim.pid} (${shim.namespace}/${shim.id.slice(0, 12)}) ` +
          `has no bundle but runs process ${shim.children.join(', ')}: left alone`,
      );
    return shim.children.length === 0;
  });
}

/** Ends these shims by their PIDs, as the embedded runtime stops what it started: SIGTERM, then SIGKILL after the grace period. */
async function endShims(
  paths: EmbeddedPaths,
  shims: ShimProcess[],
  log: (line: string) => void,
  procs: ProcTable,
  opts: ReapOptions,
): Promise<number[]> {
  // The same process, by its command line.
  const alive = (pid: number) => procs.cmdline(pid)?.includes(paths.socket) === true;
  const present = shims.filter((shim) => alive(shim.pid));
  await Promise.all(present.map((shim) => stopPid(shim.pid, opts.graceMs ?? 3000, () => alive(shim.pid), opts.kill)));
  for (const shim of present)
    log(
      `ended containerd's shim ${shim.pid} (${shim.namespace}/${shim.id.slice(0, 12)}): ` +
        `its bundle was gone, so containerd could no longer stop it`,
    );
  return present.map((s) => s.pid);
}

/**
 * Ends the shims containerd has lost, with containerd stopped. containerd 1.6 can lose one: a task
 * deletion that times out under load removes the bundle without the shim's shutdown (containerd#7496),
 * and a container that exits while containerd is down leaves its shim behind (containerd#6771). containerd
 * finds its shims again through their bundles, so one whose bundle is gone is never asked to exit: it
 * lives on, idle, for as long as the host runs. One with no bundle and no process under it serves nothing.
 */
export async function reapLostShims(paths: EmbeddedPaths, log: (line: string) => void, opts: ReapOptions = {}): Promise<number[]> {
  const procs = opts.procs ?? hostProcTable();
  return endShims(paths, lostShims(paths, log, procs, opts.bundleExists ?? existsSync), log, procs, opts);
}

/**
 * The same while containerd runs (the agent, on the embedded runtime, for a host that runs for weeks
 * between two `runtime up`s). A shim is without its bundle for a moment on every pod removal, between
 * the bundle's deletion and its exit: only one seen lost on sweeps at least `confirmMs` apart, with the
 * same start time (not a new process under a reused PID), is ended.
 */
export class LostShimSweeper {
  private seen = new Map<number, { startTime: string; since: number }>();

  constructor(
    private readonly paths: EmbeddedPaths,
    private readonly log: (line: string) => void,
    private readonly opts: ReapOptions & { confirmMs?: number } = {},
  ) {}

  async sweep(now: number): Promise<number[]> {
    const procs = this.opts.procs ?? hostProcTable();
    const confirmMs = this.opts.confirmMs ?? 60_000;
    const next = new Map<number, { startTime: string; since: number }>();
    const confirmed: ShimProcess[] = [];
    for (const shim of lostShims(this.paths, () => undefined, procs, this.opts.bundleExists ?? existsSync)) {
      const startTime = procs.startTime(shim.pid);
      if (startTime === undefined) continue;
      const prev = this.seen.get(shim.pid);
      const since = prev?.startTime === startTime ? prev.since : now;
      if (now - since >= confirmMs) confirmed.push(shim);
      else next.set(shim.pid, { startTime, since });
    }
    this.seen = next;
    return confirmed.length ? endShims(this.paths, confirmed, this.log, procs, this.opts) : [];
  }
}
