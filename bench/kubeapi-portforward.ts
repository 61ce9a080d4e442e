import { spawn, type ChildProcess } from 'node:child_process';
import {
  PODCTL_BIN,
  BENCH_NAMESPACE,
  BUSYBOX,
  machineInfo,
  mb,
  onCleanup,
  sleep,
  until,
  type BenchContext,
  type BenchResult,
} from './lib.js';
import { download, rssSampler, startRealPod } from './kubeapi.js';
import { REAL_ENDPOINT } from './node.js';

const POD = 'bench-portforward';
const PORT = 8080;
const MIB = 100;
const GOAL = 0.5;

/** A port-forward process; resolves once it prints the local port it listens on. */
async function startForward(
  label: string,
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; port: number; stop: () => Promise<void> }> {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let port: number | undefined;
  const onData = (d: Buffer) => {
    out = (out + d.toString()).slice(-4000);
    port ??= Number(/Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(out)?.[1]) || undefined;
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const stop = onCleanup(label, async () => {
    if (running()) child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (running()) child.kill('SIGKILL');
  });
  if (!(await until(() => port !== undefined || !running(), 30_000, 50)) || port === undefined) {
    await stop();
    throw new Error(`${label} did not say where it listens within 30 s:\n${out}`);
  }
  return { child, port, stop };
}

/**
 * 100 MB from busybox httpd in a pod on containerd: straight to the pod IP, through `kubectl port-forward` (the agent's pods/portforward,
 * bridged to the CRI's PortForward) and through `podctl port-forward` (the CRI's PortForward from the podctl process).
 */
export async function kubeapiPortforward(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const rounds = ctx.quick ? 1 : 3;
  // sh waits on a trap so SIGTERM ends it at once; httpd (no -f) runs in the background.
  const script = `mkdir -p /www && dd if=/dev/zero of=/www/blob bs=1048576 count=${MIB} 2>/dev/null && httpd -p ${PORT} -h /www && trap "exit 0" TERM; sleep 3600 & wait`;
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
    `    command: ${JSON.stringify(['sh', '-c', script])}`,
    `    ports: [{containerPort: ${PORT}}]`,
    '',
  ].join('\n');
  const { agent, podIP, stop } = await startRealPod('kubeapi-portforward', POD, manifest);
  try {
    if (
      !(await until(
        () =>
          download(podIP, PORT, '/blob').then(
            () => true,
            () => false,
          ),
        60_000,
        250,
      ))
    )
      throw new Error(`httpd in ${POD} did not serve /blob on ${podIP}:${PORT} within 60 s`);
    const kubectlPf = await startForward(
      'kubectl port-forward',
      agent.kubectl.path,
      agent.kubectlArgs(['port-forward', '-n', BENCH_NAMESPACE, `pod/${POD}`, `:${PORT}`]),
      { ...agent.env, KUBECONFIG: agent.kubeconfig },
    );
    const podctlPf = await startForward(
      'podctl port-forward',
      process.execPath,
      [PODCTL_BIN, 'port-forward', POD, `:${PORT}`, '-n', BENCH_NAMESPACE, '--root-dir', agent.rootDir],
      agent.env,
    );
    ctx.log(
      `  ${POD} (${podIP}) serves ${MIB} MB; kubectl port-forward on :${kubectlPf.port}, podctl port-forward on :${podctlPf.port}; ${rounds} round(s)`,
    );
    const ways = {
      direct: () => download(podIP, PORT, '/blob'),
      kubectl: () => download('127.0.0.1', kubectlPf.port, '/blob'),
      podctl: () => download('127.0.0.1', podctlPf.port, '/blob'),
    };
    type Way = keyof typeof ways;
    const rates: Record<Way, number[]> = { direct: [], kubectl: [], podctl: [] };
    const peaks: Record<Way, Record<string, number>> = { direct: {}, kubectl: {}, podctl: {} };
    const pids = { agent: agent.pid, podctlPf: podctlPf.child.pid, kubectlPf: kubectlPf.child.pid };
    const idle = rssSampler(pids).stop();
    // One untimed pass opens each forward's first stream.
    for (let i = -1; i < rounds; i++) {
      for (const [way, run] of Object.entries(ways) as [Way, () => ReturnType<typeof download>][]) {
        const sampler = rssSampler(pids);
        const r = await run();
        const peak = sampler.stop();
        if (r.bytes !== MIB * 1024 * 1024) throw new Error(`${way}: ${r.bytes} bytes of ${MIB * 1024 * 1024}`);
        if (i < 0) continue;
        rates[way].push(r.bytes / 1024 / 1024 / (r.ms / 1000));
        for (const [k, v] of Object.entries(peak)) peaks[way][k] = Math.max(peaks[way][k] ?? 0, v);
        ctx.log(`    ${way}: ${(r.bytes / 1024 / 1024 / (r.ms / 1000)).toFixed(0)} MB/s`);
      }
    }
    await podctlPf.stop();
    await kubectlPf.stop();
    const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor((v.length - 1) / 2)]!;
    const direct = median(rates.direct);
    const row = (way: 'kubectl' | 'podctl') => median(rates[way]) / direct;
    const findings: string[] = [];
    for (const way of ['kubectl', 'podctl'] as const)
      if (row(way) < GOAL)
        findings.push(
          `${way} port-forward moved ${median(rates[way]).toFixed(0)} MB/s, ${row(way).toFixed(2)} x the direct connection (${direct.toFixed(0)} MB/s), under the ${GOAL} x goal.`,
        );
    const rate = (way: Way) =>
      `${median(rates[way]).toFixed(0)} MB/s (median of ${rates[way].length}: ${rates[way].map((r) => r.toFixed(0)).join(', ')})`;
    return {
      name: 'kubeapi-portforward',
      title: `port-forward throughput, ${MIB} MB from a pod on containerd`,
      quick: ctx.quick,
      machine: machineInfo(REAL_ENDPOINT),
      rows: [
        {
          name: 'direct to the pod IP',
          value: rate('direct'),
          about: `A GET of the ${MIB} MB file from busybox httpd at the pod's IP (the CNI bridge), from the bench process (node:http), timed from the request to the last byte.`,
        },
        {
          name: `through kubectl port-forward (${agent.kubectl.path.split('/').pop()})`,
          value: `${rate('kubectl')}; ${row('kubectl').toFixed(2)} x direct`,
          target: `>= ${GOAL} x direct`,
          met: row('kubectl') >= GOAL,
          about:
            "The same GET on kubectl port-forward's local port: kubectl's SPDY/3.1 streams (tunnelled in WebSocket) to the agent's pods/portforward, which bridges each to the CRI's PortForward stream of containerd.",
        },
        {
          name: 'through podctl port-forward',
          value: `${rate('podctl')}; ${row('podctl').toFixed(2)} x direct`,
          target: `>= ${GOAL} x direct`,
          met: row('podctl') >= GOAL,
          about:
            "The same GET on podctl port-forward's local port: the podctl process opens the CRI's PortForward on containerd's streaming server itself (the agent only names the sandbox).",
        },
        {
          name: 'RSS while forwarding (peak)',
          value: `agent ${mb(idle.agent ?? NaN)} idle, ${mb(peaks.kubectl.agent ?? NaN)} during kubectl's transfers, ${mb(peaks.podctl.agent ?? NaN)} during podctl's; podctl port-forward ${mb(idle.podctlPf ?? NaN)} idle, ${mb(peaks.podctl.podctlPf ?? NaN)} while forwarding; kubectl port-forward ${mb(idle.kubectlPf ?? NaN)} idle, ${mb(peaks.kubectl.kubectlPf ?? NaN)} while forwarding`,
          about:
            "VmRSS (/proc/PID/status) sampled every 100 ms during each transfer: the agent (which carries kubectl's streams), the podctl port-forward process, and kubectl's for scale.",
        },
      ],
      findings,
      notes: [
        `One \`podctl agent --kube-api-port 0 --cleanup-on-exit\` on the embedded containerd; the pod (busybox, \`httpd -p ${PORT}\` serving a ${MIB} MB file of zeros written with dd) applied with kubectl and deleted at the end. ${rounds} timed round(s) after one untimed one, the three ways in turn.`,
      ],
      data: { rates, peaks, idle },
      durationS: (Date.now() - began) / 1000,
    };
  } finally {
    await stop();
  }
}
