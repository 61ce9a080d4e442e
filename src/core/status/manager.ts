import type { IPodStatus } from 'kubernetes-models/v1';
import type { WaitingReason } from './generate.js';

/**
 * The kubelet's statusManager, for one node with no API server: the last v1 status of every
 * pod, and the waiting reasons SyncPod left per container (ErrImagePull, CreateContainerConfigError,
 * CrashLoopBackOff…) that the next status shows. Only the kubelet writes it; everything else reads.
 */
export class StatusManager {
  private readonly statuses = new Map<string, IPodStatus>();
  private readonly waiting = new Map<string, Map<string, WaitingReason>>();

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
  }
}
