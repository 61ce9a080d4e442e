import type { Clock } from '../clock.js';
import type { ContainerSummary, PodSandboxSummary } from '../cri/types.js';

/** The kubelet's runtimeCacheRefreshPeriod: housekeepingPeriod (2 s) + housekeepingWarningDuration (1 s). */
export const RUNTIME_CACHE_REFRESH_PERIOD_MS = 3000;

/** podctl's sandboxes and containers (the managed-by selector) as one pair of lists read them. */
export interface RuntimeSnapshot {
  sandboxes: readonly PodSandboxSummary[];
  containers: readonly ContainerSummary[];
  /** When the lists were asked for (epoch ms): they are at least that fresh. */
  at: number;
}

/**
 * The kubelet's runtime cache (kubecontainer.RuntimeCache): the last lists of podctl's sandboxes
 * and containers, which the PLEG's relists keep up to date. Housekeeping reads them instead of
 * listing every sandbox and container again every 2 s; when they are older than the refresh
 * period (no relist lately: an evented PLEG relists every 5 minutes) it lists for itself.
 */
export class RuntimeCache {
  private last?: RuntimeSnapshot;

  constructor(
    private readonly clock: Clock,
    private readonly refreshPeriodMs = RUNTIME_CACHE_REFRESH_PERIOD_MS,
  ) {}

  /** Lists made with podctl's selector (a relist's); an older pair never replaces a newer one. */
  update(snapshot: RuntimeSnapshot): void {
    if (!this.last || snapshot.at >= this.last.at) this.last = snapshot;
  }

  /** The cached lists when fresh enough, else `list`'s (not cached: a caller may list less than a relist does). */
  async get(list: () => Promise<Omit<RuntimeSnapshot, 'at'>>): Promise<RuntimeSnapshot> {
    const now = this.clock.now();
    if (this.last && now - this.last.at < this.refreshPeriodMs) return this.last;
    return { ...(await list()), at: now };
  }
}
