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
  /** The most calls seen in flight at once (tests and benchmarks). */
  maxObserved = 0;

  constructor(readonly limit: number) {}

  get queued(): number {
    return this.high.length + this.normal.length;
  }

  /**
   * Resolves once fewer than `limit` calls wait for a slot (at once when so and no one waits here
   * already). The pod workers ask it before a sync: with 5,000 pods started together, the syncs
   * then wait as syncs, not as thousands of queued calls, each of which outlived the young
   * generation while it waited (about 60 MB promoted to the old one and dead there, pages that V8
   * gives back only slowly). A sync under way is never held here, so one waiting on a pull or a
   * grace period holds no one else up.
   */
  whenUncongested(): Promise<void> {
    if (this.admissions.length === 0 && this.queued < this.limit) return Promise.resolve();
    return new Promise((resolve) => this.admissions.push(resolve));
  }

  /** Lets in as many waiting syncs as there is room below the limit; all of them once nothing is left to call. */
  private admit(): void {
    let room = this.active === 0 && this.queued === 0 ? this.admissions.length : this.limit - this.queued;
    while (room-- > 0 && this.admissions.length) this.admissions.shift()!();
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
