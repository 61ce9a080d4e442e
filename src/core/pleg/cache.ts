import type { RuntimePodStatus } from '../container/types.js';

interface Entry {
  status: RuntimePodStatus;
  /** When the status was read (epoch ms). */
  modified: number;
}

/**
 * The kubelet's pod cache: the last runtime status of each pod and when it
 * was refreshed; the global timestamp says that everything unchanged is at
 * least that fresh.
 */
export class PodCache {
  private readonly entries = new Map<string, Entry>();
  private timestamp = 0;

  set(uid: string, status: RuntimePodStatus, modified: number): void {
    this.entries.set(uid, { status, modified });
  }

  get(uid: string): RuntimePodStatus | undefined {
    return this.entries.get(uid)?.status;
  }

  /** When this pod's entry was last set. */
  modifiedAt(uid: string): number | undefined {
    return this.entries.get(uid)?.modified;
  }

  /** When this pod's status was last known good: its own refresh or the last relist. */
  freshness(uid: string): number | undefined {
    const e = this.entries.get(uid);
    return e ? Math.max(e.modified, this.timestamp) : undefined;
  }

  delete(uid: string): void {
    this.entries.delete(uid);
  }

  updateTime(time: number): void {
    this.timestamp = Math.max(this.timestamp, time);
  }

  /** Every pod's entry is at least this fresh (the last relist's start, or an event stream's mark): epoch ms, 0 before either. */
  currentAsOf(): number {
    return this.timestamp;
  }

  size(): number {
    return this.entries.size;
  }

  uids(): string[] {
    return [...this.entries.keys()];
  }
}
