import type { Clock } from '../clock.js';

/** What a runtime event says of a container's exit. */
export interface ContainerExit {
  exitCode: number;
  /** Epoch ms. */
  finishedAt: number;
  /** As the CRI words it: OOMKilled, Completed (exit 0) or Error. */
  reason: string;
}

/** An early exit the CRI never confirms (the container was removed meanwhile) is dropped after this. */
export const EARLY_EXIT_TTL_MS = 10_000;
const MAX_EARLY_EXITS = 10_000;

/**
 * Container exits a runtime event announced before the CRI recorded them. containerd publishes
 * TaskExit tens of milliseconds before its CRI plugin deletes the task and says EXITED; until it
 * does, every read of the pod (the PLEG's relist and inspections, SyncPod's own read) takes the
 * container as exited with the event's code and time, so no reader acts on the stale RUNNING in
 * between. An entry goes once the CRI no longer says running.
 */
export class EarlyExits {
  private readonly exits = new Map<string, ContainerExit & { noted: number }>();

  constructor(private readonly clock: Clock) {}

  get size(): number {
    return this.exits.size;
  }

  note(containerId: string, exit: ContainerExit): void {
    const now = this.clock.now();
    if (this.exits.size >= MAX_EARLY_EXITS) for (const [id, e] of this.exits) if (now - e.noted > EARLY_EXIT_TTL_MS) this.exits.delete(id);
    if (this.exits.size >= MAX_EARLY_EXITS) this.exits.clear();
    this.exits.set(containerId, { ...exit, noted: now });
  }

  /** Whether an exit is still ahead of the CRI for this container. */
  pending(containerId: string): boolean {
    return this.exits.has(containerId);
  }

  /**
   * The exit to apply to a container as the CRI reports it now: while the CRI still says running,
   * the event's exit; once it says anything else (or the entry is too old), nothing, and the entry goes.
   */
  ahead(containerId: string, criSaysRunning: boolean): ContainerExit | undefined {
    const e = this.exits.get(containerId);
    if (!e) return undefined;
    if (!criSaysRunning || this.clock.now() - e.noted > EARLY_EXIT_TTL_MS) {
      this.exits.delete(containerId);
      return undefined;
    }
    return e;
  }
}
