import type { Clock } from '../clock.js';

/** The kubelet's queue.WorkQueue: pods due for another sync after a delay. */
export class WorkQueue {
  private readonly due = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  enqueue(uid: string, delayMs: number): void {
    this.due.set(uid, this.clock.now() + delayMs);
  }

  /** Takes every uid whose time has come. */
  getWork(): string[] {
    const now = this.clock.now();
    const ready: string[] = [];
    for (const [uid, at] of this.due) {
      if (at <= now) {
        ready.push(uid);
        this.due.delete(uid);
      }
    }
    return ready;
  }

  remove(uid: string): void {
    this.due.delete(uid);
  }

  /** When uid is due, if queued. */
  dueAt(uid: string): number | undefined {
    return this.due.get(uid);
  }

  size(): number {
    return this.due.size;
  }
}
