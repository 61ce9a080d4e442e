import type { RuntimePodStatus } from '../container/types.js';

interface Entry {
  status: RuntimePodStatus;
  /** When the status was read (epoch ms). */
  modified: number;
}

interface Waiter {
  minTime: number;
  resolve: (status: RuntimePodStatus) => void;
}

/** How a reader of GetNewerThan gets a status when the cache holds none new enough. */
export interface NewerThanOptions {
  /** Reads the runtime itself (its result is set in the cache); without it the reader waits for a relist or a refresh. */
  read?: () => Promise<RuntimePodStatus>;
  /** The pod's status when the runtime holds nothing of it (asked only of a pod never synced). */
  empty?: () => RuntimePodStatus;
}

/**
 * The kubelet's pod cache, the one runtime view of each pod: the PLEG and the kubelet's own reads
 * set it, the pod workers and the status read it. The global timestamp says that everything
 * unchanged is at least that fresh.
 */
export class PodCache {
  private readonly entries = new Map<string, Entry>();
  private timestamp = 0;
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** The PLEG's word that the runtime holds nothing of a pod (see GenericPleg.holdsNothingOf). */
  private holdsNothingOf: (uid: string) => boolean = () => false;

  set(uid: string, status: RuntimePodStatus, modified: number): void {
    this.entries.set(uid, { status, modified });
    this.notify(uid);
  }

  /** Sets the entry unless the one there was read later (a slow read never replaces a newer one). */
  setIfNewer(uid: string, status: RuntimePodStatus, modified: number): void {
    const e = this.entries.get(uid);
    if (!e || e.modified <= modified) this.set(uid, status, modified);
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

  /**
   * The kubelet's GetNewerThan: the pod's status once it is known good after minTime. For a pod
   * never synced (no minTime) an entry may be left from a previous life of its UID and is not
   * trusted; with none, and the PLEG's word that the runtime holds nothing of it, its status is
   * empty. Otherwise the reader reads the runtime (opts.read), or waits for a set or a relist.
   */
  async getNewerThan(uid: string, minTime: number | undefined, opts: NewerThanOptions = {}): Promise<RuntimePodStatus> {
    const e = this.entries.get(uid);
    if (e && minTime !== undefined && Math.max(e.modified, this.timestamp) > minTime) return e.status;
    if (!e && minTime === undefined && opts.empty && this.holdsNothingOf(uid)) return opts.empty();
    if (opts.read) return opts.read();
    return new Promise((resolve) => {
      let set = this.waiters.get(uid);
      if (!set) this.waiters.set(uid, (set = new Set()));
      set.add({ minTime: minTime ?? -Infinity, resolve });
    });
  }

  /** The PLEG that fills this cache tells it which pods it knows the runtime holds nothing of. */
  trackAbsence(holdsNothingOf: (uid: string) => boolean): void {
    this.holdsNothingOf = holdsNothingOf;
  }

  delete(uid: string): void {
    this.entries.delete(uid);
  }

  updateTime(time: number): void {
    this.timestamp = Math.max(this.timestamp, time);
    for (const uid of [...this.waiters.keys()]) this.notify(uid);
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

  private notify(uid: string): void {
    const set = this.waiters.get(uid);
    const e = this.entries.get(uid);
    if (!set || !e) return;
    const fresh = Math.max(e.modified, this.timestamp);
    for (const w of set)
      if (fresh > w.minTime) {
        set.delete(w);
        w.resolve(e.status);
      }
    if (set.size === 0) this.waiters.delete(uid);
  }
}
