import type { Clock } from '../clock.js';

interface Entry {
  backoffMs: number;
  lastUpdate: number;
}

/**
 * Keyed exponential backoff with the semantics of the kubelet's
 * flowcontrol.Backoff: next() starts at the initial delay and doubles up to
 * the max; an entry untouched for 2 x max is forgotten, so a container that
 * ran cleanly for 10 minutes (max 5 min) starts again from 10 s.
 */
export class Backoff {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    readonly initialMs: number,
    readonly maxMs: number,
  ) {}

  /** Records a failure at eventTime and grows the delay. */
  next(key: string, eventTime: number = this.clock.now()): number {
    const entry = this.entries.get(key);
    if (!entry || this.hasExpired(eventTime, entry.lastUpdate)) {
      this.entries.set(key, { backoffMs: this.initialMs, lastUpdate: eventTime });
      return this.initialMs;
    }
    entry.backoffMs = Math.min(entry.backoffMs * 2, this.maxMs);
    entry.lastUpdate = eventTime;
    return entry.backoffMs;
  }

  /** The current delay for key, 0 when it has none. */
  get(key: string): number {
    return this.entries.get(key)?.backoffMs ?? 0;
  }

  /** True while now is within the current delay counted from eventTime. */
  isInBackOffSince(key: string, eventTime: number): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    if (this.hasExpired(eventTime, entry.lastUpdate)) return false;
    return this.clock.now() - eventTime < entry.backoffMs;
  }

  /** True while the delay counted from the last failure recorded by next() has not passed (image pulls). */
  isInBackOffSinceUpdate(key: string, now: number = this.clock.now()): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    if (this.hasExpired(now, entry.lastUpdate)) return false;
    return now - entry.lastUpdate < entry.backoffMs;
  }

  /** Milliseconds left of the delay counted from the last failure recorded (0 when none). */
  remainingSinceUpdate(key: string, now: number = this.clock.now()): number {
    const entry = this.entries.get(key);
    return entry ? Math.max(0, entry.lastUpdate + entry.backoffMs - now) : 0;
  }

  /** Milliseconds left of the delay counted from eventTime (0 when none). */
  remainingSince(key: string, eventTime: number): number {
    const entry = this.entries.get(key);
    if (!entry) return 0;
    return Math.max(0, eventTime + entry.backoffMs - this.clock.now());
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Drops entries not touched for 2 x max. */
  gc(): void {
    const now = this.clock.now();
    for (const [key, entry] of this.entries) {
      if (this.hasExpired(now, entry.lastUpdate)) this.entries.delete(key);
    }
  }

  size(): number {
    return this.entries.size;
  }

  private hasExpired(eventTime: number, lastUpdate: number): boolean {
    return eventTime - lastUpdate > this.maxMs * 2;
  }
}

/** CrashLoopBackOff and ImagePullBackOff: 10 s doubling to 300 s. */
export const CONTAINER_BACKOFF_INITIAL_MS = 10_000;
export const CONTAINER_BACKOFF_MAX_MS = 300_000;
export const IMAGE_BACKOFF_INITIAL_MS = 10_000;
export const IMAGE_BACKOFF_MAX_MS = 300_000;
