import type { Clock, TimerHandle } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import { errorMessage } from '../errors.js';
import * as L from '../kuberuntime/labels.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../container/types.js';
import type { ContainerExit, EarlyExits } from '../container/early-exits.js';
import { PodCache } from './cache.js';
import { PodRecords } from './records.js';
import { RefreshQueue, RELIST_INSPECT_CONCURRENCY } from './refresh-queue.js';
import {
  containerPlegState,
  containerState,
  eventsFor,
  RELIST_PERIOD_MS,
  RELIST_THRESHOLD_MS,
  sandboxPlegState,
  showsAsListed,
  withEarlyExits,
  type PlegSource,
  type PlegState,
  type PodLifecycleEvent,
  type PodObjectState,
  type Seen,
} from './events.js';
import type { RuntimeCache } from '../container/runtime-cache.js';
import { forEachLimited } from '../util/concurrency.js';

export {
  containerState,
  eventsFor,
  RELIST_PERIOD_MS,
  RELIST_THRESHOLD_MS,
  type PlegSource,
  type PlegState,
  type PodLifecycleEvent,
  type PodLifecycleEventType,
  type PodObjectState,
} from './events.js';
export { RELIST_INSPECT_CONCURRENCY } from './refresh-queue.js';

export interface GenericPlegOptions {
  runtime: RuntimeService;
  clock: Clock;
  /** Reads one pod's full status (the kubelet's GetPodStatus); called only for pods that changed. */
  inspect: (uid: string, name: string, namespace: string) => Promise<RuntimePodStatus>;
  relistPeriodMs?: number;
  /** Which sandboxes and containers to watch; podctl's own by default. */
  labelSelector?: Record<string, string>;
  /** Given each relist's lists (with podctl's own selector only), for housekeeping to reuse. */
  runtimeCache?: RuntimeCache;
  /** Exits known from runtime events before the CRI records them; shared with what inspect reads through. */
  earlyExits?: EarlyExits;
  /** The pod cache to fill (the kubelet's, which its own reads set too); a new one by default. */
  cache?: PodCache;
  /** A container's status once it exited as an event says (the status reader's words: reason, termination message). */
  exitedStatus?: (c: RuntimeContainerStatus, exit: ContainerExit) => RuntimeContainerStatus;
  onError?: (err: unknown) => void;
  /** After each relist: its duration, and the time since the previous one started. */
  onRelist?: (durationMs: number, intervalMs: number | undefined) => void;
}

/**
 * The generic PLEG: relists sandboxes and containers, turns the differences
 * into pod lifecycle events and refreshes the pod cache for the pods that
 * changed. A relist costs two list calls plus status calls for changed pods
 * only, whatever the number of pods.
 */
export class GenericPleg {
  readonly cache: PodCache;
  readonly source: PlegSource = 'relist';
  private readonly records = new PodRecords();
  private readonly previous = this.records.previous;
  private readonly byPod = this.records.byPod;
  /** Turns of pod refreshes under way (0 or 1). */
  /** Relists so far: marks what each one saw. */
  private generation = 0;
  /** Pods whose inspection failed: retried on the next relist. */
  private reinspect = new Map<string, { name: string; namespace: string }>();
  private listeners = new Set<(e: PodLifecycleEvent) => void>();
  private timer?: TimerHandle;
  private stopped = true;
  private relisting = false;
  /** Relists and one-pod refreshes run one at a time: each diffs against the state the other left. */
  private turn: Promise<unknown> = Promise.resolve();
  /** Pod refreshes waiting for their turn, and the turn under way. */
  private readonly refreshes = new RefreshQueue({
    schedule: (turn) => void this.exclusive(turn),
    // Events whose news the PLEG knows by now (a read begun after they were sent saw them) read nothing.
    read: (uid, r) => (r.news && this.knows(uid, r.news) ? Promise.resolve([]) : this.refreshOne(uid, r.name, r.namespace)),
  });
  private relistStarted?: number;
  private previousRelistStart?: number;
  lastRelistAt?: number;
  lastRelistDurationMs?: number;
  relistPeriodMs: number;
  relistThresholdMs = RELIST_THRESHOLD_MS;

  constructor(private readonly opts: GenericPlegOptions) {
    this.relistPeriodMs = opts.relistPeriodMs ?? RELIST_PERIOD_MS;
    this.cache = opts.cache ?? new PodCache();
    this.cache.trackAbsence((uid) => this.holdsNothingOf(uid));
  }

  watch(listener: (e: PodLifecycleEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The evented PLEGs slow the relist to a safety net, and restore it when they fall back; the
   * health threshold moves with it (the kubelet's 10 minutes beside a 300 s relist), or a PLEG
   * that relists every 300 s would be unhealthy after 3 minutes of quiet. The runtime cache learns
   * whether every change comes as an event (see EVENTED_RUNTIME_CACHE_REFRESH_PERIOD_MS).
   */
  setRelistPeriod(ms: number, thresholdMs = RELIST_THRESHOLD_MS, eventDriven = false): void {
    this.relistPeriodMs = ms;
    this.relistThresholdMs = thresholdMs;
    this.opts.runtimeCache?.setEventDriven(eventDriven);
    // A relist under way schedules the next one itself, with the new period.
    if (!this.stopped && !this.relisting) {
      if (this.timer) this.opts.clock.clearTimeout(this.timer);
      this.schedule(ms);
    }
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Unhealthy when no relist has completed for 3 minutes (relistThreshold; 10 minutes under an evented PLEG). */
  healthy(): { ok: boolean; message: string } {
    const now = this.opts.clock.now();
    const last = this.lastRelistAt ?? this.relistStarted;
    if (last === undefined) return { ok: true, message: 'PLEG has not relisted yet' };
    const since = now - last;
    const threshold = `threshold is ${this.relistThresholdMs / 1000} s`;
    if (since > this.relistThresholdMs)
      return { ok: false, message: `PLEG is not healthy: last relist completed ${Math.round(since / 1000)} s ago; ${threshold}` };
    return { ok: true, message: `PLEG relisted ${Math.round(since)} ms ago` };
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      void this.relist()
        .catch((err) => this.opts.onError?.(err))
        .finally(() => this.schedule(this.relistPeriodMs));
    }, ms);
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => undefined);
    return run;
  }

  /** The pod a sandbox or container belongs to, as the last relist or refresh saw it. */
  podOf(id: string): { uid: string; name: string; namespace: string } | undefined {
    return this.records.podOf(id);
  }

  /** The state a sandbox or container was last seen in; undefined when it is not known (or gone). */
  stateOf(id: string): PlegState | undefined {
    return this.records.stateOf(id);
  }

  /** Whether a runtime event's view of a pod is known already, or overtaken (see PodRecords.knows). */
  knows(uid: string, objects: readonly PodObjectState[]): boolean {
    return this.records.knows(uid, objects);
  }

  /**
   * An exit a runtime event reported before the CRI recorded it, for a container last seen running:
   * ContainerDied at once, and the pod's cached status patched from the event, without waiting for
   * a read. Until the CRI agrees, relists and inspections see the container exited too (the status
   * reader applies the same exits). False when not applied: not a container seen running with a
   * cached status, or no store to keep the exit in.
   */
  applyExit(containerId: string, exit: ContainerExit): boolean {
    const seen = this.previous.get(containerId);
    const store = this.opts.earlyExits;
    if (!store || seen?.state !== 'running' || seen.containerName === undefined) return false;
    const cached = this.cache.get(seen.uid);
    if (!cached || ![...cached.containers, ...(cached.ephemeral ?? [])].some((c) => c.id === containerId)) return false;
    store.note(containerId, exit);
    const time = this.opts.clock.now();
    this.cache.set(seen.uid, this.withEarlyExits(cached, time), time);
    const rec: Seen = { ...seen, state: 'exited' };
    this.records.see(containerId, rec);
    const e: PodLifecycleEvent = {
      type: 'ContainerDied',
      id: rec.uid,
      data: containerId,
      namespace: rec.namespace,
      name: rec.name,
      containerName: rec.containerName,
      time,
    };
    for (const l of this.listeners) l(e);
    return true;
  }

  /** A pod's status with the exits still ahead of the CRI applied (a read that raced the event). */
  private withEarlyExits(status: RuntimePodStatus, time = status.timestamp): RuntimePodStatus {
    return withEarlyExits(status, this.opts.earlyExits, this.opts.exitedStatus, time);
  }

  /** Whether a noted exit is still ahead of the CRI. */
  exitPending(containerId: string): boolean {
    return this.opts.earlyExits?.pending(containerId) ?? false;
  }

  /** The kubelet's PodSync: the pod changed in a way no single container event says. */
  podSync(uid: string, name: string, namespace: string): void {
    const e: PodLifecycleEvent = { type: 'PodSync', id: uid, data: '', namespace, name, time: this.opts.clock.now() };
    for (const l of this.listeners) l(e);
  }

  /** Whether labels match the PLEG's selector (podctl's own by default). */
  selects(labels: Record<string, string> | undefined): boolean {
    const selector = this.opts.labelSelector ?? { [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
    return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
  }

  /**
   * One pod's status read, diffed against what the PLEG last saw of that pod: the events of what
   * changed, the cache refreshed. A runtime event's way in (the containerd-events PLEG); it shares
   * the relist's state, so a change either of them reported is not reported again by the other.
   */
  refreshPod(uid: string, name: string, namespace: string, news?: readonly PodObjectState[]): Promise<PodLifecycleEvent[]> {
    return this.refreshes.request(uid, name, namespace, news);
  }

  private async refreshOne(uid: string, name: string, namespace: string): Promise<PodLifecycleEvent[]> {
    const time = this.opts.clock.now();
    const status = this.withEarlyExits(await this.opts.inspect(uid, name, namespace));
    const current = new Map<string, Seen>();
    for (const s of status.sandboxes) current.set(s.id, { uid, name, namespace, state: sandboxPlegState(s) });
    for (const c of [...status.containers, ...(status.ephemeral ?? [])])
      current.set(c.id, { uid, name, namespace, containerName: c.name, state: containerPlegState(c) });
    const events: PodLifecycleEvent[] = [];
    const changed = new Map<string, { name: string; namespace: string }>();
    for (const id of [...(this.byPod.get(uid) ?? [])]) {
      const before = this.previous.get(id);
      if (before && !current.has(id)) {
        this.collect(events, changed, id, before, before.state, 'non-existent', time);
        this.records.forget(id);
      }
    }
    for (const [id, after] of current) {
      const before = this.previous.get(id);
      this.collect(
        events,
        changed,
        id,
        { ...after, containerName: after.containerName ?? before?.containerName },
        before?.state ?? 'non-existent',
        after.state,
        time,
      );
      if (!before || before.state !== after.state) this.records.see(id, after);
    }
    if (current.size > 0) this.cache.set(uid, status, time);
    else this.cache.delete(uid);
    for (const e of events) for (const l of this.listeners) l(e);
    return events;
  }

  /**
   * The evented PLEG's updateGlobalCache: while its stream is up every change reaches it as an
   * event, so with no pod refresh waiting or under way the whole cache is current as of `time`
   * (a periodic resync then reads no runtime). False when a refresh is outstanding.
   */
  markCacheCurrent(time: number): boolean {
    // Before a first relist has read every pod, the cache is not yet the runtime's view: a pod missing
    // from it may still exist (holdsNothingOf trusts a missing entry only once the cache is current).
    if (this.lastRelistAt === undefined || !this.refreshes.idle) return false;
    this.cache.updateTime(time);
    return true;
  }

  /**
   * Whether the runtime holds nothing of this pod as far as the PLEG knows: a relist has read every pod,
   * the cache is current (a relist or an event stream's mark), and the PLEG has seen no sandbox or
   * container of the pod, nor failed to inspect it, nor has a read of it waiting (an event named it).
   * The kubelet's GetNewerThan with no last sync time answers such a pod with an empty status; a pod
   * whose inspection failed gets the error instead.
   */
  holdsNothingOf(uid: string): boolean {
    return (
      this.lastRelistAt !== undefined &&
      this.cache.currentAsOf() > 0 &&
      !this.cache.get(uid) &&
      !this.byPod.has(uid) &&
      !this.reinspect.has(uid) &&
      !this.refreshes.waiting(uid)
    );
  }

  /** One relist: list, compare with the last one, inspect what changed, emit the events. */
  relist(): Promise<PodLifecycleEvent[]> {
    if (this.relisting) return Promise.resolve([]);
    this.relisting = true;
    return this.exclusive(() => this.relistNow());
  }

  private async relistNow(): Promise<PodLifecycleEvent[]> {
    const started = this.opts.clock.now();
    this.relistStarted ??= started;
    try {
      const selector = this.opts.labelSelector ?? { [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
      const [sandboxes, containers] = await Promise.all([
        this.opts.runtime.listPodSandboxSummaries({ labelSelector: selector }),
        this.opts.runtime.listContainerSummaries({ labelSelector: selector }),
      ]);
      if (!this.opts.labelSelector) this.opts.runtimeCache?.update({ sandboxes, containers, at: started });
      // At steady state nearly every record is as it was: the map of what was seen is updated in
      // place (records marked with this relist's generation), with no map, set or record allocated
      // per sandbox and container: at 15,000 of them a second the garbage collector paid for that.
      const gen = ++this.generation;
      const previous = this.previous;
      const changes: PodLifecycleEvent[] = [];
      const changedPods = new Map<string, { name: string; namespace: string }>(this.reinspect);
      const visit = (id: string, uid: string, state: PlegState, make: () => Seen) => {
        const before = previous.get(id);
        if (before && before.gen === gen) return;
        if (before && before.uid === uid && before.state === state) {
          before.gen = gen;
          return;
        }
        const after = make();
        after.gen = gen;
        this.records.see(id, after);
        this.collect(changes, changedPods, id, after, before?.state ?? 'non-existent', state, started);
      };
      for (const s of sandboxes) {
        const uid = s.labels[L.POD_UID_LABEL] ?? s.metadata?.uid;
        if (!uid) continue;
        const state = s.state === 'SANDBOX_READY' ? 'running' : 'exited';
        visit(s.id, uid, state, () => ({ uid, namespace: s.metadata?.namespace ?? '', name: s.metadata?.name ?? '', state }));
      }
      const early = this.opts.earlyExits?.size ? this.opts.earlyExits : undefined;
      for (const c of containers) {
        const uid = c.labels[L.POD_UID_LABEL];
        if (!uid) continue;
        let state = containerState(c.state);
        if (early?.ahead(c.id, state === 'running')) state = 'exited';
        visit(c.id, uid, state, () => ({
          uid,
          namespace: c.labels[L.POD_NAMESPACE_LABEL] ?? '',
          name: c.labels[L.POD_NAME_LABEL] ?? '',
          containerName: c.labels[L.CONTAINER_NAME_LABEL] ?? c.metadata?.name,
          state,
        }));
      }
      // What no list has any more is gone; those events come first, as they happened first.
      const events: PodLifecycleEvent[] = [];
      for (const [id, before] of previous) {
        if (before.gen === gen) continue;
        this.records.forget(id);
        this.collect(events, changedPods, id, before, before.state, 'non-existent', started);
      }
      events.push(...changes);
      // A changed pod with nothing left in the lists leaves the cache instead of being read.
      const livePods = new Set<string>();
      if (changedPods.size > 0) for (const seen of previous.values()) if (changedPods.has(seen.uid)) livePods.add(seen.uid);
      // Pods whose only news is starts may take the cache's newer read (see readAsListed); an exit
      // is always read, as what the runtime records of it can grow after the first read (an OOM kill's reason).
      const readAnyway = new Set(this.reinspect.keys());
      for (const e of events) if (e.type !== 'ContainerStarted') readAnyway.add(e.id);

      // Refresh the cache only for pods that changed: O(changes) status calls.
      this.reinspect = new Map();
      // A bounded pool: thousands of changed pods inspected all at once flood the runtime's connection
      // until no call completes (5,000 new pods stalled a relist for good); the kubelet inspects one at a time.
      await forEachLimited([...changedPods], RELIST_INSPECT_CONCURRENCY, async ([uid, pod]) => {
        if (!livePods.has(uid)) {
          this.cache.delete(uid);
          return;
        }
        const known = readAnyway.has(uid) ? undefined : this.readAsListed(uid);
        if (known) {
          this.cache.set(uid, this.withEarlyExits(known), Math.max(started, this.cache.modifiedAt(uid) ?? 0));
          return;
        }
        try {
          // As the kubelet's updateCache: the entry is as fresh as the moment its read began, not the relist's
          // start (a sync that ended in between then takes it instead of reading the pod itself).
          const readAt = this.opts.clock.now();
          this.cache.setIfNewer(uid, this.withEarlyExits(await this.opts.inspect(uid, pod.name, pod.namespace)), readAt);
        } catch (err) {
          this.reinspect.set(uid, pod);
          this.opts.onError?.(new Error(`PLEG: cannot inspect pod ${pod.namespace}/${pod.name}: ${errorMessage(err)}`));
        }
      });
      this.cache.updateTime(started);
      this.lastRelistAt = this.opts.clock.now();
      this.lastRelistDurationMs = this.lastRelistAt - started;
      this.opts.onRelist?.(
        this.lastRelistDurationMs,
        this.previousRelistStart === undefined ? undefined : started - this.previousRelistStart,
      );
      this.previousRelistStart = started;
      for (const e of events) for (const l of this.listeners) l(e);
      return events;
    } finally {
      this.relisting = false;
    }
  }

  /**
   * The cache's entry when it shows exactly what this relist's lists show of the pod (the same
   * sandboxes and containers, in the same states): a pod just started by a sync was read by it
   * after its steps, into the cache, and reading it again here cost five CRI calls per pod (5,000
   * pods starting: 25,000 calls). The lists were taken after the relist began, so the read holds as of then.
   */
  private readAsListed(uid: string): RuntimePodStatus | undefined {
    const latest = this.cache.get(uid);
    const listed = this.byPod.get(uid);
    return latest && listed && showsAsListed(latest, listed, this.previous) ? latest : undefined;
  }

  private collect(
    events: PodLifecycleEvent[],
    changedPods: Map<string, { name: string; namespace: string }>,
    id: string,
    rec: Seen,
    oldState: PlegState,
    newState: PlegState,
    time: number,
  ): void {
    const types = eventsFor(oldState, newState);
    if (types.length === 0) return;
    changedPods.set(rec.uid, { name: rec.name, namespace: rec.namespace });
    for (const type of types) {
      events.push({ type, id: rec.uid, data: id, namespace: rec.namespace, name: rec.name, containerName: rec.containerName, time });
    }
  }
}
