import type { Clock, TimerHandle } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import type { RuntimeContainerStatus } from '../container/types.js';
import type { ContainerdEvent, ContainerdEventSource } from '../cri/containerd-events.js';
import { isNotFound, isUnimplemented, type CriError } from '../cri/errors.js';
import { errorMessage } from '../errors.js';
import * as L from '../kuberuntime/labels.js';
import type { PodCache } from './cache.js';
import type { GenericPleg, PlegSource, PlegState, PodLifecycleEvent } from './generic.js';
import { EVENTED_RELIST_PERIOD_MS, EVENTED_RELIST_THRESHOLD_MS, GlobalCacheUpdater, MAX_STREAM_FAILURES, type Pleg } from './evented.js';

/** Reconnect backoff after a broken stream: 1 s, doubling, at most 30 s. */
export const RECONNECT_INITIAL_MS = 1000;
export const RECONNECT_MAX_MS = 30_000;
/** A subscription that has not failed this long is taken as open. */
export const OPEN_GRACE_MS = 1000;
/** A stream up this long without breaking clears the count of breaks. */
export const STABLE_STREAM_MS = 60_000;
/**
 * containerd publishes a task's event before the CRI plugin has recorded it (on a TaskExit, the
 * CRI deletes the task and only then records the exit, so ContainerStatus says running for tens
 * of milliseconds): the status is read again after these delays until it shows what the event
 * says, then left to the next event or relist.
 */
export const REREAD_DELAYS_MS = [10, 10, 20, 20, 40, 100, 200, 500, 1000, 2000];
/**
 * The CRI records a task's exit once it has deleted the task, and containerd publishes TaskDelete
 * as it does: the reads that settle an exit wait for that event (in a burst of exits the CRI lags
 * by up to seconds, and polling it from the exit cost a dozen pod reads per exit, CPU the next
 * exit's delivery waited for). Should no TaskDelete come, the reads begin after this.
 */
export const TASK_DELETE_WAIT_MS = 2000;
/** After TaskDelete the CRI still writes its record (tens of milliseconds here): the first read waits this long. */
export const AFTER_DELETE_READ_MS = 50;

/** A task's exit as the CRI shows it once recorded: exited, or gone already. */
const exitRecorded = (s: PlegState | undefined): boolean => s === 'exited' || s === undefined;

/** An exit waiting for its task's TaskDelete before its pod is read. */
interface AwaitingDelete {
  pod: { uid: string; name: string; namespace: string };
  /** The container as the event reported it, to compare with what the CRI records. */
  first: RuntimeContainerStatus | undefined;
  timer: TimerHandle;
}

/** What each topic says the container's state now is (undefined: no expectation). */
function expected(event: ContainerdEvent): ((state: PlegState | undefined) => boolean) | undefined {
  switch (event.topic) {
    case '/tasks/start':
      return (s) => s === 'running' || s === 'exited';
    case '/tasks/exit':
      return exitRecorded;
    case '/containers/delete':
      return (s) => s === undefined;
    default:
      return undefined;
  }
}

export interface ContainerdPlegOptions {
  runtime: RuntimeService;
  clock: Clock;
  /** The generic PLEG: its state and cache, the safety-net relist, and the fallback. */
  generic: GenericPleg;
  /** Opens containerd's event service on the runtime's socket. */
  events: ContainerdEventSource;
  /** Said once, when this PLEG gives way to the generic one. */
  onFallback?: (reason: string) => void;
  onError?: (err: unknown) => void;
}

/**
 * A PLEG on containerd's own event service (Events/Subscribe), for a containerd whose CRI does not
 * implement GetContainerEvents (1.6). Each task or container event refreshes the one pod it
 * belongs to (found through the relist's state, or the CRI for a container new since the last
 * relist) and the events come out of that pod's diff, as a relist's would. It relists every
 * 300 s as a safety net, and once after each reconnect; a stream that cannot be opened, or breaks
 * 5 times in a row, hands over to the generic PLEG at its own period.
 */
export class ContainerdPleg implements Pleg {
  private stream?: { cancel(): void };
  private failures = 0;
  private fellBack = false;
  private running = false;
  /** The stream has worked at least once: a break is then retried, not a reason to fall back. */
  private everOpened = false;
  private timers = new Set<TimerHandle>();
  private openTimer?: TimerHandle;
  private stableTimer?: TimerHandle;
  /** The current subscription counts as open, and the relist after a reconnect (if any) is done. */
  private caughtUp = false;
  /** Events whose handling (finding the pod, reading it until the CRI agrees) is not over. */
  private handling = 0;
  private readonly cacheUpdater: GlobalCacheUpdater;
  /** Containers and sandboxes found not to be ours (another client's, or not podctl's). */
  private readonly foreign = new Set<string>();
  /** Containers containerd reported OOM-killed (TaskOOM comes before their TaskExit). */
  private readonly oomKilled = new Set<string>();
  /** Exits whose settling reads wait for the task's TaskDelete (see TASK_DELETE_WAIT_MS). */
  private readonly awaitingDelete = new Map<string, AwaitingDelete>();
  private readonly genericPeriodMs: number;

  constructor(private readonly opts: ContainerdPlegOptions) {
    this.genericPeriodMs = opts.generic.relistPeriodMs;
    // An event being handled may still be finding its pod or waiting for the CRI to record it: the cache
    // is not current for that pod until its refresh, which the generic PLEG then counts as outstanding.
    this.cacheUpdater = new GlobalCacheUpdater(
      opts.clock,
      opts.generic,
      () => this.running && !this.fellBack && this.caughtUp && this.handling === 0,
    );
  }

  get cache(): PodCache {
    return this.opts.generic.cache;
  }

  get source(): PlegSource {
    return this.fellBack ? 'relist' : 'containerd-events';
  }

  watch(listener: (e: PodLifecycleEvent) => void): () => void {
    return this.opts.generic.watch(listener);
  }

  relist(): Promise<PodLifecycleEvent[]> {
    return this.opts.generic.relist();
  }

  healthy(): { ok: boolean; message: string } {
    return this.opts.generic.healthy();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.opts.generic.setRelistPeriod(EVENTED_RELIST_PERIOD_MS, EVENTED_RELIST_THRESHOLD_MS, true);
    this.opts.generic.start();
    this.open();
    this.cacheUpdater.start();
  }

  stop(): void {
    this.running = false;
    this.cacheUpdater.stop();
    this.close();
    for (const t of this.timers) this.opts.clock.clearTimeout(t);
    this.timers.clear();
    this.awaitingDelete.clear();
    this.opts.generic.stop();
    // The event source is this PLEG's own.
    this.opts.events.close();
  }

  private later(ms: number, fn: () => void): TimerHandle {
    const t = this.opts.clock.setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  private close(): void {
    this.caughtUp = false;
    this.stream?.cancel();
    this.stream = undefined;
    for (const t of [this.openTimer, this.stableTimer]) if (t) this.opts.clock.clearTimeout(t);
    this.openTimer = this.stableTimer = undefined;
  }

  private open(): void {
    if (!this.running || this.fellBack) return;
    const reopened = this.everOpened;
    let opened = false;
    const markOpen = () => {
      if (opened) return;
      opened = true;
      this.everOpened = true;
      // Subscribed first, relisted after: whatever happened while the stream was down is seen.
      if (!reopened) this.caughtUp = true;
      else {
        void this.opts.generic
          .relist()
          .then(() => stream === this.stream && (this.caughtUp = true))
          .catch((err) => this.opts.onError?.(err));
      }
      this.stableTimer = this.later(STABLE_STREAM_MS, () => (this.failures = 0));
    };
    const stream = this.opts.events.subscribe({
      onEvent: (event) => {
        if (stream !== this.stream) return;
        markOpen();
        this.handling++;
        void this.handle(event)
          .catch((err) => this.opts.onError?.(err))
          .finally(() => this.handling--);
      },
      onError: (err) => stream === this.stream && this.broken(err, opened),
      onEnd: () => stream === this.stream && this.broken(undefined, opened),
    });
    this.stream = stream;
    this.openTimer = this.later(OPEN_GRACE_MS, () => stream === this.stream && markOpen());
  }

  private broken(err: CriError | undefined, opened: boolean): void {
    if (!this.running || this.fellBack) return;
    this.close();
    const why = err ? errorMessage(err) : 'the stream ended';
    if (err && isUnimplemented(err)) return this.fallBack(`the runtime has no containerd event service`);
    if (!this.everOpened && !opened) return this.fallBack(`containerd's event stream cannot be opened (${why})`);
    this.failures++;
    if (this.failures >= MAX_STREAM_FAILURES) return this.fallBack(`containerd's event stream broke ${this.failures} times (${why})`);
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_INITIAL_MS * 2 ** (this.failures - 1));
    this.later(delay, () => this.open());
  }

  private fallBack(reason: string): void {
    this.fellBack = true;
    this.cacheUpdater.stop();
    this.close();
    this.opts.generic.setRelistPeriod(this.genericPeriodMs);
    void this.opts.generic.relist().catch((err) => this.opts.onError?.(err));
    this.opts.onFallback?.(`${reason}: using the generic PLEG (relist every ${this.genericPeriodMs / 1000} s)`);
  }

  /** The pod a container or sandbox belongs to: the relist's state, else one CRI status read. */
  private async podOf(id: string): Promise<{ uid: string; name: string; namespace: string } | undefined> {
    const known = this.opts.generic.podOf(id);
    if (known || this.foreign.has(id)) return known;
    const { runtime, generic } = this.opts;
    try {
      const c = (await runtime.containerStatus(id)).status;
      const labels = c?.labels ?? {};
      const uid = labels[L.POD_UID_LABEL];
      if (uid && generic.selects(labels))
        return { uid, name: labels[L.POD_NAME_LABEL] ?? '', namespace: labels[L.POD_NAMESPACE_LABEL] ?? '' };
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        const s = (await runtime.podSandboxStatus(id)).status;
        const uid = s?.labels?.[L.POD_UID_LABEL] ?? s?.metadata?.uid;
        if (uid && generic.selects(s?.labels)) return { uid, name: s?.metadata?.name ?? '', namespace: s?.metadata?.namespace ?? '' };
      } catch (err2) {
        // Not yet known to the CRI (containerd announces a container before the CRI has recorded
        // it), or gone: nothing to refresh, and not remembered as foreign.
        if (!isNotFound(err2)) throw err2;
        return undefined;
      }
    }
    if (this.foreign.size > 10_000) this.foreign.clear();
    this.foreign.add(id);
    return undefined;
  }

  private async handle(event: ContainerdEvent): Promise<void> {
    // An exec's exit (a probe's ExecSync, podctl exec) says nothing of the container.
    if (event.execId) return;
    if (event.topic === '/tasks/oom') {
      if (this.oomKilled.size > 10_000) this.oomKilled.clear();
      this.oomKilled.add(event.containerId);
      return;
    }
    const { generic } = this.opts;
    const id = event.containerId;
    if (event.topic === '/tasks/delete') {
      const waiting = this.awaitingDelete.get(id);
      if (waiting) {
        this.opts.clock.clearTimeout(waiting.timer);
        this.awaitingDelete.delete(id);
        return this.settle(id, waiting.pod, exitRecorded, waiting.first, AFTER_DELETE_READ_MS);
      }
      // The exit is settled already: the deletion changes nothing the CRI says.
      if (generic.stateOf(id) === 'exited' && !generic.exitPending(id)) return;
    }
    if (event.topic !== '/tasks/exit') {
      const pod = await this.podOf(id);
      return pod && this.settle(id, pod, expected(event), undefined);
    }
    const oom = this.oomKilled.delete(id);
    // TaskExit carries what ContainerDied needs: a container seen running is reported exited at once,
    // in the CRI's words, instead of after the CRI's lag of tens of milliseconds. Not an OOM kill:
    // the CRI may already hold that exit as Error, so its reason is waited for as before.
    const early =
      !oom &&
      generic.applyExit(id, {
        exitCode: event.exitStatus ?? 0,
        finishedAt: event.exitedAt ?? event.timestamp,
        reason: event.exitStatus ? 'Error' : 'Completed',
      });
    const first = early ? this.cachedContainer(generic.podOf(id)?.uid, id) : undefined;
    const pod = await this.podOf(id);
    if (!pod) return;
    if (oom) {
      await this.untilOomRecorded(id);
      return this.settle(id, pod, exitRecorded, undefined);
    }
    const previous = this.awaitingDelete.get(id);
    if (previous) this.opts.clock.clearTimeout(previous.timer);
    const timer = this.later(TASK_DELETE_WAIT_MS, () => {
      if (this.awaitingDelete.get(id) !== waiting) return;
      this.awaitingDelete.delete(id);
      void this.settle(id, pod, exitRecorded, first).catch((err) => this.opts.onError?.(err));
    });
    const waiting: AwaitingDelete = { pod, first, timer };
    this.awaitingDelete.set(id, waiting);
    // Reported from the event: reading now would find the CRI still saying running.
    if (early) return;
    // A sandbox, or a container not seen running: its death comes out of a read. One now (a late
    // event finds the CRI caught up); if the CRI still lags, the rest wait for TaskDelete.
    await generic.refreshPod(pod.uid, pod.name, pod.namespace);
    if (this.awaitingDelete.get(id) === waiting && exitRecorded(generic.stateOf(id)) && !generic.exitPending(id)) {
      this.opts.clock.clearTimeout(waiting.timer);
      this.awaitingDelete.delete(id);
    }
  }

  /**
   * Reads the pod until the CRI shows what the event said (`done`), at most REREAD_DELAYS_MS apart.
   * The CRI's record of an exit can say more than the event did (a TaskOOM after the TaskExit, a
   * fallback message from a log still flushing): then the pod is synced again, as the kubelet's PodSync.
   */
  private async settle(
    id: string,
    pod: { uid: string; name: string; namespace: string },
    done: ((state: PlegState | undefined) => boolean) | undefined,
    first: RuntimeContainerStatus | undefined,
    firstDelayMs = 0,
  ): Promise<void> {
    const { generic } = this.opts;
    if (firstDelayMs) await new Promise<void>((resolve) => this.later(firstDelayMs, resolve));
    for (let attempt = 0; ; attempt++) {
      if (!this.running || this.fellBack) return;
      await generic.refreshPod(pod.uid, pod.name, pod.namespace);
      const settled = !done || (done(generic.stateOf(id)) && !generic.exitPending(id));
      if (settled || attempt >= REREAD_DELAYS_MS.length) break;
      await new Promise<void>((resolve) => this.later(REREAD_DELAYS_MS[attempt]!, resolve));
    }
    const recorded = first ? this.cachedContainer(pod.uid, id) : undefined;
    if (
      first &&
      recorded &&
      (recorded.reason !== first.reason || recorded.message !== first.message || recorded.exitCode !== first.exitCode)
    ) {
      generic.podSync(pod.uid, pod.name, pod.namespace);
    }
  }

  private cachedContainer(uid: string | undefined, id: string): RuntimeContainerStatus | undefined {
    return uid === undefined ? undefined : this.opts.generic.cache.get(uid)?.containers.find((c) => c.id === id);
  }

  /**
   * The CRI plugin records an OOM kill's reason from the same TaskOOM, after TaskExit may reach us:
   * the pod's status is read only once ContainerStatus says OOMKilled (or the re-reads run out),
   * so that the first status of the exit has its reason, not Error.
   */
  private async untilOomRecorded(containerId: string): Promise<void> {
    // At most about 2 s, as the kubelet's own OOM settle.
    for (const delay of [0, ...REREAD_DELAYS_MS.slice(0, -1)]) {
      if (delay) await new Promise<void>((resolve) => this.later(delay, resolve));
      if (!this.running || this.fellBack) return;
      const c = (await this.opts.runtime.containerStatus(containerId).catch(() => undefined))?.status;
      // Gone, or the reason is there; still running (the CRI lags) or exited as Error: read again.
      if (!c || c.reason === 'OOMKilled') return;
    }
  }
}
