import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { realClock } from '../src/core/clock.js';
import { CriClient, type CallObserver } from '../src/core/cri/client.js';
import { ignoreNotFound } from '../src/core/cri/errors.js';
import { embeddedEndpoint } from '../src/core/embedded/index.js';
import type { Kubelet } from '../src/core/kubelet.js';
import { wireNode } from '../src/core/node/wire.js';
import { POD_NAMESPACE_LABEL } from '../src/core/kuberuntime/labels.js';
import type { SyncLoop } from '../src/core/loop.js';
import type { Pleg } from '../src/core/pleg/evented.js';
import { GenericPleg, type PodLifecycleEvent } from '../src/core/pleg/generic.js';
import type { PlegKind } from '../src/core/pleg/select.js';
import { allContainersRunning } from '../src/core/runonce.js';
import { BENCH_AGENT, BENCH_NAMESPACE } from './lib.js';

/** The real runtime the benchmarks use: the embedded containerd unless PODCTL_BENCH_ENDPOINT says otherwise. */
export const REAL_ENDPOINT = process.env.PODCTL_BENCH_ENDPOINT ?? embeddedEndpoint();

export function criClient(endpoint: string, observer?: CallObserver): CriClient {
  return new CriClient({ runtimeEndpoint: endpoint, timeoutMs: 60_000, pullTimeoutMs: 120_000, observer });
}

/**
 * Stops and removes every sandbox in the bench namespace (a few at a time).
 * A container caught starting (a worker stopped mid-sync) cannot be removed
 * yet: such sandboxes are tried again, up to five rounds a second apart.
 */
export async function removeBenchPods(client: CriClient, namespace = BENCH_NAMESPACE): Promise<number> {
  let removed = 0;
  let lastError: unknown;
  for (let round = 0; round < 5; round++) {
    const sandboxes = await client.listPodSandbox({ labelSelector: { [POD_NAMESPACE_LABEL]: namespace } });
    if (sandboxes.length === 0) return removed;
    if (round > 0) await new Promise((r) => setTimeout(r, 1000));
    const queue = [...sandboxes];
    const worker = async () => {
      for (let s = queue.shift(); s; s = queue.shift()) {
        try {
          await ignoreNotFound(client.stopPodSandbox(s.id));
          await ignoreNotFound(client.removePodSandbox(s.id));
          removed++;
        } catch (err) {
          lastError = err;
        }
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  }
  const left = await client.listPodSandbox({ labelSelector: { [POD_NAMESPACE_LABEL]: namespace } });
  if (left.length)
    throw new Error(
      `${left.length} sandbox(es) of namespace ${namespace} could not be removed: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
    );
  return removed;
}

/** The sweep cleanups run: a connection of its own, since the benchmark's may be closed when it is interrupted. */
export async function sweepBenchPods(): Promise<number> {
  const client = criClient(REAL_ENDPOINT);
  try {
    return await removeBenchPods(client);
  } finally {
    client.close();
  }
}

export interface InProcessNodeOptions {
  client: CriClient;
  plegKind?: PlegKind;
  relistPeriodMs?: number;
  onPlegEvent?: (e: PodLifecycleEvent) => void;
  /** After each generic relist: its duration. */
  onRelist?: (durationMs: number) => void;
  /** Container logs; default a temp directory that stop() removes. */
  logRoot?: string;
  /** The state directory (--root-dir: pod directories); none by default. */
  rootDir?: string;
}

/**
 * A Kubelet, a PLEG and a SyncLoop in this process, wired as `podctl watch`
 * wires them, under the bench agent so housekeeping leaves others' pods alone.
 */
export class InProcessNode {
  readonly kubelet: Kubelet;
  readonly pleg: Pleg;
  readonly loop: SyncLoop;
  private readonly logRoot: string;
  private readonly ownsLogRoot: boolean;

  constructor(opts: InProcessNodeOptions) {
    this.ownsLogRoot = opts.logRoot === undefined;
    this.logRoot = opts.logRoot ?? mkdtempSync(join(tmpdir(), 'podctl-bench-logs-'));
    const wired = wireNode({
      runtime: opts.client,
      images: opts.client,
      clock: realClock,
      logRoot: this.logRoot,
      rootDir: opts.rootDir,
      nodeName: 'bench',
      agent: BENCH_AGENT,
      pleg: opts.plegKind,
      relistPeriodMs: opts.relistPeriodMs,
      onRelist: opts.onRelist,
      loop: { onPlegEvent: opts.onPlegEvent },
    });
    this.kubelet = wired.kubelet;
    this.pleg = wired.pleg;
    this.loop = wired.loop;
  }

  get generic(): GenericPleg | undefined {
    // Every PLEG relists now (the event-driven ones as a safety net): only the generic one is its own class.
    return this.pleg instanceof GenericPleg ? this.pleg : undefined;
  }

  start(): void {
    this.loop.start();
  }

  /** Adds the pods; resolves with the time from the ADD to each pod's first status with every container running. */
  addAndWaitRunning(pods: IPod[], timeoutMs = 120_000): Promise<Map<string, number>> {
    const started = performance.now();
    const done = new Map<string, number>();
    const want = new Set(pods.map((p) => p.metadata!.uid!));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        unobserve();
        reject(new Error(`${want.size - done.size} of ${want.size} pod(s) not running after ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      const unobserve = this.kubelet.observe({
        onStatus: ({ pod, status }) => {
          const uid = pod.metadata!.uid!;
          if (!want.has(uid) || done.has(uid) || !allContainersRunning(pod, status)) return;
          done.set(uid, performance.now() - started);
          if (done.size === want.size) {
            clearTimeout(timer);
            unobserve();
            resolve(done);
          }
        },
      });
      this.loop.addPods(pods);
    });
  }

  /** Terminates and removes the pods through the kubelet, waiting until each is gone. */
  removeAndWait(uids: string[], timeoutMs = 120_000): Promise<void> {
    const left = new Set(uids.filter((u) => this.kubelet.pods.has(u)));
    if (left.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        unobserve();
        resolve();
      }, timeoutMs);
      const unobserve = this.kubelet.observe({
        onTerminated: (pod) => {
          left.delete(pod.metadata!.uid!);
          if (left.size === 0) {
            clearTimeout(timer);
            unobserve();
            resolve();
          }
        },
      });
      this.loop.removePods([...left], 0);
    });
  }

  status(uid: string): IPodStatus | undefined {
    return this.kubelet.statusManager.get(uid);
  }

  async stop(): Promise<void> {
    this.loop.stop();
    await this.kubelet.workers.waitIdle();
    if (this.ownsLogRoot) rmSync(this.logRoot, { recursive: true, force: true });
  }
}
