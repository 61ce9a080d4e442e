/** Time is injected so that backoff, probes and periods are tested without sleeping. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export interface TimerHandle {
  readonly id: number;
}

let nextTimerId = 1;

export const realClock: Clock = (() => {
  const timers = new Map<number, NodeJS.Timeout>();
  return {
    now: () => Date.now(),
    setTimeout(fn, ms) {
      const id = nextTimerId++;
      const t = setTimeout(() => {
        timers.delete(id);
        fn();
      }, ms);
      timers.set(id, t);
      return { id };
    },
    clearTimeout(handle) {
      const t = timers.get(handle.id);
      if (t) {
        clearTimeout(t);
        timers.delete(handle.id);
      }
    },
  };
})();

/** A clock that only moves when told to; timers fire in due order during advance(). */
export class FakeClock implements Clock {
  private current: number;
  private readonly timers = new Map<number, { due: number; fn: () => void }>();

  constructor(start = 1_700_000_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = nextTimerId++;
    this.timers.set(id, { due: this.current + Math.max(0, ms), fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle.id);
  }

  pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward by ms, firing every timer that falls due on the way. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let nextId: number | undefined;
      let nextDue = Infinity;
      for (const [id, t] of this.timers) {
        if (t.due <= target && t.due < nextDue) {
          nextDue = t.due;
          nextId = id;
        }
      }
      if (nextId === undefined) break;
      const timer = this.timers.get(nextId)!;
      this.timers.delete(nextId);
      this.current = Math.max(this.current, timer.due);
      timer.fn();
    }
    this.current = target;
  }
}
