import { randomUUID } from 'node:crypto';
import { FakeRuntime } from '../fakecri/index.js';
import type { CriClient } from '../src/core/cri/client.js';
import { BUSYBOX, benchPod, machineInfo, ms, onCleanup, stats, until, type BenchContext, type BenchResult, type Row, type Stats } from './lib.js';
import type { PlegKind } from '../src/core/pleg/select.js';
import { InProcessNode, REAL_ENDPOINT, criClient, removeBenchPods, sweepBenchPods } from './node.js';

interface Samples {
  /** From the container's exit (its finishedAt) to the PLEG emitting ContainerDied. */
  pleg: number[];
  /** From the exit to the first pod status showing the container terminated. */
  status: number[];
  missed: number;
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
async function measure(client: CriClient, opts: { plegKind: PlegKind; relistPeriodMs: number; batches: number; perBatch: number; minSeconds: number }): Promise<Samples> {
  const samples: Samples = { pleg: [], status: [], missed: 0, source: '' };
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
      const finished = node.kubelet.runtimeStatuses.get(uid)?.containers.find((c) => c.name === 'app')?.finishedAt;
      if (finished === undefined) return;
      statusSeen.add(uid);
      samples.status.push(now - finished);
    },
  });
  node.start();
  const stop = onCleanup('detection node', () => node.stop());
  for (let b = 0; b < opts.batches; b++) {
    const pods = Array.from({ length: opts.perBatch }, () => exitingPod(opts.minSeconds + Math.random() * 2));
    const uids = pods.map((p) => p.metadata!.uid!);
    for (const u of uids) mine.add(u);
    node.loop.addPods(pods);
    const all = await until(() => uids.every((u) => finishedAt.has(u) && statusSeen.has(u)), 60_000, 50);
    if (!all) samples.missed += uids.filter((u) => !finishedAt.has(u) || !statusSeen.has(u)).length;
    await node.removeAndWait(uids, 60_000);
  }
  samples.source = node.pleg.source;
  await stop();
  return samples;
}

function row(name: string, s: Stats, targetMs: number | undefined, about: string): Row {
  return {
    name,
    value: s.n ? `p50 ${ms(s.median)}, p90 ${ms(s.p90)}, p99 ${ms(s.p99)} (n=${s.n})` : 'n/a',
    target: targetMs === undefined ? undefined : `p99 < ${ms(targetMs)}`,
    met: targetMs === undefined || !s.n ? undefined : s.p99 < targetMs,
    about,
  };
}

/** 2. Detection latency: real containerd with the generic PLEG at 1 s and 100 ms and with containerd's events, the fake with the evented PLEG. */
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
    evented: { pleg: stats(evented.pleg), status: stats(evented.status) },
    genericFake: { pleg: stats(genericFake.pleg), status: stats(genericFake.status) },
  };
  const rows: Row[] = [
    row('containerd, generic 1 s: ContainerDied', s.generic1s.pleg, 1100, 'From the container\'s exit (finishedAt as containerd reports it) to the generic PLEG emitting ContainerDied; includes containerd\'s own lag before ContainerStatus says EXITED.'),
    row('containerd, generic 1 s: status shows it', s.generic1s.status, undefined, 'From the exit to the first v1 status with the container terminated (the sync the event triggers).'),
    row('containerd, generic 100 ms: ContainerDied', s.generic100.pleg, 200, 'As above, relisting every 100 ms.'),
    row('containerd, generic 100 ms: status shows it', s.generic100.status, undefined, 'As above.'),
    row('containerd, containerd events: ContainerDied', s.containerdEvents.pleg, 200, 'containerd\'s own event service (Events/Subscribe, TaskExit) into the containerd-events PLEG, which reads the pod\'s status once (again while the CRI lags the event); relists only every 300 s.'),
    row('containerd, containerd events: status shows it', s.containerdEvents.status, undefined, 'As above, to the v1 status.'),
    row('fake, evented: ContainerDied', s.evented.pleg, 50, 'The fake runtime\'s GetContainerEvents stream (the real gRPC client) into the evented PLEG; exit time is the fake\'s finishedAt.'),
    row('fake, evented: status shows it', s.evented.status, undefined, 'As above, to the v1 status.'),
    row('fake, generic 1 s: ContainerDied (reference)', s.genericFake.pleg, undefined, 'The same fake pods under the generic PLEG at 1 s, to show what the events buy.'),
  ];
  const findings: string[] = [];
  for (const r of rows) {
    if (r.met === false) findings.push(`${r.name}: ${r.value}, target ${r.target}.`);
  }
  if (containerdEvents.source !== 'containerd-events') findings.push(`The containerd-events PLEG fell back to relisting (source ${containerdEvents.source}): its rows measure relists.`);
  const missed = generic1s.missed + generic100.missed + containerdEvents.missed + evented.missed + genericFake.missed;
  return {
    name: 'detection',
    title: 'Detection latency: container exit to ContainerDied and to status',
    quick: ctx.quick,
    machine: machineInfo(`${version.runtimeName} ${version.runtimeVersion}`),
    rows,
    findings,
    notes: [
      `containerd: ${real.batches} batches of ${real.perBatch} pods (restartPolicy Never), each container exiting ${real.minSeconds}-${real.minSeconds + 2} s after its start, spread at random so exits fall anywhere in a relist period. Fake (in the bench process, beside the Kubelet): ${onFake.batches} batches of ${onFake.perBatch} pods exiting ${onFake.minSeconds}-${onFake.minSeconds + 2} s after start.`,
      'p99 is the nearest-rank percentile: with n samples below 100 it is the largest or second largest sample.',
      ...(missed ? [`${missed} exit(s) were not seen within 60 s and are not in the samples.`] : []),
    ],
    data: { samples: { generic1s, generic100, containerdEvents, evented, genericFake }, stats: s },
    durationS: (Date.now() - began) / 1000,
  };
}
