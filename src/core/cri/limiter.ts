/** How long a sync let in by `admitted` counts against the limit at most. */
export const SYNC_ADMISSION_HOLD_MS = 1000;

/** Timers, injected so that tests need not wait. */
export interface LimiterTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: LimiterTimers = {
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * A bound on the CRI calls in flight on one channel, with the lists (what the PLEG relist and
 * housekeeping read) ahead of the rest in the queue. Thousands of unary calls at once on one
 * grpc-js connection (5,000 pods added together) stalled it for good; a few dozen in flight keep
 * the runtime as busy as it can be while every call still gets its turn.
 */
export class CallLimiter {
  private active = 0;
  private readonly high: (() => void)[] = [];
  private readonly normal: (() => void)[] = [];
  /** Who waits in whenUncongested, first come first served. */
  private readonly admissions: (() => void)[] = [];
  /** Syncs let in by `admitted` that still count against the limit. */
  private holding = 0;
  /** The most calls seen in flight at once (tests and benchmarks). */
  maxObserved = 0;

  constructor(
    readonly limit: number,
    private readonly timers: LimiterTimers = realTimers,
  ) {}

  get queued(): number {
    return this.high.length + this.normal.length;
  }

  /**
   * Resolves once fewer than `limit` calls wait for a slot (at once when so and no one waits here
   * already). Each pod sync waits here first (admitted): with 5,000 pods started together, the syncs
   * then wait as syncs, not as thousands of queued calls, each of which outlived the young
   * generation while it waited (about 60 MB promoted to the old one and dead there, pages that V8
   * gives back only slowly). A sync under way is never held here, and one let in counts against
   * the limit for a second at most (admitted), so one waiting on a pull or a grace period does not
   * hold others up for long.
   */
  whenUncongested(): Promise<void> {
    if (this.admissions.length === 0 && this.queued + this.holding < this.limit) return Promise.resolve();
    return new Promise((resolve) => this.admissions.push(resolve));
  }

  /**
   * Runs a sync once the runtime is uncongested (whenUncongested), counting it as a queued call
   * until it ends, or for SYNC_ADMISSION_HOLD_MS at most. Let in only as the queue was short,
   * 5,000 syncs asked for together all started before any had made a call, and then took turns
   * call by call: none reached Running before nearly all had, and the work of each lived through
   * the whole burst. Counted, they are let in `limit` at a time; and after the hold one waiting on
   * an image pull or a grace period no longer holds others up.
   */
  async admitted<T>(sync: () => Promise<T>): Promise<T> {
    if (this.admissions.length === 0 && this.queued + this.holding < this.limit) this.holding++;
    else
      await new Promise<void>((resolve) =>
        this.admissions.push(() => {
          this.holding++;
          resolve();
        }),
      );
    let counted = true;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      this.holding--;
      this.admit();
    };
    const hold = this.timers.set(uncount, SYNC_ADMISSION_HOLD_MS);
    try {
      return await sync();
    } finally {
      this.timers.clear(hold);
      uncount();
    }
  }

  /**
   * Lets in as many waiting syncs as there is room below the limit; all of them once nothing is
   * left to call, but never more than `limit` counted syncs at once.
   */
  private admit(): void {
    const idle = this.active === 0 && this.queued === 0 && this.holding === 0;
    let room = idle ? this.admissions.length : this.limit - this.queued - this.holding;
    while (room-- > 0 && this.admissions.length && this.holding < this.limit) this.admissions.shift()!();
  }

  /** Waits for a slot; the returned function gives it back (once). */
  acquire(priority: 'high' | 'normal'): Promise<() => void> {
    if (this.active < this.limit) return Promise.resolve(this.take());
    return new Promise((resolve) => (priority === 'high' ? this.high : this.normal).push(() => resolve(this.take())));
  }

  private take(): () => void {
    this.active++;
    this.maxObserved = Math.max(this.maxObserved, this.active);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      const next = this.high.shift() ?? this.normal.shift();
      next?.();
      if (this.admissions.length) this.admit();
    };
  }
}
