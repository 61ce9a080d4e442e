import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '../fakecri/index.js';
import type { CriClient } from '../src/core/cri/client.js';
import {
  BENCH_NAMESPACE,
  BUSYBOX,
  PODCTL_BIN,
  benchPod,
  machineInfo,
  ms,
  onCleanup,
  podYaml,
  sleep,
  stats,
  until,
  type BenchContext,
  type BenchResult,
  type Row,
  type Stats,
} from './lib.js';
import { agentSocket } from '../src/core/node/paths.js';
import type { PlegKind } from '../src/core/pleg/select.js';
import { InProcessNode, REAL_ENDPOINT, criClient, removeBenchPods, sweepBenchPods } from './node.js';

interface Samples {
  /** From the container's exit (its finishedAt) to the PLEG emitting ContainerDied. */
  pleg: number[];
  /** From the exit to the first pod status showing the container terminated. */
  status: number[];
  missed: number;
  /** Exits that came before every pod of their batch was running (the start of the others competing for the CPU). */
  duringStarts: number;
  /** The PLEG's source when the run ended (an event-driven one that fell back says relist). */
  source: string;
}

/** A container that runs for `seconds` then exits 3: the fake reads the same command (see below). */
function exitingPod(seconds: number) {
  return benchPod(`bench-exit-${randomUUID().slice(0, 8)}`, randomUUID(), {
    restartPolicy: 'Never',
    containers: [{ name: 'app', image: BUSYBOX, command: ['sh', '-c', `sleep ${seconds.toFixed(3)}; exit 3`] }],
  });
}

/**
 * Pods whose containers exit at staggered times, so exits fall anywhere
 * within a relist period; the exit time is the runtime's own finishedAt.
 */
async function measure(
  client: CriClient,
  opts: { plegKind: PlegKind; relistPeriodMs: number; batches: number; perBatch: number; minSeconds: number; spacingSeconds?: number },
): Promise<Samples> {
  const samples: Samples = { pleg: [], status: [], missed: 0, duringStarts: 0, source: '' };
  const finishedAt = new Map<string, number>();
  const statusSeen = new Set<string>();
  /** The PLEG reports every podctl pod on the runtime, others' too: only ours count. */
  const mine = new Set<string>();
  const node = new InProcessNode({
    client,
    plegKind: opts.plegKind,
    relistPeriodMs: opts.relistPeriodMs,
    onPlegEvent: (e) => {
      if (e.type !== 'ContainerDied' || e.containerName !== 'app' || !mine.has(e.id) || finishedAt.has(e.id)) return;
      const now = Date.now();
      const c = node.pleg.cache.get(e.id)?.containers.find((x) => x.id === e.data);
      if (c?.finishedAt === undefined) return;
      finishedAt.set(e.id, c.finishedAt);
      samples.pleg.push(now - c.finishedAt);
    },
  });
  node.kubelet.observe({
    onStatus: ({ pod, status }) => {
      const uid = pod.metadata!.uid!;
      if (!mine.has(uid) || statusSeen.has(uid) || !status.containerStatuses?.[0]?.state?.terminated) return;
      const now = Date.now();
      const finished = node.kubelet.podCache.get(uid)?.containers.find((c) => c.name === 'app')?.finishedAt;
      if (finished === undefined) return;
      statusSeen.add(uid);
      samples.status.push(now - finished);
    },
  });
  node.start();
  const stop = onCleanup('detection node', () => node.stop());
  for (let b = 0; b < opts.batches; b++) {
    // At random within 2 s (so within any relist period), or one every spacingSeconds (a little jitter).
    const exitAfter = (i: number) =>
      opts.minSeconds + (opts.spacingSeconds === undefined ? Math.random() * 2 : i * opts.spacingSeconds + Math.random() * 0.2);
    const pods = Array.from({ length: opts.perBatch }, (_, i) => exitingPod(exitAfter(i)));
    const uids = pods.map((p) => p.metadata!.uid!);
    for (const u of uids) mine.add(u);
    const added = Date.now();
    const running = await node.addAndWaitRunning(pods, 60_000).catch(() => undefined);
    const allRunningAt = running ? added + Math.max(...running.values()) : Infinity;
    const all = await until(() => uids.every((u) => finishedAt.has(u) && statusSeen.has(u)), 60_000, 50);
    if (!all) samples.missed += uids.filter((u) => !finishedAt.has(u) || !statusSeen.has(u)).length;
    samples.duringStarts += uids.filter((u) => (finishedAt.get(u) ?? Infinity) < allRunningAt).length;
    await node.removeAndWait(uids, 60_000);
  }
  samples.source = node.pleg.source;
  await stop();
  return samples;
}

function row(name: string, s: Stats, target: number | { p50: number; p99: number } | undefined, about: string): Row {
  const t: { p50?: number; p99: number } | undefined = typeof target === 'number' ? { p99: target } : target;
  return {
    name,
    value: s.n ? `p50 ${ms(s.median)}, p90 ${ms(s.p90)}, p99 ${ms(s.p99)} (n=${s.n})` : 'n/a',
    target: t === undefined ? undefined : [...(t.p50 !== undefined ? [`p50 < ${ms(t.p50)}`] : []), `p99 < ${ms(t.p99)}`].join(', '),
    met: t === undefined || !s.n ? undefined : s.p99 < t.p99 && (t.p50 === undefined || s.median < t.p50),
    about,
  };
}

/** A GET on the agent's socket under that root dir. */
function agentGet(rootDir: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: agentSocket(rootDir), path, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

/** utime + stime of a process, in ms (Linux /proc; clock ticks of 100 Hz). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * The CPU a real `podctl watch` uses while nothing happens: `pods` running pods, each PLEG
 * source in turn (the generic one relisting every second, then auto, which on containerd is its
 * event service with a 300 s relist), measured over the same window once every pod runs.
 */
async function idleCpu(
  client: CriClient,
  pleg: 'generic' | 'auto',
  pods: number,
  windowMs: number,
  log: (line: string) => void,
): Promise<{ percent: number; source: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-bench-idle-'));
  const manifests = join(dir, 'manifests');
  const names = Array.from({ length: pods }, (_, i) => `bench-idle-${pleg}-${i}`);
  mkdirSync(manifests);
  for (const n of names) writeFileSync(join(manifests, `${n}.yaml`), podYaml(n, BUSYBOX, { namespace: BENCH_NAMESPACE }));
  const root = join(dir, 'root');
  const child = spawn(
    process.execPath,
    [
      PODCTL_BIN,
      'watch',
      manifests,
      '--root-dir',
      root,
      '--log-root',
      join(dir, 'logs'),
      '--pleg',
      pleg,
      '--pleg-relist-period',
      '1s',
      '--cleanup-on-exit',
    ],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = onCleanup(`idle watch (${pleg})`, async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await Promise.race([exited, sleep(60_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await removeBenchPods(client);
    rmSync(dir, { recursive: true, force: true });
  });
  try {
    const running = await until(
      async () => {
        const cs = await client.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': BENCH_NAMESPACE } });
        return names.every((n) => cs.some((c) => c.state === 'CONTAINER_RUNNING' && c.labels['io.kubernetes.pod.name'] === n));
      },
      180_000,
      250,
    );
    if (!running) throw new Error(`idle CPU (${pleg}): the ${pods} pods were not all running within 180 s`);
    // Let the start-up syncs and the first housekeeping settle before the window.
    await sleep(5_000);
    const before = cpuMs(child.pid!);
    const t0 = performance.now();
    await sleep(windowMs);
    const used = cpuMs(child.pid!) - before;
    const percent = (100 * used) / (performance.now() - t0);
    const source = /podctl_pleg_source\{source="([^"]+)"\} 1/.exec(await agentGet(root, '/metrics'))?.[1] ?? 'unknown';
    log(`    ${pleg}: ${percent.toFixed(2)}% of one core over ${(windowMs / 1000).toFixed(0)} s (PLEG source ${source})`);
    return { percent, source };
  } finally {
    await stop();
  }
}

/**
 * 2. Detection latency: real containerd with the generic PLEG at 1 s and 100 ms and with containerd's events, the fake with the evented
 * PLEG.
 */
export async function detection(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const client = criClient(REAL_ENDPOINT);
  const version = await client.version();
  const sweep = onCleanup('detection pods', async () => void (await sweepBenchPods()));
  await removeBenchPods(client);
  const real = { batches: ctx.quick ? 1 : 6, perBatch: ctx.quick ? 5 : 10, minSeconds: 3 };
  ctx.log(`  generic PLEG, 1 s relist, containerd: ${real.batches * real.perBatch} exits`);
  const generic1s = await measure(client, { plegKind: 'generic', relistPeriodMs: 1000, ...real });
  ctx.log(`  generic PLEG, 100 ms relist, containerd: ${real.batches * real.perBatch} exits`);
  const generic100 = await measure(client, { plegKind: 'generic', relistPeriodMs: 100, ...real });
  ctx.log(`  containerd-events PLEG (relist 300 s, 1 s if it falls back), containerd: ${real.batches * real.perBatch} exits`);
  const containerdEvents = await measure(client, { plegKind: 'containerd', relistPeriodMs: 1000, ...real });
  const spaced = { batches: ctx.quick ? 1 : 3, perBatch: 10, minSeconds: 3, spacingSeconds: 1.2 };
  ctx.log(`  containerd-events PLEG, exits ${spaced.spacingSeconds} s apart: ${spaced.batches * spaced.perBatch} exits`);
  const containerdSpaced = await measure(client, { plegKind: 'containerd', relistPeriodMs: 1000, ...spaced });
  const idle = { pods: 20, windowMs: ctx.quick ? 15_000 : 60_000 };
  ctx.log(`  idle CPU of podctl watch with ${idle.pods} running pods, generic PLEG at 1 s, then auto (containerd's events)`);
  const idleGeneric = await idleCpu(client, 'generic', idle.pods, idle.windowMs, ctx.log);
  const idleAuto = await idleCpu(client, 'auto', idle.pods, idle.windowMs, ctx.log);
  await sweep();
  client.close();

  // The fake: containers `sleep S; exit N` exit after S seconds (the fake has no shell; it reads the command).
  const fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
  const stopFake = onCleanup('detection fake runtime', () => fake.stop());
  fake.setContainerBehaviour((config) => {
    const m = /^sleep ([\d.]+); exit (\d+)$/.exec(config.command[2] ?? '');
    return m ? { exitCode: Number(m[2]), afterMs: Number(m[1]) * 1000 } : undefined;
  });
  const fakeClient = criClient(fake.endpoint);
  // Small batches: exits must not land while a crowd of pods is still starting in this same process.
  const onFake = { batches: ctx.quick ? 3 : 10, perBatch: 20, minSeconds: 1 };
  ctx.log(`  evented PLEG, fake runtime: ${onFake.batches * onFake.perBatch} exits`);
  const evented = await measure(fakeClient, { plegKind: 'evented', relistPeriodMs: 1000, ...onFake });
  ctx.log(`  generic PLEG, 1 s relist, fake runtime: ${onFake.batches * onFake.perBatch} exits`);
  const genericFake = await measure(fakeClient, { plegKind: 'generic', relistPeriodMs: 1000, ...onFake });
  fakeClient.close();
  await stopFake();

  const s = {
    generic1s: { pleg: stats(generic1s.pleg), status: stats(generic1s.status) },
    generic100: { pleg: stats(generic100.pleg), status: stats(generic100.status) },
    containerdEvents: { pleg: stats(containerdEvents.pleg), status: stats(containerdEvents.status) },
    containerdSpaced: { pleg: stats(containerdSpaced.pleg), status: stats(containerdSpaced.status) },
    evented: { pleg: stats(evented.pleg), status: stats(evented.status) },
    genericFake: { pleg: stats(genericFake.pleg), status: stats(genericFake.status) },
  };
  const rows: Row[] = [
    row(
      'containerd, generic 1 s: ContainerDied',
      s.generic1s.pleg,
      1100,
      "From the container's exit (finishedAt as containerd reports it) to the generic PLEG emitting ContainerDied; includes containerd's own lag before ContainerStatus says EXITED.",
    ),
    row(
      'containerd, generic 1 s: status shows it',
      s.generic1s.status,
      undefined,
      'From the exit to the first v1 status with the container terminated (the sync the event triggers).',
    ),
    row('containerd, generic 100 ms: ContainerDied', s.generic100.pleg, 200, 'As above, relisting every 100 ms.'),
    row('containerd, generic 100 ms: status shows it', s.generic100.status, undefined, 'As above.'),
    row(
      'containerd, containerd events: ContainerDied',
      s.containerdEvents.pleg,
      { p50: 20, p99: 50 },
      "containerd's own event service (Events/Subscribe, TaskExit) into the containerd-events PLEG, which reads the pod's status once (again while the CRI lags the event); relists only every 300 s.",
    ),
    row('containerd, containerd events: status shows it', s.containerdEvents.status, undefined, 'As above, to the v1 status.'),
    row(
      `containerd, containerd events, exits ${spaced.spacingSeconds} s apart: ContainerDied (diagnosis)`,
      s.containerdSpaced.pleg,
      undefined,
      `The same PLEG, with each batch's exits ${spaced.spacingSeconds} s apart instead of ten within 2 s: each restartPolicy Never pod's exit is followed by its sandbox's stop (runc, the CNI plugins' DEL), which with exits 200 ms apart on 2 cores overlaps the next exits. Not the judged row: it shows how much of the tail above is that overlap.`,
    ),
    {
      name: `containerd, idle watch CPU, ${idle.pods} pods: generic 1 s`,
      value: `${idleGeneric.percent.toFixed(2)}% of one core over ${idle.windowMs / 1000} s`,
      about:
        'utime + stime of a real `podctl watch DIR --pleg generic` process (/proc/PID/stat) over the window, once every pod runs and the start has settled: relists every second, housekeeping, sync ticks.',
    },
    {
      name: `containerd, idle watch CPU, ${idle.pods} pods: auto (${idleAuto.source})`,
      value: `${idleAuto.percent.toFixed(2)}% of one core over ${idle.windowMs / 1000} s`,
      target: `below generic 1 s (${idleGeneric.percent.toFixed(2)}%)`,
      met: idleAuto.source === 'containerd-events' && idleAuto.percent < idleGeneric.percent,
      about: 'The same with `--pleg auto`: on containerd 1.6 its event service, relisting only every 300 s as a safety net.',
    },
    row(
      'fake, evented: ContainerDied',
      s.evented.pleg,
      50,
      "The fake runtime's GetContainerEvents stream (the real gRPC client) into the evented PLEG; exit time is the fake's finishedAt.",
    ),
    row('fake, evented: status shows it', s.evented.status, undefined, 'As above, to the v1 status.'),
    row(
      'fake, generic 1 s: ContainerDied (reference)',
      s.genericFake.pleg,
      undefined,
      'The same fake pods under the generic PLEG at 1 s, to show what the events buy.',
    ),
  ];
  const findings: string[] = [];
  for (const r of rows) {
    if (r.met === false) findings.push(`${r.name}: ${r.value}, target ${r.target}.`);
  }
  if (idleAuto.source !== 'containerd-events')
    findings.push(`The idle watch with --pleg auto ran on ${idleAuto.source}, not containerd's events.`);
  if (containerdEvents.source !== 'containerd-events')
    findings.push(`The containerd-events PLEG fell back to relisting (source ${containerdEvents.source}): its rows measure relists.`);
  const missed =
    generic1s.missed + generic100.missed + containerdEvents.missed + containerdSpaced.missed + evented.missed + genericFake.missed;
  return {
    name: 'detection',
    title: 'Detection latency: container exit to ContainerDied and to status',
    quick: ctx.quick,
    machine: machineInfo(`${version.runtimeName} ${version.runtimeVersion}`),
    rows,
    findings,
    notes: [
      `containerd: ${real.batches} batches of ${real.perBatch} pods (restartPolicy Never), each container exiting ${real.minSeconds}-${real.minSeconds + 2} s after its start, spread at random so exits fall anywhere in a relist period. Fake (in the bench process, beside the Kubelet): ${onFake.batches} batches of ${onFake.perBatch} pods exiting ${onFake.minSeconds}-${onFake.minSeconds + 2} s after start.`,
      `Exits that landed before every pod of their batch was running (so other pods' starts, runc and the CNI plugins, competed for the CPU): generic 1 s ${generic1s.duringStarts}, generic 100 ms ${generic100.duringStarts}, containerd events ${containerdEvents.duringStarts}, of ${real.batches * real.perBatch} each.`,
      'p99 is the nearest-rank percentile: with n samples below 100 it is the largest or second largest sample.',
      ...(missed ? [`${missed} exit(s) were not seen within 60 s and are not in the samples.`] : []),
    ],
    data: {
      samples: { generic1s, generic100, containerdEvents, containerdSpaced, evented, genericFake },
      stats: s,
      idle: { ...idle, generic: idleGeneric, auto: idleAuto },
    },
    durationS: (Date.now() - began) / 1000,
  };
}
