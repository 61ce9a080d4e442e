import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { errorMessage } from '../src/core/errors.js';
import { containerConfig, podLogDirectory, podSandboxConfig } from '../src/core/kuberuntime/config.js';
import { BENCH_NAMESPACE, BUSYBOX, PODCTL_BIN, benchPod, machineInfo, ms, msStats, onCleanup, podYaml, stats, timeProcess, type BenchContext, type BenchResult, type Row } from './lib.js';
import { InProcessNode, REAL_ENDPOINT, criClient, removeBenchPods, sweepBenchPods } from './node.js';
import { PodmanPeer } from './podman.js';

/** Sandboxes of the floor script carry their own agent, so no in-process loop ever takes them for its own. */
const FLOOR_AGENT = 'bench-floor';

/**
 * 1. Pod start latency on the embedded containerd, with 6. the podman peer:
 * each iteration runs every variant once, in turn, so drift hits all alike.
 */
export async function startLatency(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const runs = ctx.quick ? 5 : 20;
  const client = criClient(REAL_ENDPOINT);
  const version = await client.version();
  const scratch = mkdtempSync(join(tmpdir(), 'podctl-bench-start-'));
  const cleanup = onCleanup('start-latency pods', async () => {
    await sweepBenchPods();
    rmSync(scratch, { recursive: true, force: true });
  });
  await removeBenchPods(client);

  const image = await client.imageStatus(BUSYBOX);
  if (!image) throw new Error(`${BUSYBOX} is not present on ${REAL_ENDPOINT}: run \`podctl runtime up\` first`);

  // Whole process: podctl run --detach of a manifest, as a user types it.
  const manifest = join(scratch, 'pod.yaml');
  writeFileSync(manifest, podYaml('bench-run', BUSYBOX, { namespace: BENCH_NAMESPACE }));
  const runEnv = { ...process.env, PODCTL_LOG_ROOT: join(scratch, 'logs') };

  // The floor: the same three CRI calls, configs built beforehand, connection already open.
  const floor = async (hostNetwork: boolean): Promise<number> => {
    const pod = benchPod(hostNetwork ? 'bench-floor-host' : 'bench-floor', randomUUID(), { hostNetwork });
    const sandboxConfig = podSandboxConfig(pod, 0, join(scratch, 'logs'), FLOOR_AGENT);
    const config = containerConfig({ pod, container: pod.spec!.containers[0]!, kind: 'app', restartCount: 0, imageRef: image.id });
    mkdirSync(podLogDirectory(join(scratch, 'logs'), pod), { recursive: true });
    const t0 = performance.now();
    const sandboxId = await client.runPodSandbox(sandboxConfig);
    const containerId = await client.createContainer(sandboxId, config, sandboxConfig);
    await client.startContainer(containerId);
    return performance.now() - t0;
  };

  const node = new InProcessNode({ client });
  node.start();
  const stopNode = onCleanup('in-process node', () => node.stop());

  let podman: PodmanPeer | undefined;
  let podmanError: string | undefined;
  try {
    podman = await PodmanPeer.setup(ctx.log);
  } catch (err) {
    podmanError = errorMessage(err).split('\n').slice(0, 3).join(' ');
    ctx.log(`podman peer unavailable: ${podmanError}`);
  }
  const teardownPodman = onCleanup('podman peer', async () => podman?.teardown());

  const samples = { run: [] as number[], inProcess: [] as number[], floor: [] as number[], floorHost: [] as number[], podman: [] as number[] };
  const errors: string[] = [];
  // One untimed round first: the first sandbox after a quiet spell pays for cold caches.
  for (let i = -1; i < runs; i++) {
    const keep = i >= 0;
    const r = await timeProcess(process.execPath, [PODCTL_BIN, 'run', manifest, '--detach', '--timeout', '60s'], { env: runEnv });
    if (r.code !== 0) errors.push(`podctl run --detach exited ${r.code}: ${r.stderr.trim().split('\n').pop()}`);
    else if (keep) samples.run.push(r.ms);
    await removeBenchPods(client);

    const pod: IPod = benchPod('bench-inprocess', randomUUID());
    const t = await node.addAndWaitRunning([pod], 60_000);
    if (keep) samples.inProcess.push(t.get(pod.metadata!.uid!)!);
    await node.removeAndWait([pod.metadata!.uid!]);

    const f = await floor(false);
    if (keep) samples.floor.push(f);
    await removeBenchPods(client);
    const fh = await floor(true);
    if (keep) samples.floorHost.push(fh);
    await removeBenchPods(client);

    if (podman) {
      const p = await podman.play();
      if (p.code !== 0) errors.push(`podman kube play exited ${p.code}: ${p.stderr.trim().split('\n').pop()}`);
      else if (keep) samples.podman.push(p.ms);
      await podman.down();
    }
    if (keep) ctx.log(`  run ${i + 1}/${runs}: run --detach ${ms(r.ms)}, in-process ${ms(t.get(pod.metadata!.uid!)!)}, floor ${ms(f)}, floor hostNetwork ${ms(fh)}${samples.podman.length ? `, podman ${ms(samples.podman.at(-1)!)}` : ''}`);
  }
  await teardownPodman();
  await stopNode();
  await cleanup();
  client.close();

  const s = {
    run: stats(samples.run),
    inProcess: stats(samples.inProcess),
    floor: stats(samples.floor),
    floorHost: stats(samples.floorHost),
    podman: stats(samples.podman),
  };
  const inProcessLimit = s.floor.median * 1.1;
  const runLimit = s.podman.median * 0.9;
  const rows: Row[] = [
    {
      name: 'podctl run --detach (whole process)',
      value: msStats(s.run),
      target: podman ? `<= 0.9 x podman = ${ms(runLimit)}` : 'podman unavailable',
      met: podman && s.run.n && s.podman.n ? s.run.median <= runLimit : undefined,
      about: 'From spawning `node bin/run.js run pod.yaml --detach` to its exit with the pod Running: Node start-up, oclif, manifest loading, endpoint resolution, connect, SyncPod, status.',
    },
    {
      name: 'in-process: ADD to Running observed',
      value: msStats(s.inProcess),
      target: `<= 1.1 x floor = ${ms(inProcessLimit)}`,
      met: s.inProcess.n && s.floor.n ? s.inProcess.median <= inProcessLimit : undefined,
      about: 'A Kubelet + generic PLEG + SyncLoop already running in the bench process (agent "bench"): from SyncLoop.addPods to the first status with every container running, as the kubelet\'s pod start SLI.',
    },
    {
      name: 'floor: direct CRI, CNI bridge pod',
      value: msStats(s.floor),
      about: 'RunPodSandbox, CreateContainer, StartContainer issued back to back over an open connection with configs built beforehand (podctl\'s own config builders), until StartContainer returns.',
    },
    {
      name: 'floor: direct CRI, hostNetwork pod',
      value: msStats(s.floorHost),
      about: 'The same three calls for a hostNetwork pod: no CNI ADD.',
    },
    {
      name: `peer: podman kube play (${podman?.version ?? 'podman'})`,
      value: podman ? msStats(s.podman) : `not measured: ${podmanError}`,
      about: 'From spawning `podman kube play --network <private bridge> pod.yaml` to its exit; the same pod, image pulled beforehand from the loopback registry, runc, cgroupfs, private config and storage.',
    },
  ];
  const findings: string[] = [];
  if (rows[0]!.met === false) {
    findings.push(
      `podctl run --detach median ${ms(s.run.median)} is above 0.9 x podman kube play (${ms(runLimit)}). Of it, about ${ms(s.inProcess.median)} is the start itself (in-process row); the rest, about ${ms(s.run.median - s.inProcess.median)}, is the process around it (Node start-up, module loading, endpoint resolution, connect, shutdown): see the CLI start-up benchmark.`,
    );
  }
  if (rows[1]!.met === false) {
    findings.push(
      `In-process start median ${ms(s.inProcess.median)} is ${((s.inProcess.median / s.floor.median - 1) * 100).toFixed(0)}% above the direct-CRI floor (${ms(s.floor.median)}), target 10%. Beyond the three calls SyncPod also reads the pod's runtime status before and after (2 lists + status calls each), ImageStatus, mkdir of the log directory, and the status computation.`,
    );
  }
  return {
    name: 'start-latency',
    title: 'Pod start latency on the embedded containerd (with the podman peer)',
    quick: ctx.quick,
    machine: machineInfo(`${version.runtimeName} ${version.runtimeVersion}`),
    rows,
    findings,
    notes: [
      `${runs} timed iterations after one untimed warm-up; each iteration runs every variant in turn. Image ${BUSYBOX} present; pod namespace ${BENCH_NAMESPACE}; each pod is removed (untimed) before the next starts.`,
      ...errors.slice(0, 5).map((e) => `error: ${e}`),
    ],
    data: { samples, stats: s },
    durationS: (Date.now() - began) / 1000,
  };
}
