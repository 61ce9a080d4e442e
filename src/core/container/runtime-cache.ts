import type { Clock } from '../clock.js';
import type { ContainerSummary, PodSandboxSummary } from '../cri/types.js';

/** The kubelet's runtimeCacheRefreshPeriod: housekeepingPeriod (2 s) + housekeepingWarningDuration (1 s). */
export const RUNTIME_CACHE_REFRESH_PERIOD_MS = 3000;
/**
 * The refresh period while an event-driven PLEG has its stream: the kubelet's ContainerGCPeriod (1 min).
 * Every change then reaches the PLEG as an event (a pod's syncs, and the pruning of its dead containers
 * when one dies, follow at once); what is left to housekeeping's lists (orphans, dead containers beyond
 * the newest) can wait that long, where listing 5,000 pods every 2 s was most of an idle watch's CPU.
 */
export const EVENTED_RUNTIME_CACHE_REFRESH_PERIOD_MS = 60_000;

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
    private refreshPeriodMs = RUNTIME_CACHE_REFRESH_PERIOD_MS,
  ) {}

  /** Set by the PLEG: whether an event stream brings every change (see EVENTED_RUNTIME_CACHE_REFRESH_PERIOD_MS). */
  private eventDriven = false;

  /**
   * The PLEG says whether every change reaches it as an event: the lists then stay good for a minute
   * (the caller's own lists are kept too), else for the kubelet's 3 s beside a relist every second.
   */
  setEventDriven(on: boolean): void {
    this.eventDriven = on;
    this.refreshPeriodMs = on ? EVENTED_RUNTIME_CACHE_REFRESH_PERIOD_MS : RUNTIME_CACHE_REFRESH_PERIOD_MS;
  }

  /** Lists made with podctl's selector (a relist's); an older pair never replaces a newer one. */
  update(snapshot: RuntimeSnapshot): void {
    if (!this.last || snapshot.at >= this.last.at) this.last = snapshot;
  }

  /**
   * The cached lists when fresh enough, else `list`'s: kept while event-driven, when `complete` says
   * they are what a relist lists (podctl's sandboxes and containers); a caller that lists less must not.
   * `maxAgeMs` bounds the age a caller accepts below the refresh period (a check that runs every few
   * seconds must see a container that started since, even while an event stream keeps the lists a minute).
   */
  async get(list: () => Promise<Omit<RuntimeSnapshot, 'at'>>, complete = false, maxAgeMs = Infinity): Promise<RuntimeSnapshot> {
    const now = this.clock.now();
    if (this.last && now - this.last.at < Math.min(this.refreshPeriodMs, maxAgeMs)) return this.last;
    const snapshot = { ...(await list()), at: now };
    if (complete && this.eventDriven) this.update(snapshot);
    return snapshot;
  }
}
