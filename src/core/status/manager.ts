import type { IPodCondition, IPodStatus } from 'kubernetes-models/v1';
import type { WaitingReason } from './generate.js';

/**
 * The kubelet's statusManager, for one node with no API server: the last v1 status of every
 * pod, and the waiting reasons SyncPod left per container (ErrImagePull, CreateContainerConfigError,
 * CrashLoopBackOff…) that the next status shows. Only the kubelet writes it; everything else reads.
 */
export class StatusManager {
  private readonly statuses = new Map<string, IPodStatus>();
  private readonly waiting = new Map<string, Map<string, WaitingReason>>();
  private readonly external = new Map<string, Map<string, IPodCondition>>();

  /**
   * The kubelet-owned condition types: a client may set any other (a readiness gate's), as it may
   * patch a pod's status conditions through the API server.
   */
  static readonly OWNED_CONDITIONS = new Set([
    'PodScheduled',
    'PodReadyToStartContainers',
    'Initialized',
    'ContainersReady',
    'Ready',
    'DisruptionTarget',
    'PodResizePending',
    'PodResizeInProgress',
  ]);

  /** Sets a condition from outside (kept while the pod lives); its transition time moves only when its status does. */
  setCondition(
    uid: string,
    c: { type: string; status: 'True' | 'False' | 'Unknown'; reason?: string; message?: string },
    now: number,
  ): IPodCondition {
    let known = this.external.get(uid);
    if (!known) this.external.set(uid, (known = new Map()));
    const prev = known.get(c.type);
    const next: IPodCondition = {
      type: c.type,
      status: c.status,
      lastProbeTime: null as unknown as undefined,
      lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : new Date(now).toISOString(),
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
    };
    known.set(c.type, next);
    return next;
  }

  /** Drops a condition (the kubelet's resize conditions, once the resize is done); true if it was set. */
  clearCondition(uid: string, type: string): boolean {
    return this.external.get(uid)?.delete(type) ?? false;
  }

  /** The conditions set from outside, in the order first set. */
  conditions(uid: string): IPodCondition[] {
    return [...(this.external.get(uid)?.values() ?? [])];
  }

  get(uid: string): IPodStatus | undefined {
    return this.statuses.get(uid);
  }

  /** Every pod's last status. */
  all(): IPodStatus[] {
    return [...this.statuses.values()];
  }

  /** Records a pod's new status; returns the one it replaces. */
  set(uid: string, status: IPodStatus): IPodStatus | undefined {
    const previous = this.statuses.get(uid);
    this.statuses.set(uid, status);
    return previous;
  }

  waitingReason(uid: string, container: string): WaitingReason | undefined {
    return this.waiting.get(uid)?.get(container);
  }

  /** What SyncPod said of each container: a reason to show while it waits, or none any more. */
  recordWaiting(uid: string, reasons: ReadonlyMap<string, WaitingReason | null | undefined>): void {
    let known = this.waiting.get(uid);
    for (const [name, reason] of reasons) {
      if (reason) {
        if (!known) this.waiting.set(uid, (known = new Map()));
        known.set(name, reason);
      } else known?.delete(name);
    }
  }

  /** The pod is gone: nothing of it is kept. */
  forget(uid: string): void {
    this.statuses.delete(uid);
    this.waiting.delete(uid);
    this.external.delete(uid);
  }
}
