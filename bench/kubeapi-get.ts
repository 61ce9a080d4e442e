import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '../fakecri/index.js';
import { kubectl, podctl, startKubeAgent, waitRunning } from './kubeapi.js';
import {
  BENCH_NAMESPACE,
  BUSYBOX,
  machineInfo,
  ms,
  msStats,
  onCleanup,
  podYaml,
  stats,
  timeProcess,
  type BenchContext,
  type BenchResult,
} from './lib.js';

const PODS = 20;
const GOAL = 1.5;

/**
 * `kubectl get pods` (warm discovery cache) against `podctl get pods`, on one agent with 20 pods on the fake runtime:
 * a Go binary over the agent's Kubernetes API (HTTPS, a Table) beside Node + oclif over the agent's socket.
 */
export async function kubeapiGet(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const runs = ctx.quick ? 5 : 20;
  const fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
  const scratch = mkdtempSync(join(tmpdir(), 'podctl-bench-kubeapi-get-'));
  const stopFake = onCleanup('kubeapi-get fake runtime', async () => {
    await fake.stop();
    rmSync(scratch, { recursive: true, force: true });
  });
  const agent = await startKubeAgent({ dir: scratch, endpoint: fake.endpoint });
  const stopAgent = onCleanup('kubeapi-get agent', () => agent.stop());
  try {
    const names = Array.from({ length: PODS }, (_, i) => `bench-get-${i}`);
    const file = join(scratch, 'pods.yaml');
    writeFileSync(file, names.map((n) => podYaml(n, BUSYBOX, { namespace: BENCH_NAMESPACE })).join('---\n'));
    const applied = await kubectl(agent, ['apply', '-f', file]);
    if (applied.code !== 0) throw new Error(`kubectl apply exited ${applied.code}: ${applied.stderr}`);
    await waitRunning(agent, BENCH_NAMESPACE, names, 60_000);
    ctx.log(`  ${PODS} pods Running on the fake runtime; agent pid ${agent.pid}, ${agent.url}; ${runs} runs each, interleaved`);

    const variants = {
      node: () => timeProcess(process.execPath, ['-e', '0']),
      kubectl: () => kubectl(agent, ['get', 'pods', '-n', BENCH_NAMESPACE]),
      podctl: () => podctl(agent, ['get', 'pods', '-n', BENCH_NAMESPACE]),
    };
    const samples: Record<keyof typeof variants, number[]> = { node: [], kubectl: [], podctl: [] };
    // Round -1 warms kubectl's discovery cache (its own --cache-dir) and the page cache of podctl's modules.
    for (let i = -1; i < runs; i++) {
      for (const [name, run] of Object.entries(variants) as [keyof typeof variants, () => ReturnType<typeof kubectl>][]) {
        const r = await run();
        const rows = r.stdout.split('\n').filter((l) => l.startsWith('bench-get-')).length;
        if (r.code !== 0 || (name !== 'node' && rows !== PODS))
          throw new Error(`${name} get pods exited ${r.code} with ${rows} of ${PODS} pods: ${r.stderr}`);
        if (i >= 0) samples[name].push(r.ms);
      }
    }
    const n = stats(samples.node);
    const k = stats(samples.kubectl);
    const p = stats(samples.podctl);
    const ratio = p.median / k.median;
    ctx.log(`  kubectl ${msStats(k)}; podctl ${msStats(p)}; podctl/kubectl ${ratio.toFixed(2)} x (goal <= ${GOAL} x)`);
    const findings =
      ratio > GOAL
        ? [
            `podctl get pods median ${ms(p.median)} is ${ratio.toFixed(2)} x kubectl get pods (${ms(k.median)}), above the ${GOAL} x goal. Node alone (node -e 0) took ${ms(n.median)} in the same rounds, ${(n.median / k.median).toFixed(2)} x kubectl: podctl pays for Node's start and oclif (see the CLI start-up rows), kubectl is one Go binary.`,
          ]
        : [];
    return {
      name: 'kubeapi-get',
      title: `kubectl get pods and podctl get pods, one agent with ${PODS} pods`,
      quick: ctx.quick,
      machine: machineInfo('fake 0.0.0-fake (in the bench process)'),
      rows: [
        {
          name: 'node -e 0 (the floor of any Node CLI)',
          value: msStats(n),
          about: "Node's own start and exit, for scale: podctl cannot start faster than this.",
        },
        {
          name: `kubectl get pods (${agent.kubectl.path.split('/').pop()}, warm discovery cache)`,
          value: msStats(k),
          about:
            "`kubectl --kubeconfig K --cache-dir C get pods -n NS` against the agent's Kubernetes API: K is `podctl kubeconfig`'s output, C a cache dir of its own, filled by the untimed first round (so discovery is read from disk, and the request is one GET of a Table). Wall time from spawn to exit.",
        },
        {
          name: 'podctl get pods',
          value: msStats(p),
          about: "`podctl get pods -n NS --root-dir R`: the agent's status socket (GET /v1/podview), printed in kubectl's columns.",
        },
        {
          name: 'podctl / kubectl (medians)',
          value: `${ratio.toFixed(2)} x`,
          target: `<= ${GOAL} x`,
          met: ratio <= GOAL,
          about: 'The two medians above, divided.',
        },
      ],
      findings,
      notes: [
        `One \`podctl agent --kube-api-port 0\` on the fake runtime (in the bench process), ${PODS} busybox pods in ${BENCH_NAMESPACE} applied with kubectl; ${runs} runs of each command after one untimed round, interleaved.`,
      ],
      data: { samples, kubectl: `1.${agent.kubectl.minor}` },
      durationS: (Date.now() - began) / 1000,
    };
  } finally {
    await stopAgent();
    await stopFake();
  }
}
