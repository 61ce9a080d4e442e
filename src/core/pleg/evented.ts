import type { Clock, TimerHandle } from '../clock.js';
import type { ContainerEventStream, RuntimeService } from '../cri/client.js';
import { isUnimplemented, type CriError } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import * as L from '../kuberuntime/labels.js';
import type { PodCache } from './cache.js';
import { containerState, type GenericPleg, type PlegSource, type PodLifecycleEvent, type PodObjectState } from './generic.js';

/** Constants of the kubelet's evented PLEG (pleg/evented.go). */
export const EVENTED_RELIST_PERIOD_MS = 300_000;
export const EVENTED_RELIST_THRESHOLD_MS = 10 * 60_000;
export const MAX_STREAM_FAILURES = 5;
/** The kubelet's globalCacheUpdatePeriod: how often the pod cache is marked current while the stream is up. */
export const GLOBAL_CACHE_UPDATE_PERIOD_MS = 5000;

/** What the sync loop needs of a PLEG, generic or evented. */
export interface Pleg {
  readonly cache: PodCache;
  /** Where the events come from now (a PLEG that fell back says relist). */
  readonly source: PlegSource;
  /** One relist now (its events also reach the listeners). */
  relist(): Promise<PodLifecycleEvent[]>;
  watch(listener: (e: PodLifecycleEvent) => void): () => void;
  start(): void;
  stop(): void;
  healthy(): { ok: boolean; message: string };
}

/**
 * The kubelet's updateGlobalCache, for a PLEG fed by an event stream: every change reaches it as an
 * event, so while `current()` says nothing is missing (the stream up, no event still being handled)
 * and no pod refresh is waiting or under way, the whole pod cache is marked current every 5 s.
 * Without it the periodic resync of every pod would read the runtime for each (the relist that marks
 * the cache runs every 5 minutes). Shared by the CRI-events and containerd-events PLEGs.
 */
export class GlobalCacheUpdater {
  private timer?: TimerHandle;

  constructor(
    private readonly clock: Clock,
    private readonly generic: GenericPleg,
    private readonly current: () => boolean,
  ) {}

  start(): void {
    if (this.timer) return;
    const tick = () => {
      this.timer = this.clock.setTimeout(() => {
        if (this.current()) this.generic.markCacheCurrent(this.clock.now());
        tick();
      }, GLOBAL_CACHE_UPDATE_PERIOD_MS);
    };
    tick();
  }

  stop(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}

export interface EventedPlegOptions {
  runtime: RuntimeService;
  clock: Clock;
  /** The generic PLEG: the safety-net relist, and the fallback. */
  generic: GenericPleg;
  /** Said once, when the evented PLEG gives way to the generic one (or to `next`). */
  onFallback?: (reason: string) => void;
  /**
   * Takes over when the runtime does not implement GetContainerEvents (--pleg=auto on containerd:
   * its own event service), over the same generic PLEG, whose listeners it emits to.
   */
  next?: Pleg;
}

/**
 * The evented PLEG: consumes the runtime's GetContainerEvents stream and
 * relists only as a slow safety net. On UNIMPLEMENTED, or after 5 broken
 * streams, it hands over to the generic PLEG at its normal period.
 */
export class EventedPleg implements Pleg {
  private stream?: ContainerEventStream;
  private failures = 0;
  private fellBack = false;
  private running = false;
  private reopen?: TimerHandle;
  private readonly cacheUpdater: GlobalCacheUpdater;
  private readonly listeners = new Set<(e: PodLifecycleEvent) => void>();
  private unwatchGeneric?: () => void;
  private handedOver?: Pleg;

  /** The generic PLEG's own period, restored when it takes over. */
  private readonly genericPeriodMs: number;

  constructor(private readonly opts: EventedPlegOptions) {
    this.genericPeriodMs = opts.generic.relistPeriodMs;
    this.cacheUpdater = new GlobalCacheUpdater(opts.clock, opts.generic, () => this.running && !this.fellBack && this.stream !== undefined);
  }

  get cache(): PodCache {
    return this.opts.generic.cache;
  }

  /** The generic PLEG underneath (its relist is the safety net). */
  get generic(): GenericPleg {
    return this.opts.generic;
  }

  get mode(): 'evented' | 'generic' {
    return this.fellBack ? 'generic' : 'evented';
  }

  get source(): PlegSource {
    if (this.handedOver) return this.handedOver.source;
    return this.fellBack ? 'relist' : 'cri-events';
  }

  relist(): Promise<PodLifecycleEvent[]> {
    return this.opts.generic.relist();
  }

  watch(listener: (e: PodLifecycleEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  healthy(): { ok: boolean; message: string } {
    return this.opts.generic.healthy();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // Relist events reach our listeners too: the safety net, and the fallback.
    this.unwatchGeneric = this.opts.generic.watch((e) => this.emit(e));
    this.opts.generic.setRelistPeriod(EVENTED_RELIST_PERIOD_MS, EVENTED_RELIST_THRESHOLD_MS, true);
    this.opts.generic.start();
    this.open();
    this.cacheUpdater.start();
  }

  stop(): void {
    this.running = false;
    this.stream?.cancel();
    this.stream = undefined;
    if (this.reopen) this.opts.clock.clearTimeout(this.reopen);
    this.cacheUpdater.stop();
    this.unwatchGeneric?.();
    this.handedOver?.stop();
    this.opts.generic.stop();
  }

  private emit(e: PodLifecycleEvent): void {
    for (const l of this.listeners) l(e);
  }

  private open(): void {
    if (!this.running || this.fellBack) return;
    this.stream = this.opts.runtime.getContainerEvents({
      onEvent: (event) => {
        this.failures = 0;
        this.handle(event);
      },
      onError: (err) => this.broken(err),
      onEnd: () => this.broken(undefined),
    });
  }

  private broken(err: CriError | undefined): void {
    if (!this.running || this.fellBack) return;
    this.stream = undefined;
    if (err && isUnimplemented(err) && this.opts.next) return this.handOver(this.opts.next);
    if (err && isUnimplemented(err)) return this.fallBack(`the runtime does not implement GetContainerEvents`);
    this.failures++;
    if (this.failures >= MAX_STREAM_FAILURES) return this.fallBack(`the container event stream broke ${this.failures} times`);
    // Every stream error forces a relist, so nothing is missed while it was down.
    void this.opts.generic.relist().catch(() => undefined);
    this.reopen = this.opts.clock.setTimeout(() => this.open(), 1000);
  }

  /** The next source takes over; its events reach our listeners through the generic PLEG's. */
  private handOver(next: Pleg): void {
    this.fellBack = true;
    this.cacheUpdater.stop();
    this.handedOver = next;
    this.opts.onFallback?.(
      `the runtime does not implement GetContainerEvents: ` +
        `using ${next.source === 'containerd-events' ? "containerd's event service" : next.source}`,
    );
    next.start();
  }

  private fallBack(reason: string): void {
    this.fellBack = true;
    this.cacheUpdater.stop();
    this.opts.generic.setRelistPeriod(this.genericPeriodMs);
    this.opts.onFallback?.(`${reason}: using the generic PLEG (relist every ${this.genericPeriodMs / 1000} s)`);
  }

  /**
   * One event refreshes its pod through the generic PLEG (one status read, diffed against the
   * relist's state): the events come out of that diff, so the safety-net relist, or the one after a
   * stream break, does not report the same change again.
   */
  private handle(event: T.ContainerEventResponse): void {
    const sandbox = event.podSandboxStatus;
    const uid = sandbox?.labels?.[L.POD_UID_LABEL] ?? sandbox?.metadata?.uid;
    if (!uid || !this.opts.generic.selects(sandbox?.labels)) return;
    // The event carries the pod's sandbox and every container with their states: when that is all
    // known already (a late event, overtaken by a relist or an earlier read), there is nothing to
    // read, and a read it waits for is skipped if a read begun since told the PLEG as much.
    // (CONTAINER_UNKNOWN is no step in a container's progress, and a deletion no state: always read.)
    let news: PodObjectState[] | undefined;
    if (
      event.containerEventType !== 'CONTAINER_DELETED_EVENT' &&
      sandbox &&
      !event.containersStatuses.some((c) => c.state === 'CONTAINER_UNKNOWN')
    ) {
      news = [
        { id: sandbox.id, state: sandbox.state === 'SANDBOX_READY' ? 'running' : 'exited' },
        ...event.containersStatuses.map((c) => ({ id: c.id, state: containerState(c.state) })),
      ];
      if (this.opts.generic.knows(uid, news)) return;
    }
    // Only what the refresh needs waits with it: an event (the pod's full statuses) kept reachable until
    // its turn came held some 30,000 of them at once while 5,000 pods started.
    this.opts.generic.refreshPod(uid, sandbox?.metadata?.name ?? '', sandbox?.metadata?.namespace ?? '', news).catch(() => {
      // The next relist refreshes it.
    });
  }
}
