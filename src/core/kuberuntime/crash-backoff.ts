import { CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS } from '../util/backoff.js';
import type { RuntimeContainerStatus } from '../container/types.js';

/**
 * The one CrashLoopBackOff formula: the wait after an instance with this restart count exited.
 * None after the first exit (restart count 0), then 10 s doubling up to 300 s.
 */
export function crashBackoffMs(restartCount: number): number {
  if (restartCount <= 0) return 0;
  return Math.min(CONTAINER_BACKOFF_INITIAL_MS * 2 ** Math.min(restartCount - 1, 30), CONTAINER_BACKOFF_MAX_MS);
}

export interface CrashBackoffEstimate {
  /** The CrashLoopBackOff delay that applies to this exit (0: restart at once). */
  delayMs: number;
  /** What is left of it at `now` (0: a sync now would start the container). */
  remainingMs: number;
}

/**
 * CrashLoopBackOff as the runtime records it, for a process that never saw
 * the crashes (plan). The RuntimeManager keeps the real state in memory
 * (crashBackoff): the first restart goes at once and records 10 s, each later
 * restart doubles it up to 300 s, measured from the last finishedAt. So the
 * instance with restart count r that exited waits min(10 s × 2^(r-1), 300 s).
 *
 * Approximations, since the runtime keeps only the newest dead instance:
 * - the backoff is forgotten after 2 × max (10 min) between two failures; we
 *   only know this instance ran from startedAt, so a run longer than 10 min
 *   counts as a reset (a shorter run after a long backoff wait is not seen),
 *   and after a reset the restart count goes on, so the next crashes read as
 *   longer delays than the manager's fresh 10 s;
 * - the manager keys the backoff by the exited instance's own spec hash, so
 *   (like it) this ignores a spec edited since that instance was created;
 * - an agent restarted mid-loop starts its own backoff from nothing, as the
 *   kubelet does: this estimate is what a long-running agent would do.
 */
export function crashLoopBackOff(c: RuntimeContainerStatus, now: number): CrashBackoffEstimate {
  const none = { delayMs: 0, remainingMs: 0 };
  if (c.state !== 'exited' || c.restartCount === 0) return none;
  const finishedAt = c.finishedAt ?? 0;
  if (c.startedAt !== undefined && finishedAt - c.startedAt > 2 * CONTAINER_BACKOFF_MAX_MS) return none;
  const delayMs = crashBackoffMs(c.restartCount);
  return { delayMs, remainingMs: Math.max(0, finishedAt + delayMs - now) };
}
