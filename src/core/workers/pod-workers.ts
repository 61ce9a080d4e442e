import type { IPod } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import { errorMessage } from '../errors.js';
import { WorkQueue } from './work-queue.js';
import { podMeta } from '../util/pod-key.js';

export type UpdateType = 'create' | 'update' | 'sync' | 'kill';
export type WorkerState = 'syncing' | 'terminating' | 'terminated';

/** What a pod's lane is doing when it runs a unit of work. */
export type WorkKind = 'sync' | 'terminating' | 'terminated';

/** Hook the pod workers call around each unit of work of a lane. */
export interface WorkerTrace {
  work<T>(pod: IPod, kind: WorkKind, update: UpdateType, run: () => Promise<T>): Promise<T>;
}

export interface UpdatePodOptions {
  type: UpdateType;
  pod: IPod;
  /** For 'kill': overrides the pod's grace period (seconds). */
  gracePeriodSeconds?: number;
}

/** What a lane does for its pod (the kubelet's podSyncer). */
export interface PodSyncer {
  /** Returns true when the pod reached a terminal phase and needs no further syncs. */
  syncPod(pod: IPod, type: UpdateType): Promise<boolean>;
  syncTerminatingPod(pod: IPod, gracePeriodSeconds: number | undefined): Promise<void>;
  syncTerminatedPod(pod: IPod): Promise<void>;
}

export interface PodWorkersOptions {
  clock: Clock;
  /** After a sync error: 10 s, as the kubelet's backOffPeriod. */
  backOffPeriodMs?: number;
  /** After a good sync: the periodic resync (1 min). */
  resyncIntervalMs?: number;
  /** Jitter fraction added to both delays (0 in tests). */
  jitter?: number;
  random?: () => number;
  onSyncError?: (pod: IPod, err: unknown) => void;
  onSyncDone?: (pod: IPod, durationMs: number, err?: unknown) => void;
  /** Wraps each unit of work of a lane (watch --trace). */
  trace?: WorkerTrace;
  /**
   * Runs each sync (not a termination) once the runtime can take more work
   * (RuntimeService.admitSync). The latest update is taken once the sync is let in.
   */
  admit?: <T>(sync: () => Promise<T>) => Promise<T>;
}

interface Lane {
  uid: string;
  pod: IPod;
  state: WorkerState;
  working: boolean;
  pending?: UpdatePodOptions;
  gracePeriodSeconds?: number;
  /** Resolved once the lane is idle, for waiters. */
  idle: Promise<void>;
  resolveIdle?: () => void;
  lastError?: string;
  terminal: boolean;
}

/**
 * One serial lane per pod UID: a pod is never synced by two lanes at once,
 * and pods never wait on each other's syncs (only, with `admit`, for the
 * runtime's calls to stop piling up before a sync starts). Lanes go
 * syncing -> terminating -> terminated, as the kubelet's podWorkers.
 */
export class PodWorkers {
  private readonly lanes = new Map<string, Lane>();
  readonly workQueue: WorkQueue;
  private readonly backOffPeriodMs: number;
  private readonly resyncIntervalMs: number;

  constructor(
    private readonly syncer: PodSyncer,
    private readonly opts: PodWorkersOptions,
  ) {
    this.workQueue = new WorkQueue(opts.clock);
    this.backOffPeriodMs = opts.backOffPeriodMs ?? 10_000;
    this.resyncIntervalMs = opts.resyncIntervalMs ?? 60_000;
  }

  updatePod(update: UpdatePodOptions): void {
    const uid = podMeta(update.pod).uid;
    let lane = this.lanes.get(uid);
    if (!lane) {
      if (update.type === 'kill' && update.pod.metadata?.uid === undefined) return;
      lane = { uid, pod: update.pod, state: 'syncing', working: false, idle: Promise.resolve(), terminal: false };
      this.lanes.set(uid, lane);
    }
    if (lane.state === 'terminated') return;
    if (update.type === 'kill') {
      lane.state = 'terminating';
      lane.gracePeriodSeconds = update.gracePeriodSeconds ?? lane.gracePeriodSeconds;
    } else if (lane.state === 'terminating') {
      // Once terminating, a pod is never synced back to life.
      return;
    }
    // Latest update wins; the lane picks it up when the current sync ends.
    lane.pending = update;
    if (!lane.working) this.startLane(lane);
  }

  private startLane(lane: Lane): void {
    lane.working = true;
    lane.idle = new Promise((resolve) => (lane.resolveIdle = resolve));
    void this.runLane(lane);
  }

  private async runLane(lane: Lane): Promise<void> {
    while (lane.pending) {
      if (lane.state === 'syncing' && this.opts.admit) await this.opts.admit(() => this.work(lane));
      else await this.work(lane);
    }
    lane.working = false;
    lane.resolveIdle?.();
  }

  /** One unit of a lane's work: the latest update, synced or terminated. */
  private async work(lane: Lane): Promise<void> {
    const update = lane.pending;
    if (!update) return;
    lane.pending = undefined;
    lane.pod = update.pod;
    const started = this.opts.clock.now();
    let error: unknown;
    try {
      if (lane.state === 'syncing') {
        lane.terminal = await this.traced(update, 'sync', () => this.syncer.syncPod(update.pod, update.type));
      } else if (lane.state === 'terminating') {
        await this.traced(update, 'terminating', () => this.syncer.syncTerminatingPod(update.pod, lane.gracePeriodSeconds));
        lane.state = 'terminated';
        await this.traced(update, 'terminated', () => this.syncer.syncTerminatedPod(update.pod));
      }
      lane.lastError = undefined;
    } catch (err) {
      error = err;
      lane.lastError = errorMessage(err);
      this.opts.onSyncError?.(update.pod, err);
    }
    this.opts.onSyncDone?.(update.pod, this.opts.clock.now() - started, error);
    this.requeue(lane, error);
  }

  private traced<T>(update: UpdatePodOptions, kind: WorkKind, run: () => Promise<T>): Promise<T> {
    return this.opts.trace ? this.opts.trace.work(update.pod, kind, update.type, run) : run();
  }

  private requeue(lane: Lane, error: unknown): void {
    if (lane.state === 'terminated') {
      this.workQueue.remove(lane.uid);
      return;
    }
    if (lane.state === 'terminating') {
      // A failed termination is retried after the backoff period.
      if (error) this.workQueue.enqueue(lane.uid, this.withJitter(this.backOffPeriodMs));
      return;
    }
    if (lane.terminal && !error) {
      this.workQueue.remove(lane.uid);
      return;
    }
    // A sooner resync the sync itself asked for (a backoff that ends) stands.
    this.requeueAfter(lane.uid, this.withJitter(error ? this.backOffPeriodMs : this.resyncIntervalMs));
  }

  /** Asks a lane to sync again soon (e.g. after a PLEG event or a backoff to wait out). */
  requeueAfter(uid: string, delayMs: number): void {
    const lane = this.lanes.get(uid);
    if (!lane || lane.state === 'terminated') return;
    const current = this.workQueue.dueAt(uid);
    const at = this.opts.clock.now() + delayMs;
    if (current === undefined || at < current) this.workQueue.enqueue(uid, delayMs);
  }

  private withJitter(ms: number): number {
    const jitter = this.opts.jitter ?? 0;
    return jitter > 0 ? ms + Math.floor(ms * jitter * (this.opts.random ?? Math.random)()) : ms;
  }

  /** Pods due for resync: the sync tick dispatches these. */
  dueForSync(): IPod[] {
    const pods: IPod[] = [];
    for (const uid of this.workQueue.getWork()) {
      const lane = this.lanes.get(uid);
      if (lane && lane.state !== 'terminated') pods.push(lane.pod);
    }
    return pods;
  }

  /** Re-dispatches the due pods with the update type their lane needs. */
  syncDue(): string[] {
    const due = this.dueForSync();
    for (const pod of due) {
      const lane = this.lanes.get(podMeta(pod).uid)!;
      this.updatePod({ type: lane.state === 'terminating' ? 'kill' : 'sync', pod });
    }
    return due.map((p) => podMeta(p).uid);
  }

  state(uid: string): WorkerState | undefined {
    return this.lanes.get(uid)?.state;
  }

  lastError(uid: string): string | undefined {
    return this.lanes.get(uid)?.lastError;
  }

  isWorking(uid: string): boolean {
    return this.lanes.get(uid)?.working ?? false;
  }

  /** Resolves once the pod's lane has no sync running (at once for a pod without a lane). */
  idle(uid: string): Promise<void> {
    return this.lanes.get(uid)?.idle ?? Promise.resolve();
  }

  /** Drops the lane of a terminated pod so its UID can be used again. */
  forget(uid: string): void {
    const lane = this.lanes.get(uid);
    if (lane && !lane.working && lane.state === 'terminated') {
      this.lanes.delete(uid);
      this.workQueue.remove(uid);
    }
  }

  knownPods(): string[] {
    return [...this.lanes.keys()];
  }

  /** Resolves when every lane is idle (tests and shutdown). */
  async waitIdle(): Promise<void> {
    for (;;) {
      const busy = [...this.lanes.values()].filter((l) => l.working);
      if (busy.length === 0) return;
      await Promise.all(busy.map((l) => l.idle));
    }
  }
}
