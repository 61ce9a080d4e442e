import { kubectl, podctl, startRealPod } from './kubeapi.js';
import { REAL_ENDPOINT } from './node.js';
import { BENCH_NAMESPACE, BUSYBOX, SLEEP_COMMAND, machineInfo, msStats, stats, type BenchContext, type BenchResult } from './lib.js';

const POD = 'bench-exec';

/** `kubectl exec POD -- true` (the agent's pods/exec) beside `podctl exec POD -- true` (the CRI's ExecSync), one busybox pod. */
export async function kubeapiExec(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const runs = ctx.quick ? 5 : 20;
  const manifest = [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${POD}`,
    `  namespace: ${BENCH_NAMESPACE}`,
    'spec:',
    '  terminationGracePeriodSeconds: 2',
    '  containers:',
    '  - name: app',
    `    image: ${BUSYBOX}`,
    '    imagePullPolicy: IfNotPresent',
    `    command: ${JSON.stringify(SLEEP_COMMAND)}`,
    '',
  ].join('\n');
  const { agent, stop } = await startRealPod('kubeapi-exec', POD, manifest);
  try {
    ctx.log(`  ${POD} Running on ${REAL_ENDPOINT}; agent pid ${agent.pid}, ${agent.url}; ${runs} runs each, interleaved`);
    const variants = {
      kubectl: () => kubectl(agent, ['exec', '-n', BENCH_NAMESPACE, POD, '--', 'true']),
      podctl: () => podctl(agent, ['exec', '-n', BENCH_NAMESPACE, POD, '--', 'true']),
    };
    const samples: Record<keyof typeof variants, number[]> = { kubectl: [], podctl: [] };
    // Round -1 warms kubectl's discovery cache and the page cache.
    for (let i = -1; i < runs; i++) {
      for (const [name, run] of Object.entries(variants) as [keyof typeof variants, () => ReturnType<typeof kubectl>][]) {
        const r = await run();
        if (r.code !== 0) throw new Error(`${name} exec exited ${r.code}: ${r.stderr}`);
        if (i >= 0) samples[name].push(r.ms);
      }
    }
    const k = stats(samples.kubectl);
    const p = stats(samples.podctl);
    const ratio = p.median / k.median;
    ctx.log(`  kubectl ${msStats(k)}; podctl ${msStats(p)}; podctl/kubectl ${ratio.toFixed(2)} x`);
    const kubectlName = agent.kubectl.path.split('/').pop();
    return {
      name: 'kubeapi-exec',
      title: 'kubectl exec and podctl exec, one pod on containerd',
      quick: ctx.quick,
      machine: machineInfo(REAL_ENDPOINT),
      rows: [
        {
          name: `kubectl exec POD -- true (${kubectlName})`,
          value: msStats(k),
          about:
            "`kubectl --kubeconfig K --cache-dir C exec -n NS POD -- true` against the agent's Kubernetes API (discovery cached by the untimed first round): GET of the pod, then pods/exec upgraded to WebSocket (v5.channel.k8s.io), which the agent bridges to the CRI's Exec stream. Wall time from spawn to exit.",
        },
        {
          name: 'podctl exec POD -- true',
          value: msStats(p),
          about: "`podctl exec -n NS POD --root-dir R -- true`: the pod from the agent's socket, then the CRI's ExecSync over gRPC.",
        },
        { name: 'podctl / kubectl (medians)', value: `${ratio.toFixed(2)} x`, about: 'The two medians above, divided (no target).' },
      ],
      findings: [],
      notes: [
        `One \`podctl agent --kube-api-port 0 --cleanup-on-exit\` on the embedded containerd, one busybox pod in ${BENCH_NAMESPACE} applied with kubectl and deleted at the end; ${runs} runs of each after one untimed round, interleaved.`,
      ],
      data: { samples },
      durationS: (Date.now() - began) / 1000,
    };
  } finally {
    await stop();
  }
}
