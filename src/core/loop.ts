import type { IPod } from 'kubernetes-models/v1';
import type { Clock, TimerHandle } from './clock.js';
import { errorMessage } from './errors.js';
import type { HousekeepingResult, SyncHandler } from './kubelet-types.js';
import type { Pleg } from './pleg/evented.js';
import type { PodLifecycleEvent } from './pleg/generic.js';
import type { ProbeResultUpdate } from './prober/index.js';

/** Constants of the kubelet's syncLoop. */
export const SYNC_TICK_MS = 1000;
export const HOUSEKEEPING_PERIOD_MS = 2000;
export const RUNTIME_CHECK_PERIOD_MS = 5000;
export const RUNTIME_BACKOFF_INITIAL_MS = 100;
export const RUNTIME_BACKOFF_MAX_MS = 5000;

export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE' | 'RECONCILE' | 'DELETE' | 'SET';

/** What a config source says changed (the kubelet's kubetypes.PodUpdate). */
export interface PodUpdate {
  op: PodOperation;
  source: string;
  pods: IPod[];
}

/**
 * Hooks the sync loop calls, one per branch of syncLoopIteration, so that a
 * tracer sees which branch fired. All optional: the loop runs the same
 * without them.
 */
export interface LoopTrace {
  /** Config branch: ADD, UPDATE, REMOVE, RECONCILE, DELETE. */
  configUpdate?(u: PodUpdate): void;
  /** PLEG branch; dispatched: the pod's worker was asked to sync. */
  plegEvent?(e: PodLifecycleEvent, dispatched: boolean): void;
  /** Sync tick: the pods whose worker asked to be synced again (only when there are some). */
  syncTick?(dueUids: string[]): void;
  /** Housekeeping tick: runs the pass so that its CRI calls are attributed to it. */
  housekeeping?(run: () => Promise<HousekeepingResult>): Promise<HousekeepingResult>;
  /** Probe branch (liveness/readiness/startup result that changed). */
  probeResult?(r: ProbeResultTrace): void;
}

export interface ProbeResultTrace {
  uid: string;
  container: string;
  probe: 'liveness' | 'readiness' | 'startup';
  result: 'success' | 'failure' | 'unknown';
  /** Whether the pod's worker was asked to sync. */
  dispatched?: boolean;
}

export interface SyncLoopOptions {
  /** What each branch calls (the Kubelet): the loop knows nothing of how it is made. */
  kubelet: SyncHandler;
  pleg: Pleg;
  clock: Clock;
  syncTickMs?: number;
  housekeepingPeriodMs?: number;
  /** Throws when the runtime is not ready (the CRI Status call); checked every 5 s, and often while down. */
  checkRuntime?: () => Promise<void>;
  /** Housekeeping waits until every source has delivered its first snapshot. */
  sourcesReady?: () => boolean;
  onPlegEvent?: (e: PodLifecycleEvent) => void;
  onProbeResult?: (u: ProbeResultUpdate) => void;
  onHousekeeping?: (r: HousekeepingResult) => void;
  onRuntimeState?: (up: boolean, detail?: string) => void;
  onError?: (err: unknown) => void;
  /** One hook per branch of syncLoopIteration (watch --trace). */
  trace?: LoopTrace;
}

/**
 * The kubelet's syncLoop: config updates, PLEG events, a 1 s sync tick for
 * pods their workers asked to sync again, and a 2 s housekeeping tick. While
 * the runtime reports errors, dispatching stops, with backoff from 100 ms to
 * 5 s, and resumes when it recovers.
 */
export class SyncLoop {
  private tick?: TimerHandle;
  private unwatch?: () => void;
  private unwatchProbes?: () => void;
  private running = false;
  private runtimeUp = true;
  private lastRuntimeCheck = -Infinity;
  private runtimeBackoffMs = RUNTIME_BACKOFF_INITIAL_MS;
  private lastHousekeeping: number;
  private housekeepingPass: Promise<void> | undefined;
  private readonly syncTickMs: number;

  constructor(private readonly opts: SyncLoopOptions) {
    this.syncTickMs = opts.syncTickMs ?? SYNC_TICK_MS;
    this.lastHousekeeping = opts.clock.now();
  }

  get isRuntimeUp(): boolean {
    return this.runtimeUp;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unwatch = this.opts.pleg.watch((e) => this.handlePlegEvent(e));
    this.unwatchProbes = this.opts.kubelet.prober.watch((u) => this.handleProbeResult(u));
    this.opts.pleg.start();
    this.opts.kubelet.containerLogs.start();
    this.schedule(this.syncTickMs);
  }

  /**
   * Stops dispatching; pods keep running. Resolves once a housekeeping pass
   * already under way has ended, so nothing of the loop touches the runtime after.
   */
  stop(): Promise<void> {
    this.running = false;
    this.unwatch?.();
    this.unwatchProbes?.();
    this.opts.kubelet.prober.stopAll();
    this.opts.kubelet.containerLogs.stop();
    this.opts.pleg.stop();
    if (this.tick) this.opts.clock.clearTimeout(this.tick);
    return this.housekeepingPass ?? Promise.resolve();
  }

  addPods(pods: IPod[]): void {
    this.handleUpdate({ op: 'ADD', source: 'api', pods });
  }

  removePods(uids: string[], gracePeriodSeconds?: number): void {
    for (const uid of uids) this.opts.kubelet.removePod(uid, gracePeriodSeconds);
  }

  /** The config branch of syncLoopIteration. */
  handleUpdate(u: PodUpdate): void {
    const k = this.opts.kubelet;
    this.opts.trace?.configUpdate?.(u);
    switch (u.op) {
      case 'ADD':
        k.HandlePodAdditions(u.pods, u.source);
        break;
      case 'UPDATE':
        k.HandlePodUpdates(u.pods, u.source);
        break;
      case 'REMOVE':
      case 'DELETE':
        k.HandlePodRemoves(u.pods);
        break;
      case 'RECONCILE':
        // Only metadata or status moved: keep the object, no sync needed.
        k.HandlePodReconcile(u.pods);
        break;
      case 'SET':
        throw new Error('the kubelet does not support SET as a pod update operation');
    }
  }

  private handlePlegEvent(e: PodLifecycleEvent): void {
    // The runtime also holds pods this node does not keep (another agent's, on another --root-dir): the trace shows
    // their events, undispatched; they are not this node's to tell or to act on.
    const ours = this.opts.kubelet.isDesired(e.id);
    this.opts.trace?.plegEvent?.(e, this.runtimeUp && ours && this.opts.kubelet.isSyncing(e.id));
    if (!ours) return;
    this.opts.onPlegEvent?.(e);
    if (!this.runtimeUp) return;
    this.opts.kubelet.HandlePodSyncs([e.id]);
    // A container died: clean up that pod's older dead instances too.
    if (e.type === 'ContainerDied') this.opts.kubelet.pruneDeadContainersSoon(e.id);
  }

  /** The probe branch: liveness/startup failures and readiness changes. */
  private handleProbeResult(u: ProbeResultUpdate): void {
    this.opts.onProbeResult?.(u);
    const dispatched = this.runtimeUp && this.opts.kubelet.isSyncing(u.uid);
    this.opts.trace?.probeResult?.({
      uid: u.uid,
      container: u.containerName,
      probe: u.type,
      result: u.result === 'Success' ? 'success' : u.result === 'Failure' ? 'failure' : 'unknown',
      dispatched,
    });
    if (!this.runtimeUp) return;
    this.opts.kubelet.HandleProbeResult(u);
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    this.tick = this.opts.clock.setTimeout(() => void this.iteration(), ms);
  }

  /** One pass of the tick branch: runtime health, due pods, housekeeping. */
  private async iteration(): Promise<void> {
    const now = this.opts.clock.now();
    if (this.opts.checkRuntime && (!this.runtimeUp || now - this.lastRuntimeCheck >= RUNTIME_CHECK_PERIOD_MS)) {
      this.lastRuntimeCheck = now;
      try {
        await this.opts.checkRuntime();
        if (!this.runtimeUp) {
          this.runtimeUp = true;
          this.runtimeBackoffMs = RUNTIME_BACKOFF_INITIAL_MS;
          this.opts.onRuntimeState?.(true);
          // Everything may have moved while we were blind.
          this.opts.kubelet.HandlePodSyncs([...this.opts.kubelet.desiredUIDs()]);
        }
      } catch (err) {
        if (this.runtimeUp) this.opts.onRuntimeState?.(false, errorMessage(err));
        this.runtimeUp = false;
        const wait = this.runtimeBackoffMs;
        this.runtimeBackoffMs = Math.min(this.runtimeBackoffMs * 2, RUNTIME_BACKOFF_MAX_MS);
        this.schedule(wait);
        return;
      }
    }
    const due = this.opts.kubelet.syncDue();
    if (due.length) this.opts.trace?.syncTick?.(due);
    const period = this.opts.housekeepingPeriodMs ?? HOUSEKEEPING_PERIOD_MS;
    if (!this.housekeepingPass && now - this.lastHousekeeping >= period && (this.opts.sourcesReady?.() ?? true)) {
      this.lastHousekeeping = now;
      const housekeeping = () => this.opts.kubelet.HandlePodCleanups();
      this.housekeepingPass = (this.opts.trace?.housekeeping?.(housekeeping) ?? housekeeping())
        .then((r) => this.opts.onHousekeeping?.(r))
        .catch((err) => this.opts.onError?.(err))
        .finally(() => (this.housekeepingPass = undefined));
    }
    this.schedule(this.syncTickMs);
  }
}
