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
  /** The most calls seen in flight at once (tests and benchmarks). */
  maxObserved = 0;

  constructor(readonly limit: number) {}

  get queued(): number {
    return this.high.length + this.normal.length;
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
    };
  }
}
