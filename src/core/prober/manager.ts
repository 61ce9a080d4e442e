import type { IContainer, IPod, IPodStatus } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import type { EventRecorder } from '../events.js';
import type { ProbeVerdicts } from '../kuberuntime/actions.js';
import { runHandler } from './handlers.js';
import { PROBE_DEFAULTS, ProbeWorker, probeOf, type ProbeResult, type ProbeType } from './worker.js';
import { podMeta } from '../util/pod-key.js';

export interface ProbeResultUpdate {
  uid: string;
  containerId: string;
  containerName: string;
  type: ProbeType;
  result: ProbeResult;
}

export interface ProberManagerOptions {
  clock: Clock;
  runtime: RuntimeService;
  events: EventRecorder;
  /** The desired pod and its last v1 status, by UID (the pod manager and the status manager). */
  pod(uid: string): IPod | undefined;
  status(uid: string): IPodStatus | undefined;
}

const PROBE_TYPES: ProbeType[] = ['startup', 'liveness', 'readiness'];
const TITLE: Record<ProbeType, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

/** Containers the kubelet probes: app containers and sidecars (init containers with restartPolicy Always). */
function probedContainers(pod: IPod): IContainer[] {
  return [...(pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'), ...(pod.spec?.containers ?? [])];
}

/**
 * The kubelet's prober manager: one worker per container and probe type,
 * results kept per container ID (the liveness, readiness and startup
 * managers), and a stream of result changes for the sync loop.
 */
export class ProberManager implements ProbeVerdicts {
  private readonly workers = new Map<string, Map<string, ProbeWorker>>();
  private readonly results: Record<ProbeType, Map<string, ProbeResult>> = { liveness: new Map(), readiness: new Map(), startup: new Map() };
  private readonly listeners = new Set<(u: ProbeResultUpdate) => void>();

  constructor(private readonly opts: ProberManagerOptions) {}

  /** Starts a worker for every probe the pod declares and stops those it no longer declares. */
  addPod(pod: IPod): void {
    const uid = podMeta(pod).uid;
    let lanes = this.workers.get(uid);
    const wanted = new Set<string>();
    for (const c of probedContainers(pod)) {
      for (const type of PROBE_TYPES) {
        if (probeOf(c, type)) wanted.add(`${c.name}/${type}`);
      }
    }
    if (!lanes && wanted.size === 0) return;
    if (!lanes) this.workers.set(uid, (lanes = new Map()));
    for (const [key, worker] of lanes) {
      if (wanted.has(key)) continue;
      worker.stop();
      lanes.delete(key);
    }
    for (const key of wanted) {
      if (lanes.has(key)) continue;
      const [name, type] = key.split('/') as [string, ProbeType];
      const worker = new ProbeWorker(name, type, {
        clock: this.opts.clock,
        pod: () => this.opts.pod(uid),
        status: () => this.opts.status(uid),
        probe: (probe, container, containerId, status) =>
          runHandler(probe, {
            runtime: this.opts.runtime,
            clock: this.opts.clock,
            containerId,
            container,
            podIP: status.podIP,
            timeoutSeconds: probe.timeoutSeconds ?? PROBE_DEFAULTS.timeoutSeconds,
          }),
        setResult: (containerId, t, result) => this.setResult(uid, name, containerId, t, result),
        removeResult: (containerId, t) => this.results[t].delete(containerId),
        onRunOutcome: (container, t, kind, output) => {
          const p = this.opts.pod(uid);
          if (!p) return;
          const m = podMeta(p);
          const verb = kind === 'failed' ? 'failed' : kind;
          this.opts.events.record(
            { uid, namespace: m.namespace ?? 'default', name: m.name! },
            'Warning',
            kind === 'warning' ? 'ProbeWarning' : 'Unhealthy',
            `${TITLE[t]} probe ${verb}: ${output.trim()}`,
            container.name,
          );
        },
      });
      lanes.set(key, worker);
      worker.start();
    }
  }

  removePod(uid: string): void {
    const lanes = this.workers.get(uid);
    if (!lanes) return;
    for (const w of lanes.values()) w.stop();
    this.workers.delete(uid);
  }

  stopAll(): void {
    for (const uid of [...this.workers.keys()]) this.removePod(uid);
  }

  /** Resolves when no probe is in flight (tests and shutdown). */
  async settled(): Promise<void> {
    await Promise.all([...this.workers.values()].flatMap((lanes) => [...lanes.values()].map((w) => w.settled())));
  }

  /** Called on every result change, as the kubelet's results managers feed syncLoopIteration. */
  watch(listener: (u: ProbeResultUpdate) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private setResult(uid: string, containerName: string, containerId: string, type: ProbeType, result: ProbeResult): void {
    const previous = this.results[type].get(containerId);
    if (previous === result) return;
    this.results[type].set(containerId, result);
    // The initial value of a new instance is no news for the loop.
    if (previous === undefined) return;
    for (const l of this.listeners) l({ uid, containerId, containerName, type, result });
  }

  result(containerId: string, type: ProbeType): ProbeResult | undefined {
    return this.results[type].get(containerId);
  }

  livenessFailed(containerId: string): boolean {
    return this.results.liveness.get(containerId) === 'Failure';
  }

  startupFailed(containerId: string): boolean {
    return this.results.startup.get(containerId) === 'Failure';
  }

  /** Readiness of a running container; undefined when it has no readiness probe (then running means ready). */
  ready(containerId: string, container: IContainer): boolean | undefined {
    if (!container.readinessProbe) return undefined;
    return this.results.readiness.get(containerId) === 'Success';
  }

  /** Whether the startup probe succeeded; undefined when there is none (then running means started). */
  started(containerId: string, container: IContainer): boolean | undefined {
    if (!container.startupProbe) return undefined;
    return this.results.startup.get(containerId) === 'Success';
  }
}
