import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { errorMessage } from '../src/core/errors.js';
import { containerConfig, podLogDirectory, podSandboxConfig } from '../src/core/kuberuntime/config.js';
import { CRUN_BINARY } from '../src/core/embedded/config.js';
import { AgentClient } from '../src/core/node/client.js';
import {
  BENCH_NAMESPACE,
  BUSYBOX,
  PODCTL_BIN,
  benchPod,
  machineInfo,
  ms,
  msStats,
  onCleanup,
  podYaml,
  runtimeClassYaml,
  stats,
  timeProcess,
  until,
  type BenchContext,
  type BenchResult,
  type Row,
} from './lib.js';
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

  // A fresh runtime has the image only in the loopback registry (runtime up fills it); pull it untimed.
  if (!(await client.imageStatus(BUSYBOX))) {
    try {
      await client.pullImage(BUSYBOX);
    } catch (err) {
      throw new Error(
        `${BUSYBOX} is not on ${REAL_ENDPOINT} and could not be pulled (${(err as Error).message}): run \`podctl runtime up\` first`,
      );
    }
  }
  const image = await client.imageStatus(BUSYBOX);
  if (!image) throw new Error(`${BUSYBOX} was pulled but ${REAL_ENDPOINT} does not list it`);

  // Each OCI runtime the embedded containerd has, chosen as on a cluster: a RuntimeClass per handler.
  type Handler = 'runc' | 'crun';
  const handlers: Handler[] = existsSync(CRUN_BINARY) ? ['runc', 'crun'] : ['runc'];
  // Whole process: podctl run --detach of a manifest, as a user types it.
  const manifests = new Map<Handler, string>();
  for (const h of handlers) {
    const file = join(scratch, `pod-${h}.yaml`);
    writeFileSync(file, runtimeClassYaml(h) + podYaml(`bench-run-${h}`, BUSYBOX, { namespace: BENCH_NAMESPACE, runtimeClassName: h }));
    manifests.set(h, file);
  }
  const runEnv = { ...process.env, PODCTL_LOG_ROOT: join(scratch, 'logs') };
  // run --detach starts an agent on this root dir of its own, stopped by its PID (agent stop) at the end.
  const rootDir = join(scratch, 'root');
  const agent = new AgentClient(rootDir);
  const stopAgent = onCleanup('start-latency agent', async () => {
    await timeProcess(process.execPath, [PODCTL_BIN, 'agent', 'stop', '--root-dir', rootDir]);
  });

  // The floor: the same three CRI calls, configs built beforehand, connection already open.
  const floor = async (hostNetwork: boolean, handler: Handler): Promise<number> => {
    const pod = benchPod(hostNetwork ? 'bench-floor-host' : 'bench-floor', randomUUID(), { hostNetwork, runtimeClassName: handler });
    const sandboxConfig = podSandboxConfig(pod, 0, join(scratch, 'logs'), FLOOR_AGENT);
    const config = containerConfig({ pod, container: pod.spec!.containers[0]!, kind: 'app', restartCount: 0, imageRef: image.id });
    mkdirSync(podLogDirectory(join(scratch, 'logs'), pod), { recursive: true });
    const t0 = performance.now();
    const sandboxId = await client.runPodSandbox(sandboxConfig, handler);
    const containerId = await client.createContainer(sandboxId, config, sandboxConfig);
    await client.startContainer(containerId);
    return performance.now() - t0;
  };

  const node = new InProcessNode({ client });
  node.kubelet.objects.set('bench', { configMaps: [], secrets: [], runtimeClasses: handlers.map((h) => ({ name: h, handler: h })) });
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

  const perHandler = () => ({ run: [] as number[], inProcess: [] as number[], floor: [] as number[], podman: [] as number[] });
  const samples = { floorHost: [] as number[], ...Object.fromEntries(handlers.map((h) => [h, perHandler()])) } as {
    floorHost: number[];
  } & Record<Handler, ReturnType<typeof perHandler>>;
  const errors: string[] = [];
  // One untimed round first: the first sandbox after a quiet spell pays for cold caches.
  for (let i = -1; i < runs; i++) {
    const keep = i >= 0;
    const line: string[] = [];
    for (const h of handlers) {
      const into = samples[h];
      // In the environment as it is, as podman's rows.
      const runs_: { env: NodeJS.ProcessEnv; into: number[]; ms?: number }[] = [{ env: runEnv, into: into.run }];
      for (const v of runs_) {
        // As a user runs it: the executable.
        const t = await timeProcess(PODCTL_BIN, ['run', manifests.get(h)!, '--detach', '--timeout', '60s', '--root-dir', rootDir], {
          env: v.env,
        });
        if (t.code !== 0) errors.push(`podctl run --detach (${h}) exited ${t.code}: ${t.stderr.trim().split('\n').pop()}`);
        else if (keep) v.into.push((v.ms = t.ms));
        // The agent keeps what run --detach handed it: it forgets the pod first, or it would start it again.
        // Its termination is waited for, so that the next variant starts on a runtime as quiet as the floor's.
        await agent.delete(BENCH_NAMESPACE, `bench-run-${h}`, 0).catch(() => undefined);
        await until(async () => !(await agent.pods().catch(() => [])).some((p) => p.metadata?.name === `bench-run-${h}`), 30_000);
        await removeBenchPods(client);
      }

      const pod: IPod = benchPod('bench-inprocess', randomUUID(), { runtimeClassName: h });
      const t = (await node.addAndWaitRunning([pod], 60_000)).get(pod.metadata!.uid!)!;
      if (keep) into.inProcess.push(t);
      await node.removeAndWait([pod.metadata!.uid!]);

      const f = await floor(false, h);
      if (keep) into.floor.push(f);
      await removeBenchPods(client);

      let pm: number | undefined;
      if (podman) {
        const p = await podman.play(h);
        if (p.code !== 0) errors.push(`podman --runtime ${h} kube play exited ${p.code}: ${p.stderr.trim().split('\n').pop()}`);
        else if (keep) into.podman.push((pm = p.ms));
        await podman.down(h);
      }
      line.push(
        `${h}: run --detach ${runs_.map((v) => (v.ms === undefined ? '-' : ms(v.ms))).join(' / ')}, in-process ${ms(t)}, floor ${ms(f)}${pm === undefined ? '' : `, podman ${ms(pm)}`}`,
      );
    }
    const fh = await floor(true, 'runc');
    if (keep) samples.floorHost.push(fh);
    await removeBenchPods(client);
    if (keep) ctx.log(`  run ${i + 1}/${runs}: ${line.join('; ')}; floor hostNetwork ${ms(fh)}`);
  }
  await teardownPodman();
  await stopAgent();
  await stopNode();
  await cleanup();
  client.close();

  const s = {
    floorHost: stats(samples.floorHost),
    ...Object.fromEntries(
      handlers.map((h) => [
        h,
        {
          run: stats(samples[h].run),
          inProcess: stats(samples[h].inProcess),
          floor: stats(samples[h].floor),
          podman: stats(samples[h].podman),
        },
      ]),
    ),
  } as { floorHost: ReturnType<typeof stats> } & Record<
    Handler,
    {
      run: ReturnType<typeof stats>;
      inProcess: ReturnType<typeof stats>;
      floor: ReturnType<typeof stats>;
      podman: ReturnType<typeof stats>;
    }
  >;
  const rows: Row[] = [];
  const findings: string[] = [];
  for (const h of handlers) {
    const x = s[h];
    const inProcessLimit = x.floor.median * 1.1;
    const runLimit = x.podman.median * 0.9;
    const runMet = podman && x.run.n && x.podman.n ? x.run.median <= runLimit : undefined;
    const inProcessMet = x.inProcess.n && x.floor.n ? x.inProcess.median <= inProcessLimit : undefined;
    rows.push(
      {
        name: `[${h}] podctl run --detach (whole process)`,
        value: msStats(x.run),
        target: podman ? `<= 0.9 x podman (${h}) = ${ms(runLimit)}` : 'podman unavailable',
        met: runMet,
        about: `From spawning \`bin/run.js run pod.yaml --detach\` as a user runs podctl (a RuntimeClass with handler ${h} and a pod naming it), to its exit with the pod Running: Node start-up, oclif, manifest loading, the agent's socket, SyncPod, status.`,
      },
      {
        name: `[${h}] in-process: ADD to Running observed`,
        value: msStats(x.inProcess),
        target: `<= 1.1 x floor (${h}) = ${ms(inProcessLimit)}`,
        met: inProcessMet,
        about:
          'A Kubelet + generic PLEG + SyncLoop already running in the bench process (agent "bench"): from SyncLoop.addPods to the first status with every container running, as the kubelet\'s pod start SLI.',
      },
      {
        name: `[${h}] floor: direct CRI, CNI bridge pod`,
        value: msStats(x.floor),
        about: `RunPodSandbox (runtime handler ${h}), CreateContainer, StartContainer issued back to back over an open connection with configs built beforehand (podctl's own config builders), until StartContainer returns.`,
      },
      {
        name: `[${h}] peer: podman --runtime ${h} kube play (${podman?.version ?? 'podman'})`,
        value: podman ? msStats(x.podman) : `not measured: ${podmanError}`,
        about: `From spawning \`podman --runtime ${h} kube play --network <private bridge> pod.yaml\` to its exit; the same pod, image pulled beforehand from the loopback registry, cgroupfs, private config and storage.`,
      },
    );
    if (runMet === false) {
      findings.push(
        `[${h}] podctl run --detach median ${ms(x.run.median)} is above 0.9 x podman kube play (${ms(runLimit)}). Of it, about ${ms(x.inProcess.median)} is the start itself (in-process row); the rest, about ${ms(x.run.median - x.inProcess.median)}, is the process around it (Node start-up, module loading, the agent's socket, shutdown): see the CLI start-up benchmark.`,
      );
    }
    if (inProcessMet === false) {
      findings.push(
        `[${h}] in-process start median ${ms(x.inProcess.median)} is ${((x.inProcess.median / x.floor.median - 1) * 100).toFixed(0)}% above the direct-CRI floor (${ms(x.floor.median)}), target 10%. Beyond the three calls SyncPod reads the pod's runtime status after its steps (two lists, with PodSandboxStatus and ContainerStatus asked beside them: one round trip), asks PodSandboxStatus for the pod IP (the managed /etc/hosts names it) and ImageStatus (both beside other work), writes the pod's files (spec copy, /etc/hosts, termination-message file) and computes the status. The samples spread widely on a loaded machine: compare the per-iteration lines.`,
      );
    }
  }
  rows.push({
    name: '[runc] floor: direct CRI, hostNetwork pod',
    value: msStats(s.floorHost),
    about: 'The same three calls for a hostNetwork pod: no CNI ADD.',
  });
  if (!handlers.includes('crun'))
    findings.push(`crun is not installed (${CRUN_BINARY}): only runc was measured; \`podctl runtime up\` installs it.`);
  return {
    name: 'start-latency',
    title: 'Pod start latency on the embedded containerd (with the podman peer)',
    quick: ctx.quick,
    machine: machineInfo(`${version.runtimeName} ${version.runtimeVersion}`),
    rows,
    findings,
    notes: [
      `${runs} timed iterations after one untimed warm-up; each iteration runs every variant in turn, for each OCI runtime (${handlers.join(', ')}). Image ${BUSYBOX} present; pod namespace ${BENCH_NAMESPACE}; each pod is removed (untimed) before the next starts.`,
      ...errors.slice(0, 5).map((e) => `error: ${e}`),
    ],
    data: { samples, stats: s },
    durationS: (Date.now() - began) / 1000,
  };
}
