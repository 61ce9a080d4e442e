import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirUsage } from '../../src/core/stats/disk.js';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { startPodctl, type RunningPodctl } from './e2e.js';

/**
 * The soak scenario (issue: reliability): a real `podctl watch` over 20 pods
 * that crash-loop, flap their readiness or just run, while manifest files
 * churn; at the end every desired pod must be as desired, nothing leaked, and
 * the watch's memory must not grow. Shared by the 2-minute CI test and the
 * 30-minute soak benchmark.
 */
export interface SoakOptions {
  client: CriClient;
  namespace: string;
  /** A scratch dir the soak owns (manifests, state, logs). */
  dir: string;
  durationMs: number;
  /** RSS samples every this often. */
  sampleMs?: number;
  log?: (line: string) => void;
}

export interface SoakReport {
  durationMs: number;
  pods: { steady: number; crashLooping: number; flapping: number; churned: number };
  /** Watch process RSS over time (ms since start, MiB). */
  rss: { atMs: number; mib: number }[];
  /** Pods that were not as desired at the end, with why. */
  notConverged: string[];
  /** Sandboxes or containers left for pods no file wants any more, and tmpfs mounts left under the state dir. */
  leaked: { sandboxes: number; containers: number; mounts: number };
  restarts: number;
  watchExitCode: number;
  /** The chatty pod's log directory over time (bytes): rotation keeps it bounded. */
  chattyLogs: { atMs: number; bytes: number }[];
  /** Once every manifest is removed: what is left of the 20 pods (all zero when watch cleans up). */
  afterRemoval: { sandboxes: number; mounts: number };
}

const STEADY = 7;
/** One pod writes about 200 KB/s, under --container-log-max-size 1Mi and --container-log-max-files 3. */
export const CHATTY_LOG_MAX_BYTES = 1 << 20;
export const CHATTY_LOG_MAX_FILES = 3;
const CRASHING = 6;
const FLAPPING = 6;

type Kind = 'steady' | 'crash' | 'flap' | 'chatty';

function manifest(ns: string, name: string, kind: Kind): string {
  const head = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${ns}, labels: {soak: "${kind}"}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: app\n    image: busybox:1.36\n`;
  if (kind === 'chatty')
    return `${head}    command: [sh, -c, "pad=$(printf '%200s' | tr ' ' x); i=0; while true; do for j in 1 2 3 4 5 6 7 8 9 10; do i=$((i+1)); echo \\"$i $pad\\"; done; sleep 0.01; done"]\n`;
  if (kind === 'crash') return `${head}    command: [sh, -c, "echo crashing; sleep 1; exit 1"]\n`;
  if (kind === 'flap') {
    return `${head}    command: [sh, -c, "while true; do touch /ready; sleep 2; rm -f /ready; sleep 2; done"]\n    readinessProbe: {exec: {command: [test, -f, /ready]}, periodSeconds: 1, failureThreshold: 1}\n`;
  }
  return `${head}    command: [sleep, "86400"]\n    volumeMounts: [{name: scratch, mountPath: /scratch}]\n  volumes:\n  - {name: scratch, emptyDir: {medium: Memory, sizeLimit: 1Mi}}\n`;
}

/**
 * Mount points under root that belong to one of these pod UIDs: a pod's mounts live under
 * <root>/pods/<uid>/…, so a leak is found by UID (its name is in no mount path).
 */
export function leakedMounts(mountinfo: string, root: string, uids: Set<string>): string[] {
  return mountinfo
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((mountPoint) => mountPoint.startsWith(`${root}/`) && mountPoint.split('/').some((part) => uids.has(part)));
}

function rssMiB(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : undefined;
  } catch {
    return undefined;
  }
}

export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const log = opts.log ?? (() => undefined);
  const manifests = join(opts.dir, 'manifests');
  const root = join(opts.dir, 'root');
  mkdirSync(manifests, { recursive: true });
  const desired: { name: string; kind: Kind }[] = [
    { name: 'soak-chatty', kind: 'chatty' as const },
    ...Array.from({ length: STEADY }, (_, i) => ({ name: `soak-steady-${i}`, kind: 'steady' as const })),
    ...Array.from({ length: CRASHING }, (_, i) => ({ name: `soak-crash-${i}`, kind: 'crash' as const })),
    ...Array.from({ length: FLAPPING }, (_, i) => ({ name: `soak-flap-${i}`, kind: 'flap' as const })),
  ];
  const write = (name: string, kind: Kind) => writeFileSync(join(manifests, `${name}.yaml`), manifest(opts.namespace, name, kind));
  for (const p of desired) write(p.name, p.kind);

  const logs = join(opts.dir, 'logs');
  const chattyLogDir = async (): Promise<number | undefined> => {
    const d = readdirSync(logs, { withFileTypes: true }).find(
      (e) => e.isDirectory() && e.name.startsWith(`${opts.namespace}_soak-chatty_`),
    );
    return d ? (await dirUsage(join(logs, d.name))).bytes : undefined;
  };
  const watch: RunningPodctl = startPodctl(
    [
      'watch',
      manifests,
      '--root-dir',
      root,
      '--log-root',
      logs,
      '--pleg',
      'generic',
      '--file-check-frequency',
      '5s',
      '--container-log-max-size',
      String(CHATTY_LOG_MAX_BYTES),
      '--container-log-max-files',
      String(CHATTY_LOG_MAX_FILES),
      '--container-log-monitor-interval',
      '1s',
    ],
    {
      timeoutMs: opts.durationMs + 300_000,
    },
  );
  const started = Date.now();
  const rss: SoakReport['rss'] = [];
  const chattyLogs: SoakReport['chattyLogs'] = [];
  const churned = new Set<string>();
  /** The UIDs the churned pods had, as the runtime showed them: what their mounts are named by. */
  const churnedUids = new Set<string>();
  const noteChurnedUids = async () => {
    for (const s of await opts.client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.namespace': opts.namespace } })) {
      if (churned.has(s.labels['io.kubernetes.pod.name'] ?? '') && s.labels['io.kubernetes.pod.uid'])
        churnedUids.add(s.labels['io.kubernetes.pod.uid']);
    }
  };
  let churn = 0;
  try {
    await watch.waitFor(/watching /, 30_000);
    const sampleMs = opts.sampleMs ?? 10_000;
    let nextSample = started;
    while (Date.now() - started < opts.durationMs) {
      if (Date.now() >= nextSample) {
        const mib = rssMiB(watch.pid);
        if (mib !== undefined) rss.push({ atMs: Date.now() - started, mib });
        const logBytes = await chattyLogDir().catch(() => undefined);
        if (logBytes !== undefined) chattyLogs.push({ atMs: Date.now() - started, bytes: logBytes });
        nextSample += sampleMs;
        // File churn: a new pod each sample, the one before it removed, and a steady pod's file rewritten unchanged.
        const name = `soak-churn-${churn++}`;
        write(name, 'steady');
        churned.add(name);
        if (churn > 1) rmSync(join(manifests, `soak-churn-${churn - 2}.yaml`), { force: true });
        write(desired.filter((d) => d.kind === 'steady')[churn % STEADY]!.name, 'steady');
        await noteChurnedUids();
        log(
          `soak ${Math.round((Date.now() - started) / 1000)} s: watch RSS ${mib ?? '?'} MiB, chatty log dir ${chattyLogs.at(-1)?.bytes ?? '?'} bytes`,
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    // The last churn pod goes too: only the 20 desired pods should remain.
    await noteChurnedUids();
    for (const n of churned) rmSync(join(manifests, `${n}.yaml`), { force: true });

    const end = Date.now() + 90_000;
    let notConverged: string[] = [];
    let leaked = { sandboxes: 0, containers: 0, mounts: 0 };
    let restarts = 0;
    while (Date.now() < end) {
      const sandboxes = await opts.client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.namespace': opts.namespace } });
      const containers = await opts.client.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': opts.namespace } });
      const of = (name: string) => ({
        ready: sandboxes.filter((s) => s.labels['io.kubernetes.pod.name'] === name && s.state === 'SANDBOX_READY').length,
        containers: containers.filter((c) => c.labels['io.kubernetes.pod.name'] === name),
      });
      notConverged = [];
      for (const p of desired) {
        const s = of(p.name);
        if (s.ready !== 1) notConverged.push(`${p.name}: ${s.ready} ready sandboxes`);
        // Running, or for a crash-looper: at most one exited instance kept, plus whatever runs.
        const live = s.containers.filter((c) => c.state === 'CONTAINER_RUNNING').length;
        if (p.kind !== 'crash' && live !== 1) notConverged.push(`${p.name}: ${live} running containers`);
        if (s.containers.length > 2) notConverged.push(`${p.name}: ${s.containers.length} containers kept`);
      }
      leaked = {
        sandboxes: sandboxes.filter((s) => churned.has(s.labels['io.kubernetes.pod.name'] ?? '')).length,
        containers: containers.filter((c) => churned.has(c.labels['io.kubernetes.pod.name'] ?? '')).length,
        mounts: leakedMounts(readFileSync('/proc/self/mountinfo', 'utf8'), root, churnedUids).length,
      };
      restarts = containers.reduce((n, c) => n + Number(c.annotations['io.kubernetes.container.restartCount'] ?? 0), 0);
      if (notConverged.length === 0 && leaked.sandboxes + leaked.containers + leaked.mounts === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    // The end a user would make: every manifest removed, and watch tears everything down (volumes included).
    for (const p of desired) rmSync(join(manifests, `${p.name}.yaml`), { force: true });
    const mountsUnderRoot = () =>
      readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .filter((l) => (l.split(' ')[4] ?? '').startsWith(root)).length;
    const drained = Date.now() + 90_000;
    while (Date.now() < drained) {
      const left = await opts.client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.namespace': opts.namespace } });
      if (left.length === 0 && mountsUnderRoot() === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const afterRemoval = {
      sandboxes: (await opts.client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.namespace': opts.namespace } })).length,
      mounts: mountsUnderRoot(),
    };
    return {
      afterRemoval,
      durationMs: Date.now() - started,
      pods: { steady: STEADY, crashLooping: CRASHING, flapping: FLAPPING, churned: churned.size },
      rss,
      chattyLogs,
      notConverged,
      leaked,
      restarts,
      watchExitCode: await stopWatch(watch),
    };
  } catch (err) {
    watch.kill('SIGKILL');
    await watch.done;
    throw err;
  }
}

/** Ctrl-C with --cleanup-on-exit would remove the pods; the soak stops the watch and lets its caller clean up. */
async function stopWatch(watch: RunningPodctl): Promise<number> {
  watch.interrupt();
  return (await watch.done).code;
}
