/**
 * The "watch process" of the scale benchmarks: a child process holding a
 * Kubelet, a generic PLEG and a SyncLoop wired as `podctl watch` wires them,
 * driven over IPC so that its CPU, RSS and heap are its own (the runtime it
 * talks to lives in another process). Run with --expose-gc.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { BUSYBOX, SLEEP_COMMAND, benchPod } from './lib.js';
import { InProcessNode, criClient } from './node.js';
import { GenericPleg } from '../src/core/pleg/generic.js';
import type { PlegKind } from '../src/core/pleg/select.js';

export interface WorkerInit {
  endpoint: string;
  relistPeriodMs: number;
  /** The PLEG as `podctl watch --pleg` picks it; generic by default. */
  pleg?: PlegKind;
  namespace: string;
  /** Container logs (the parent removes it). */
  logRoot: string;
  /** The state directory (pod directories), as `podctl watch` always has one (the parent removes it). */
  rootDir: string;
}

export type WorkerRequest =
  | { cmd: 'converge'; pods: number; containersPerPod: number; wave?: number; timeoutMs: number }
  | { cmd: 'steady'; seconds: number }
  | { cmd: 'relists'; count: number }
  | { cmd: 'memory' };

export interface RelistSample {
  ms: number;
  calls: Record<string, number>;
  events: number;
}

export interface SteadySample {
  seconds: number;
  /** CPU time (user + system) of this process per wall second, as a fraction of one core. */
  cpu: number;
  relistMs: number[];
  calls: Record<string, number>;
  syncs: number;
}

/** process.memoryUsage() high-water marks, each on its own, sampled during convergence. */
export interface ConvergePeak {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** Where the RSS is: V8's heap spaces (committed and used), and the kernel's anonymous and file-backed parts. */
export interface MemoryDetail {
  rss: number;
  /** RssAnon and RssFile of /proc/self/status (Linux). */
  rssAnon?: number;
  rssFile?: number;
  heapUsed: number;
  heapTotal: number;
  arrayBuffers: number;
  external: number;
  /** Per V8 heap space: committed (size) and used bytes. */
  spaces: Record<string, { size: number; used: number }>;
}

export function memoryDetail(): MemoryDetail {
  const m = process.memoryUsage();
  const spaces: MemoryDetail['spaces'] = {};
  for (const s of getHeapSpaceStatistics()) spaces[s.space_name] = { size: s.space_size, used: s.space_used_size };
  const out: MemoryDetail = {
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    arrayBuffers: m.arrayBuffers,
    external: m.external,
    spaces,
  };
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    out.rssAnon = kb('RssAnon');
    out.rssFile = kb('RssFile');
  } catch {
    // Not Linux: V8's numbers only.
  }
  return out;
}

export interface MemorySample {
  /** Before the forced GC, and after it. */
  detailNoGc?: MemoryDetail;
  detail?: MemoryDetail;
  /** RSS before the forced GC (the process as it runs). */
  rssNoGc?: number;
  /** The rest: after a forced GC. */
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

const init = JSON.parse(process.argv[2] ?? '{}') as WorkerInit;
const calls: Record<string, number> = {};
const client = criClient(init.endpoint, (c) => void (calls[c.method] = (calls[c.method] ?? 0) + 1));
let relists: number[] = [];
const node = new InProcessNode({
  client,
  plegKind: init.pleg,
  relistPeriodMs: init.relistPeriodMs,
  onRelist: (d) => {
    relists.push(d);
    relistsDone++;
  },
  logRoot: init.logRoot,
  rootDir: init.rootDir,
});
let syncs = 0;
const syncErrors = new Map<string, number>();
node.kubelet.observe({
  onSyncResult: () => syncs++,
  onSyncError: (_pod, err) => {
    const key = (err instanceof Error ? err.message : String(err)).replace(/[0-9a-f]{64}/g, '<id>').slice(0, 160);
    syncErrors.set(key, (syncErrors.get(key) ?? 0) + 1);
  },
});
if (process.env.PODCTL_BENCH_DEBUG) {
  setInterval(() => {
    const m = process.memoryUsage();
    console.error(
      `worker: rss ${Math.round(m.rss / 1e6)} MB heap ${Math.round(m.heapUsed / 1e6)} MB, running statuses ${node.kubelet.statusManager.all().filter((st) => st.phase === 'Running').length}, relists ${relists.length}, sync errors ${JSON.stringify([...syncErrors])}`,
    );
  }, 5000).unref();
}
let eventsSeen = 0;
let relistsDone = 0;
node.pleg.watch(() => eventsSeen++);
node.start();
let loopStopped = false;

/** The generic PLEG every kind builds on (an event-driven one relists through it as a safety net). */
const generic: GenericPleg = node.pleg instanceof GenericPleg ? node.pleg : (node.pleg as unknown as { generic: GenericPleg }).generic;

/** The generic PLEG's relist in progress, if any (private to it; read here only to wait for it). */
function relisting(): boolean {
  return (generic as unknown as { relisting: boolean }).relisting;
}

async function sleep(msec: number): Promise<void> {
  await new Promise((r) => setTimeout(r, msec));
}

/** After convergence the PLEG still reports every start and the pods sync again: wait until that is over. */
async function settle(deadline: number): Promise<number> {
  const t0 = performance.now();
  // An event-driven PLEG relists every 5 minutes: quiet is 2 s with no event instead of two relists.
  const byRelist = node.pleg.source === 'relist';
  for (;;) {
    // Quiet: two whole relists (or 2 s) with no event, and no pod worker busy.
    const events = eventsSeen;
    const target = relistsDone + 2;
    const until = performance.now() + 2000;
    while ((byRelist ? relistsDone < target : performance.now() < until) && performance.now() < deadline) await sleep(50);
    const idle = await Promise.race([
      node.kubelet.workers.waitIdle().then(() => true),
      sleep(Math.max(0, deadline - performance.now())).then(() => false),
    ]);
    if (idle && (!byRelist || relistsDone >= target) && eventsSeen === events) return performance.now() - t0;
    if (performance.now() > deadline) {
      throw new Error(
        `not quiet after ${Math.round(performance.now() - t0)} ms: ${relisting() ? `a relist under way since the last one completed ${Math.round(Date.now() - (generic.lastRelistAt ?? 0))} ms ago` : 'pod workers still busy'}`,
      );
    }
    await sleep(200);
  }
}

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

function memory(): MemorySample {
  const detailNoGc = memoryDetail();
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  // PODCTL_BENCH_HEAP_SNAPSHOT_DIR: the live heap at the end of the steady window, for a heap-snapshot viewer.
  const snapshots = process.env.PODCTL_BENCH_HEAP_SNAPSHOT_DIR;
  if (snapshots) writeHeapSnapshot(join(snapshots, `steady-${init.pleg ?? 'generic'}.heapsnapshot`));
  return {
    detailNoGc,
    detail: memoryDetail(),
    rssNoGc: detailNoGc.rss,
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
  };
}

async function handle(req: WorkerRequest): Promise<unknown> {
  switch (req.cmd) {
    case 'converge': {
      const containers = Array.from({ length: req.containersPerPod }, (_, i) => ({
        name: `c${i}`,
        image: BUSYBOX,
        command: SLEEP_COMMAND,
      }));
      const pods = Array.from({ length: req.pods }, (_, i) =>
        benchPod(`scale-${i}`, randomUUID(), { containers, namespace: init.namespace }),
      );
      const started = performance.now();
      const deadline = started + req.timeoutMs;
      const wave = req.wave ?? req.pods;
      const perPod: number[] = [];
      // The high-water marks of convergence (sampled), to tell the V8 heap from buffers and the rest.
      const peak: ConvergePeak = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
      const heap = heapProfiler();
      const snapshots = process.env.PODCTL_BENCH_HEAP_SNAPSHOT_DIR;
      let snapshotAt = process.env.PODCTL_BENCH_HEAP_SNAPSHOT_AT_MB
        ? Number(process.env.PODCTL_BENCH_HEAP_SNAPSHOT_AT_MB) * 1024 * 1024
        : undefined;
      const sample = setInterval(() => {
        const m = process.memoryUsage();
        for (const k of Object.keys(peak) as (keyof typeof peak)[]) peak[k] = Math.max(peak[k], m[k]);
        heap?.maybeTake(m.heapUsed);
        // PODCTL_BENCH_HEAP_SNAPSHOT_AT_MB (with ..._DIR): the live heap once, when convergence first has this much used.
        if (snapshotAt !== undefined && m.heapUsed >= snapshotAt && snapshots) {
          snapshotAt = undefined;
          writeHeapSnapshot(join(snapshots, `converge-${init.pleg ?? 'generic'}.heapsnapshot`));
        }
      }, 250);
      let settleMs = 0;
      let convergeMs = 0;
      for (let i = 0; i < pods.length; i += wave) {
        const times = await node.addAndWaitRunning(pods.slice(i, i + wave), Math.max(1, deadline - performance.now()));
        perPod.push(...times.values());
        convergeMs = performance.now() - started;
        settleMs = await settle(deadline);
      }
      clearInterval(sample);
      await heap?.finish();
      const settled = memoryDetail();
      return { ms: convergeMs, perPod, settleMs, rssAfterSettle: settled.rss, settled, peak };
    }
    case 'steady': {
      relists = [];
      syncs = 0;
      const before = { ...calls };
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, req.seconds * 1000));
      const cpu = process.cpuUsage(cpu0);
      const wall = (performance.now() - t0) / 1000;
      return {
        seconds: wall,
        cpu: (cpu.user + cpu.system) / 1e6 / wall,
        relistMs: relists,
        calls: diff(calls, before),
        syncs,
      } satisfies SteadySample;
    }
    case 'relists': {
      // The loop stops so that nothing but these relists runs; pods are left as they are.
      const pleg = generic;
      if (!loopStopped) {
        loopStopped = true;
        node.loop.stop();
        // A relist or a sync under way would be counted in the first sample.
        while (relisting()) await sleep(20);
        await node.kubelet.workers.waitIdle();
        await pleg.relist();
      }
      const out: RelistSample[] = [];
      for (let i = 0; i < req.count; i++) {
        const before = { ...calls };
        const t0 = performance.now();
        const events = await pleg.relist();
        out.push({ ms: performance.now() - t0, calls: diff(calls, before), events: events.length });
      }
      return out;
    }
    case 'memory':
      return memory();
  }
}

/**
 * With PODCTL_BENCH_HEAP_PROFILE_DIR set, convergence runs under V8's sampling heap profiler: the live
 * objects by allocation site are written once the V8 heap first holds PODCTL_BENCH_HEAP_PROFILE_AT_MB
 * (default 250) used, and again once settled (converge-peak.heapprofile, converge-settled.heapprofile).
 * With PODCTL_BENCH_HEAP_PROFILE_OLD_GARBAGE=1 the profiles also keep what major GCs collected: what
 * was promoted to the old generation and died there, the garbage that fragments its pages.
 */
function heapProfiler(): { maybeTake(heapUsed: number): void; finish(): Promise<void> } | undefined {
  const dir = process.env.PODCTL_BENCH_HEAP_PROFILE_DIR;
  if (!dir) return undefined;
  const at = Number(process.env.PODCTL_BENCH_HEAP_PROFILE_AT_MB ?? 250) * 1024 * 1024;
  const session = new Session();
  session.connect();
  const oldGarbage = process.env.PODCTL_BENCH_HEAP_PROFILE_OLD_GARBAGE === '1';
  const started = session.post('HeapProfiler.enable').then(() =>
    session.post('HeapProfiler.startSampling', {
      samplingInterval: 32 * 1024,
      ...(oldGarbage ? { includeObjectsCollectedByMajorGC: true } : {}),
    }),
  );
  let taken: Promise<void> | undefined;
  const take = async (name: string) => {
    await started;
    const { profile } = await session.post('HeapProfiler.getSamplingProfile');
    writeFileSync(join(dir, `${name}.heapprofile`), JSON.stringify(profile));
  };
  return {
    maybeTake(heapUsed) {
      if (!taken && heapUsed >= at) taken = take('converge-peak');
    },
    async finish() {
      await taken;
      await take('converge-settled');
      await session.post('HeapProfiler.stopSampling');
      session.disconnect();
    },
  };
}

/** With PODCTL_BENCH_PROFILE_DIR set, each request after convergence is CPU-profiled to <dir>/<cmd>-<n>.cpuprofile. */
const profileDir = process.env.PODCTL_BENCH_PROFILE_DIR;
let profiled = 0;
async function profiledHandle(req: WorkerRequest): Promise<unknown> {
  if (!profileDir || req.cmd === 'converge') return handle(req);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await handle(req);
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(profileDir, `${req.cmd}-${++profiled}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

process.on('message', (msg: { id: number; req: WorkerRequest }) => {
  profiledHandle(msg.req).then(
    (result) => process.send!({ id: msg.id, result }),
    (err: unknown) => process.send!({ id: msg.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
// An orderly exit, so that --cpu-prof (PODCTL_BENCH_WORKER_NODE_OPTIONS) writes its profile.
process.on('SIGTERM', () => process.exit(0));
process.send!({ id: 0, result: 'ready' });
