import type { IPod } from 'kubernetes-models/v1';
import type { Clock, TimerHandle } from './clock.js';
import type { Kubelet } from './kubelet.js';
import type { GenericPleg, PodLifecycleEvent } from './pleg/generic.js';

/** Constants of the kubelet's syncLoop. */
export const SYNC_TICK_MS = 1000;

export interface SyncLoopOptions {
  kubelet: Kubelet;
  pleg: GenericPleg;
  clock: Clock;
  syncTickMs?: number;
  onPlegEvent?: (e: PodLifecycleEvent) => void;
}

/**
 * The kubelet's syncLoop for a fixed set of pods: PLEG events and the sync
 * tick dispatch pods to their workers. Config sources feed it through
 * addPods/removePods.
 */
export class SyncLoop {
  private tick?: TimerHandle;
  private unwatch?: () => void;
  private running = false;

  constructor(private readonly opts: SyncLoopOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unwatch = this.opts.pleg.watch((e) => this.handlePlegEvent(e));
    this.opts.pleg.start();
    this.scheduleTick();
  }

  /** Stops dispatching; pods keep running. */
  stop(): void {
    this.running = false;
    this.unwatch?.();
    this.opts.pleg.stop();
    if (this.tick) this.opts.clock.clearTimeout(this.tick);
  }

  addPods(pods: IPod[]): void {
    for (const pod of pods) this.opts.kubelet.addOrUpdatePod(pod);
  }

  removePods(uids: string[], gracePeriodSeconds?: number): void {
    for (const uid of uids) this.opts.kubelet.removePod(uid, gracePeriodSeconds);
  }

  private handlePlegEvent(e: PodLifecycleEvent): void {
    this.opts.onPlegEvent?.(e);
    this.opts.kubelet.syncPodSoon(e.id);
  }

  private scheduleTick(): void {
    if (!this.running) return;
    this.tick = this.opts.clock.setTimeout(() => {
      this.opts.kubelet.workers.syncDue();
      this.scheduleTick();
    }, this.opts.syncTickMs ?? SYNC_TICK_MS);
  }
}
