import { forEachLimited } from '../util/concurrency.js';
import type { PodLifecycleEvent, PodObjectState } from './events.js';

/** Pods a relist or a turn of refreshes inspects at once. */
export const RELIST_INSPECT_CONCURRENCY = 16;

/** A pod refresh waiting for its turn, with the news that asked for it (undefined: read whatever it is). */
export interface WaitingRefresh {
  name: string;
  namespace: string;
  news: PodObjectState[] | undefined;
  promise: Promise<PodLifecycleEvent[]>;
  resolve: (events: PodLifecycleEvent[]) => void;
  reject: (err: unknown) => void;
}

/**
 * The generic PLEG's pod refreshes (a runtime event's way in): a request for a pod whose refresh
 * waits for its turn joins it, and each turn reads the pods waiting when it comes.
 */
export class RefreshQueue {
  private readonly queue = new Map<string, WaitingRefresh>();
  /** Turns under way (0 or 1). */
  private turns = 0;

  constructor(
    private readonly o: {
      /** Runs a turn when the PLEG's relists and refreshes let it (one at a time). */
      schedule: (turn: () => Promise<void>) => void;
      read: (uid: string, r: WaitingRefresh) => Promise<PodLifecycleEvent[]>;
    },
  ) {}

  /** No refresh waits or runs. */
  get idle(): boolean {
    return this.queue.size === 0 && this.turns === 0;
  }

  /** Whether a refresh of the pod waits for its turn. */
  waiting(uid: string): boolean {
    return this.queue.has(uid);
  }

  request(uid: string, name: string, namespace: string, news?: readonly PodObjectState[]): Promise<PodLifecycleEvent[]> {
    // A refresh of this pod still waiting for its turn reads the pod after this change too: join it.
    // (Each of 5,000 starting pods sends half a dozen events; one read each is enough.)
    const waiting = this.queue.get(uid);
    if (waiting) {
      if (news && waiting.news) waiting.news.push(...news);
      else waiting.news = undefined;
      return waiting.promise;
    }
    let resolve!: (events: PodLifecycleEvent[]) => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<PodLifecycleEvent[]>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.queue.set(uid, { name, namespace, news: news && [...news], promise, resolve, reject });
    if (this.queue.size === 1) this.o.schedule(() => this.turn());
    return promise;
  }

  /**
   * The refreshes waiting when their turn comes, a bounded number of pods read at once (as a
   * relist's inspections): one read at a time fell minutes behind the events of 5,000 starting pods.
   * Pods are disjoint, so their diffs do not meet; relists still wait for the whole turn.
   */
  private async turn(): Promise<void> {
    const batch = [...this.queue];
    // From here on a new change needs a read of its own (the next turn's).
    this.queue.clear();
    this.turns++;
    try {
      await forEachLimited(batch, RELIST_INSPECT_CONCURRENCY, async ([uid, r]) => {
        try {
          r.resolve(await this.o.read(uid, r));
        } catch (err) {
          r.reject(err);
        }
      });
    } finally {
      this.turns--;
    }
  }
}
