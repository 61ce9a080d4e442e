import type { IContainer, IContainerStatus, IPod, IPodStatus, IProbe } from 'kubernetes-models/v1';
import type { Clock, TimerHandle } from '../clock.js';
import type { HandlerOutcome } from './handlers.js';

export type ProbeType = 'liveness' | 'readiness' | 'startup';
/** The kubelet's proberesults.Result. */
export type ProbeResult = 'Success' | 'Failure' | 'Unknown';

/** API defaults (the pod manifest layer may already have applied them). */
export const PROBE_DEFAULTS = { initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 };

export function probeOf(container: IContainer, type: ProbeType): IProbe | undefined {
  return type === 'liveness' ? container.livenessProbe : type === 'readiness' ? container.readinessProbe : container.startupProbe;
}

/** What a worker needs from the kubelet: the pod and its last status, a way to run the probe, and where results go. */
export interface WorkerDeps {
  clock: Clock;
  pod(): IPod | undefined;
  status(): IPodStatus | undefined;
  /** Runs the probe's handler once against the container. */
  probe(probe: IProbe, container: IContainer, containerId: string, status: IPodStatus): Promise<HandlerOutcome>;
  setResult(containerId: string, type: ProbeType, result: ProbeResult): void;
  removeResult(containerId: string, type: ProbeType): void;
  /** A run that did not plainly succeed, with its output (the Unhealthy and ProbeWarning events). */
  onRunOutcome(container: IContainer, type: ProbeType, kind: 'failed' | 'warning' | 'errored', output: string): void;
}

/** Strips the runtime prefix of a v1 containerID ("containerd://<id>"). */
export function runtimeId(containerID: string | undefined): string | undefined {
  if (!containerID) return undefined;
  const i = containerID.indexOf('://');
  return i >= 0 ? containerID.slice(i + 3) : containerID;
}

function findStatus(status: IPodStatus, name: string): IContainerStatus | undefined {
  return status.containerStatuses?.find((c) => c.name === name) ?? status.initContainerStatuses?.find((c) => c.name === name);
}

/**
 * One probe of one container (the kubelet's prober worker): runs every
 * periodSeconds on the injected clock, counts consecutive results against
 * the thresholds, and publishes a result only when a threshold is crossed.
 */
export class ProbeWorker {
  private timer?: TimerHandle;
  private stopped = false;
  private inFlight = false;
  private containerId?: string;
  private lastResult: ProbeResult = 'Unknown';
  private resultRun = 0;
  /** After a liveness or startup failure, wait for the next container instance. */
  private onHold = false;
  /** Resolves when the probe run in flight (if any) has finished; for tests and shutdown. */
  private running: Promise<void> = Promise.resolve();

  constructor(
    readonly containerName: string,
    readonly type: ProbeType,
    private readonly deps: WorkerDeps,
  ) {}

  /** The result a new container instance starts with: ready is false, live is true, started is unknown. */
  get initialValue(): ProbeResult {
    return this.type === 'readiness' ? 'Failure' : this.type === 'liveness' ? 'Success' : 'Unknown';
  }

  start(): void {
    this.tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.deps.clock.clearTimeout(this.timer);
    if (this.containerId) this.deps.removeResult(this.containerId, this.type);
  }

  settled(): Promise<void> {
    return this.running;
  }

  private spec(): { container: IContainer; probe: IProbe } | undefined {
    const pod = this.deps.pod();
    const container = [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? [])].find((c) => c.name === this.containerName);
    const probe = container && probeOf(container, this.type);
    return container && probe ? { container, probe } : undefined;
  }

  private tick(): void {
    if (this.stopped) return;
    const period = (this.spec()?.probe.periodSeconds ?? PROBE_DEFAULTS.periodSeconds) * 1000;
    this.timer = this.deps.clock.setTimeout(() => this.tick(), period);
    // A probe slower than its period is not run twice at once.
    if (this.inFlight) return;
    this.inFlight = true;
    this.running = this.doProbe()
      .catch(() => undefined)
      .finally(() => (this.inFlight = false));
  }

  /** The kubelet's worker.doProbe. */
  private async doProbe(): Promise<void> {
    const spec = this.spec();
    const status = this.deps.status();
    if (!spec || !status) return;
    const cs = findStatus(status, this.containerName);
    const id = runtimeId(cs?.containerID);
    if (!cs || !id) return;
    if (id !== this.containerId) {
      if (this.containerId) this.deps.removeResult(this.containerId, this.type);
      this.containerId = id;
      this.deps.setResult(id, this.type, this.initialValue);
      this.onHold = false;
      this.resultRun = 0;
      this.lastResult = 'Unknown';
    }
    if (this.onHold) return;
    if (!cs.state?.running) {
      // A container that is not running is not ready (nor, for the other probes, anything to probe).
      this.deps.setResult(id, this.type, 'Failure');
      return;
    }
    // The startup probe gates the others; once it succeeded it has nothing more to say.
    if (this.type !== 'startup' && cs.started !== true) return;
    if (this.type === 'startup' && cs.started === true) return;
    const startedAt = cs.state.running.startedAt ? Date.parse(String(cs.state.running.startedAt)) : undefined;
    const initialDelayMs = (spec.probe.initialDelaySeconds ?? PROBE_DEFAULTS.initialDelaySeconds) * 1000;
    if (initialDelayMs > 0 && startedAt !== undefined && this.deps.clock.now() - startedAt < initialDelayMs) return;

    let outcome: HandlerOutcome;
    try {
      outcome = await this.deps.probe(spec.probe, spec.container, id, status);
    } catch (err) {
      // A probe that could not be run at all (runtime error) says nothing about the container.
      this.deps.onRunOutcome(spec.container, this.type, 'errored', err instanceof Error ? err.message : String(err));
      return;
    }
    if (this.stopped || id !== this.containerId) return;
    const result: ProbeResult = outcome.result === 'failure' ? 'Failure' : 'Success';
    if (outcome.result !== 'success')
      this.deps.onRunOutcome(spec.container, this.type, outcome.result === 'warning' ? 'warning' : 'failed', outcome.output);
    if (result === this.lastResult) this.resultRun++;
    else {
      this.lastResult = result;
      this.resultRun = 1;
    }
    const failureThreshold = spec.probe.failureThreshold ?? PROBE_DEFAULTS.failureThreshold;
    const successThreshold = spec.probe.successThreshold ?? PROBE_DEFAULTS.successThreshold;
    if ((result === 'Failure' && this.resultRun < failureThreshold) || (result === 'Success' && this.resultRun < successThreshold)) return;
    this.deps.setResult(id, this.type, result);
    if (result === 'Failure' && this.type !== 'readiness') {
      // The container will be killed; probing it again would only repeat the verdict.
      this.onHold = true;
      this.resultRun = 0;
    }
  }
}
