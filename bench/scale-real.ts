import { BENCH_NAMESPACE, mb, machineInfo, ms, onCleanup, stats, type BenchContext, type BenchResult, type Row } from './lib.js';
import { REAL_ENDPOINT, criClient, removeBenchPods, sweepBenchPods } from './node.js';
import type { MemorySample, RelistSample, SteadySample } from './watch-worker.js';
import { startWorker } from './worker-client.js';

/** 4. Scale on the real runtime: as many one-container busybox pods as the machine holds comfortably. */
export async function scaleReal(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const pods = ctx.quick ? 10 : 100;
  const steadySeconds = ctx.quick ? 10 : 70;
  const client = criClient(REAL_ENDPOINT);
  const version = await client.version();
  await removeBenchPods(client);
  const worker = await startWorker({ endpoint: REAL_ENDPOINT, relistPeriodMs: 1000, namespace: BENCH_NAMESPACE });
  const done = onCleanup('scale-real worker and pods', async () => {
    await worker.stop();
    const removed = await sweepBenchPods();
    ctx.log(`  removed ${removed} pod(s)`);
  });
  let result: {
    converge: { ms: number; perPod: number[]; settleMs: number; rssAfterSettle: number };
    steady: SteadySample;
    memory: MemorySample;
    noChange: RelistSample[];
  };
  try {
    ctx.log(`  ${pods} busybox pods on ${version.runtimeName} ${version.runtimeVersion}: converging`);
    const converge = await worker.request<{ ms: number; perPod: number[]; settleMs: number; rssAfterSettle: number }>({
      cmd: 'converge',
      pods,
      containersPerPod: 1,
      timeoutMs: 10 * 60_000,
    });
    ctx.log(`  converged in ${ms(converge.ms)}; steady state for ${steadySeconds} s`);
    const steady = await worker.request<SteadySample>({ cmd: 'steady', seconds: steadySeconds });
    const memory = await worker.request<MemorySample>({ cmd: 'memory' });
    const noChange = await worker.request<RelistSample[]>({ cmd: 'relists', count: 10 });
    result = { converge, steady, memory, noChange };
  } finally {
    await done();
    client.close();
  }
  const perPod = stats(result.converge.perPod);
  const steadyRelist = stats(result.steady.relistMs);
  const nc = stats(result.noChange.map((s) => s.ms));
  const rows: Row[] = [
    {
      name: `${pods} pods: converge from zero to all Running`,
      value: `${ms(result.converge.ms)} (per pod: median ${ms(perPod.median)}, p90 ${ms(perPod.p90)}); then ${ms(result.converge.settleMs)} until quiet`,
      about: "All pods added at once to the SyncLoop of the watch worker: to the last one's first status with its container running.",
    },
    {
      name: `${pods} pods: relist duration`,
      value: `steady: median ${ms(steadyRelist.median)}, max ${ms(steadyRelist.max)}; alone: median ${ms(nc.median)}`,
      about: "The PLEG's own timing of its relists during the steady window, and relists run alone with the loop stopped (10 samples).",
    },
    {
      name: `${pods} pods: steady-state CPU of the watch process`,
      value: `${(result.steady.cpu * 100).toFixed(1)}% of one core over ${result.steady.seconds.toFixed(0)} s (${result.steady.syncs} pod syncs)`,
      about: 'process.cpuUsage() of the worker during the window after convergence (relist 1 s, housekeeping 2 s, 60 s periodic resync).',
    },
    {
      name: `${pods} pods: memory of the watch process`,
      value: `RSS ${mb(result.memory.rss)}, heap used ${mb(result.memory.heapUsed)} (after GC)`,
      about: 'process.memoryUsage() of the worker after the window and a forced GC.',
    },
  ];
  return {
    name: 'scale-real',
    title: `Scale on the real runtime (${pods} busybox pods)`,
    quick: ctx.quick,
    machine: machineInfo(`${version.runtimeName} ${version.runtimeVersion}`),
    rows,
    findings: [],
    notes: [
      `The watch worker (Kubelet, generic PLEG at 1 s, SyncLoop) runs in a child process against the embedded containerd, agent "bench", namespace ${BENCH_NAMESPACE}. ${pods} pods keep well inside this machine (each pod is a containerd shim, a pause process and a shell).`,
      `CRI calls in the steady window: ${Object.entries(result.steady.calls)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}.`,
    ],
    data: result,
    durationS: (Date.now() - began) / 1000,
  };
}
