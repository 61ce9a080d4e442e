import type { IEphemeralContainer, IPod, IPodStatus } from 'kubernetes-models/v1';
import { errorMessage } from './errors.js';
import { podRef } from './kuberuntime/manager.js';
import { emptyPodStatus, type RuntimePodStatus } from './container/types.js';
import { activeDeadlineLeftMs, DEADLINE_EXCEEDED, EVICTED } from './status/generate.js';
import type { StatusManager } from './status/manager.js';
import { admitPod } from './admission.js';
import { podAsCreated, resizePending } from './kubelet-resize.js';
import type { ExpectedIds } from './kuberuntime/pod-status.js';
import { isTerminalPhase, statusSummary } from './status/phase.js';
import type { ProbeResultUpdate } from './prober/index.js';
import type { UpdateType } from './workers/pod-workers.js';
import type { HousekeepingResult, KubeletOptions, SyncHandler, SyncObserver } from './kubelet-types.js';
import type { KubeletParts } from './kubelet-parts.js';
import { podMeta } from './util/pod-key.js';

export type { HousekeepingResult, KubeletOptions, PodStatusChange, SyncHandler, SyncObserver } from './kubelet-types.js';

/**
 * The kubelet's Kubelet: it syncs pods (syncPod, syncTerminatingPod, syncTerminatedPod through their
 * workers) and does housekeeping, as the loop's SyncHandler. Its parts are made by the composition
 * root (node/compose.ts): the pod manager holds the desired pods, the PLEG's podCache their runtime
 * view, the statusManager their v1 status, the evictionManager the pods it evicted.
 */
export class Kubelet implements SyncHandler {
  readonly options: KubeletOptions;
  readonly podManager: KubeletParts['podManager'];
  /** The one runtime view of each pod: the PLEG and this kubelet's own reads set it. */
  readonly podCache: KubeletParts['podCache'];
  readonly statusManager: KubeletParts['statusManager'];
  readonly evictionManager: KubeletParts['evictionManager'];
  readonly runtimeManager: KubeletParts['runtimeManager'];
  readonly workers: KubeletParts['workers'];
  /** The kubelet's events per pod (what `describe` lists). */
  readonly events: KubeletParts['events'];
  /** Liveness, readiness and startup probes of the desired pods. */
  readonly prober: KubeletParts['prober'];
  /** ConfigMaps and Secrets delivered by the sources, for env and volumes. */
  readonly objects: KubeletParts['objects'];
  /** Removes unused images when the image filesystem fills up. */
  readonly imageGC: KubeletParts['imageGC'];
  /** Rotates the logs of this agent's running containers; the sync loop starts and stops it. */
  readonly containerLogs: KubeletParts['containerLogs'];
  /** The PLEG's last lists: housekeeping reads them while they are fresh instead of listing again. */
  readonly runtimeCache: KubeletParts['runtimeCache'];
  readonly clock: KubeletOptions['clock'];
  private readonly parts: KubeletParts;
  /** Pods admission rejected, by UID: held Failed with the reason, never synced, re-admitted on update. */
  private readonly rejected = new Map<string, { reason: string; message: string }>();
  /** When each pod was added, until it first ran (pod start latency). */
  private readonly addedAt = new Map<string, number>();
  /** When each pod being deleted was asked to go, with its grace period (the API server's deletionTimestamp is the sum). */
  private readonly deletions = new Map<string, { at: number; grace: number }>();
  private readonly observers = new Set<SyncObserver>();
  /** When each pod's last sync ended: the cache's data must be known good after it (GetNewerThan). */
  private readonly lastSyncEnd = new Map<string, number>();
  /** Pods whose next sync must read the runtime (what it waits for shows in no list). */
  private readonly readRuntimeNext = new Set<string>();
  /** Pods whose older dead containers go once their next sync ends. */
  private readonly pruneAfterSync = new Set<string>();

  constructor(parts: KubeletParts) {
    this.parts = parts;
    this.options = parts.options;
    this.clock = parts.options.clock;
    this.podManager = parts.podManager;
    this.podCache = parts.podCache;
    this.statusManager = parts.statusManager;
    this.evictionManager = parts.evictionManager;
    this.runtimeManager = parts.runtimeManager;
    this.workers = parts.workers;
    this.events = parts.events;
    this.prober = parts.prober;
    this.objects = parts.objects;
    this.imageGC = parts.imageGC;
    this.containerLogs = parts.containerLogs;
    this.runtimeCache = parts.runtimeCache;
  }

  /** The pod manager's desired pods, by UID. */
  get pods(): ReadonlyMap<string, IPod> {
    return this.podManager.pods;
  }

  observe(observer: SyncObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /** The pod workers' report of a failed sync, to the observers. */
  reportSyncError(pod: IPod, err: unknown): void {
    this.observers.forEach((o) => o.onSyncError?.(pod, err));
  }

  // SyncHandler -----------------------------------------------------------

  HandlePodAdditions(pods: IPod[], source?: string): void {
    for (const pod of pods) this.addOrUpdatePod(pod, source);
  }

  HandlePodUpdates(pods: IPod[], source?: string): void {
    for (const pod of pods) this.addOrUpdatePod(pod, source);
  }

  HandlePodRemoves(pods: IPod[]): void {
    for (const pod of pods) this.removePod(podMeta(pod).uid);
  }

  HandlePodReconcile(pods: IPod[]): void {
    for (const pod of pods) this.reconcilePod(pod);
  }

  HandlePodSyncs(uids: string[]): void {
    for (const uid of uids) this.syncPodSoon(uid);
  }

  HandlePodCleanups(): Promise<HousekeepingResult> {
    return this.housekeeping();
  }

  HandleProbeResult(u: ProbeResultUpdate): void {
    this.handleProbeResult(u);
  }

  isDesired(uid: string): boolean {
    return this.pods.has(uid);
  }

  desiredUIDs(): Iterable<string> {
    return this.pods.keys();
  }

  isSyncing(uid: string): boolean {
    return this.workers.state(uid) === 'syncing';
  }

  syncDue(): string[] {
    return this.workers.syncDue();
  }

  // -----------------------------------------------------------------------

  /**
   * ADD / UPDATE from a config source. A new pod (or a rejected one, edited) goes through the
   * kubelet's admission first, against the pods already admitted and not finished.
   */
  addOrUpdatePod(pod: IPod, source?: string): void {
    const uid = podMeta(pod).uid;
    const wasRejected = this.rejected.has(uid);
    const known = this.pods.has(uid) && !wasRejected;
    const admission = this.options.admission;
    if (!known && admission) {
      const result = admitPod(pod, this.activePods(uid), admission);
      if (!result.admit) {
        this.rejectPod(pod, result.reason, result.message, source);
        return;
      }
    }
    if (wasRejected) {
      this.rejected.delete(uid);
      this.statusManager.reset(uid);
    }
    if (!known) this.addedAt.set(uid, this.clock.now());
    this.podManager.addOrUpdatePod(pod, source);
    this.workers.updatePod({ type: known ? 'update' : 'create', pod });
    this.prober.addPod(pod);
  }

  /** The admitted pods not finished, but the one of that UID: what admission and a resize weigh a pod against. */
  private activePods(except: string): IPod[] {
    return [...this.pods]
      .filter(([u]) => u !== except && !this.rejected.has(u) && !isTerminalPhase(this.statusManager.get(u)?.phase))
      .map(([, p]) => p);
  }

  private setResizeCondition(
    uid: string,
    type: 'PodResizePending' | 'PodResizeInProgress',
    c: { reason: string; message: string } | undefined,
  ): void {
    if (c) this.statusManager.setCondition(uid, { type, status: 'True', ...c }, this.clock.now());
    else this.statusManager.clearCondition(uid, type);
  }

  /** The kubelet's rejectPod: held by the pod manager, Failed with the reason, an event; never run. */
  private rejectPod(pod: IPod, reason: string, message: string, source?: string): void {
    const uid = podMeta(pod).uid;
    this.podManager.addOrUpdatePod(pod, source);
    this.rejected.set(uid, { reason, message });
    const { status, previous } = this.statusManager.reject(pod, reason, message);
    if (previous?.reason !== reason || previous?.message !== status.message) {
      this.events.record(podRef(pod), 'Warning', reason, message);
      this.observers.forEach((o) => o.onStatus?.({ pod, status, previous }));
    }
    // The rejection is this version's final word: its status is the one to judge it by (observedGeneration).
    this.statusManager.synced(pod);
    this.observers.forEach((o) => o.onSynced?.(pod));
  }

  /** Why admission rejected the pod, while it is held rejected. */
  rejection(uid: string): { reason: string; message: string } | undefined {
    return this.rejected.get(uid);
  }

  /**
   * A pod condition set from outside (a readiness gate's, as a controller patches it through the
   * API server): recorded, and the status recomputed at once from the pod cache's runtime view.
   */
  setPodCondition(uid: string, c: Parameters<StatusManager['setCondition']>[1]): IPodStatus | undefined {
    const pod = this.pods.get(uid);
    if (!pod) return undefined;
    this.statusManager.setCondition(uid, c, this.clock.now());
    const runtime = this.podCache.get(uid);
    return runtime ? this.updateStatus(pod, runtime) : this.statusManager.get(uid);
  }

  /**
   * An ephemeral container added to a running pod (the API server's pods/ephemeralcontainers, which the
   * kubelet starts at its next SyncPod): started now in the pod's sandbox, then the pod read again so
   * that its status lists it. One of that name already in the runtime is left as it is.
   */
  async startEphemeralContainer(uid: string, container: IEphemeralContainer): Promise<IPodStatus | undefined> {
    const pod = this.pods.get(uid);
    if (!pod) return undefined;
    const before = await this.getRuntimeStatus(pod);
    if (!(before.ephemeral ?? []).some((c) => c.name === container.name)) {
      try {
        await this.runtimeManager.startEphemeralContainer(pod, container, before);
      } catch (err) {
        this.events.record(podRef(pod), 'Warning', 'Failed', errorMessage(err), container.name);
        throw err;
      } finally {
        this.readRuntimeNext.add(uid);
      }
    }
    return this.updateStatus(pod, await this.getRuntimeStatus(pod));
  }

  /** RECONCILE: only metadata or status moved; keep the new object, no sync needed. */
  reconcilePod(pod: IPod): void {
    this.podManager.reconcilePod(pod);
  }

  /** REMOVE / DELETE: terminate gracefully, then remove from the runtime. */
  removePod(uid: string, gracePeriodSeconds?: number): void {
    const pod = this.pods.get(uid);
    if (!pod) return;
    if (!this.deletions.has(uid))
      this.deletions.set(uid, { at: this.clock.now(), grace: gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30 });
    this.workers.updatePod({ type: 'kill', pod, gracePeriodSeconds });
  }

  /**
   * A pod being deleted: its metadata's deletionTimestamp and deletionGracePeriodSeconds as the API server sets them (kubectl's
   * Terminating).
   */
  deletionOf(uid: string): { deletionTimestamp: string; deletionGracePeriodSeconds: number } | undefined {
    const d = this.deletions.get(uid);
    return (
      d && {
        deletionTimestamp: new Date(d.at + d.grace * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        deletionGracePeriodSeconds: d.grace,
      }
    );
  }

  /**
   * The probe branch of syncLoopIteration: a liveness or startup failure
   * syncs the pod (SyncPod kills and restarts the container); readiness and
   * startup changes update the status at once, then sync.
   */
  handleProbeResult(u: ProbeResultUpdate): void {
    const pod = this.pods.get(u.uid);
    if (!pod) return;
    if (u.type !== 'liveness') {
      const runtime = this.podCache.get(u.uid);
      if (runtime) this.updateStatus(pod, runtime);
    }
    this.syncPodSoon(u.uid);
  }

  /** Asks the pod's lane for a sync (PLEG event, probe result). */
  syncPodSoon(uid: string): void {
    const pod = this.pods.get(uid);
    if (pod && this.workers.state(uid) === 'syncing') this.workers.updatePod({ type: 'sync', pod });
  }

  /** Reads the pod from the runtime, into the pod cache (as fresh as the moment the read began). */
  async getRuntimeStatus(pod: IPod, expected?: ExpectedIds): Promise<RuntimePodStatus> {
    const m = podMeta(pod);
    const readAt = this.clock.now();
    const status = await this.runtimeManager.getPodStatus(m.uid, m.name, m.namespace, { expected });
    if (status.sandboxes.length + status.containers.length + (status.ephemeral?.length ?? 0) > 0)
      this.podCache.setIfNewer(m.uid, status, readAt);
    else this.podCache.delete(m.uid);
    return status;
  }

  /**
   * The runtime view a sync starts from: the pod cache's GetNewerThan the pod's last sync (a relist
   * re-reads every pod whose sandboxes or containers changed, so an entry known good since is
   * still true), the runtime otherwise. A periodic resync or a sync after a PLEG event then makes no
   * CRI call at all. A pod never synced that the PLEG knows nothing of has nothing in the runtime,
   * and its first sync creates without listing; one with an entry left from a previous life is read.
   */
  private statusForSync(pod: IPod): Promise<RuntimePodStatus> {
    const m = podMeta(pod);
    const minTime = this.readRuntimeNext.delete(m.uid) ? Infinity : this.lastSyncEnd.get(m.uid);
    return this.podCache.getNewerThan(m.uid, minTime, {
      read: () => this.getRuntimeStatus(pod),
      empty: () => emptyPodStatus(m.uid, m.name, m.namespace, this.clock.now()),
    });
  }

  /** The status manager's status of the pod from this runtime view, with the observers told of a change. */
  updateStatus(pod: IPod, runtime: RuntimePodStatus): IPodStatus {
    const uid = podMeta(pod).uid;
    const { status, previous } = this.statusManager.generate(pod, runtime);
    const added = this.addedAt.get(uid);
    if (added !== undefined && (status.containerStatuses ?? []).length > 0 && status.containerStatuses!.every((c) => c.state?.running)) {
      this.options.metrics?.podStartDuration.observe((this.clock.now() - added) / 1000);
      this.addedAt.delete(uid);
    }
    if (!previous || statusSummary(previous) !== statusSummary(status)) {
      this.observers.forEach((o) => o.onStatus?.({ pod, status, previous }));
    }
    return status;
  }

  /** The kubelet's HandlePodCleanups (see PodCleanups), the eviction manager's pass at its end. */
  housekeeping(): Promise<HousekeepingResult> {
    return this.parts.cleanups.run();
  }

  /**
   * After a ContainerDied: keep only the newest dead instance of each of the pod's containers.
   * Done at the end of the pod's next sync (the event asks for one), in its worker lane: never
   * beside a sync of the same pod, and waitIdle covers it.
   */
  pruneDeadContainersSoon(uid: string): void {
    this.pruneAfterSync.add(uid);
  }

  /** SyncPod at the kubelet level: returns true once the pod is terminal. */
  async syncPod(pod: IPod, _type: UpdateType): Promise<boolean> {
    const uid = podMeta(pod).uid;
    try {
      return await this.syncPodOnce(pod);
    } finally {
      const status = this.podCache.get(uid);
      if (this.pruneAfterSync.delete(uid) && status) await this.runtimeManager.pruneAllDead(status).catch(() => undefined);
      this.lastSyncEnd.set(uid, this.clock.now());
      this.statusManager.synced(pod);
      this.observers.forEach((o) => o.onSynced?.(pod));
    }
  }

  private async syncPodOnce(pod: IPod): Promise<boolean> {
    const uid = podMeta(pod).uid;
    const before = await this.statusForSync(pod);
    const current = this.updateStatus(pod, before);
    if (current.reason === DEADLINE_EXCEEDED && before.containers.some((c) => c.state === 'running')) {
      this.events.record(podRef(pod), 'Normal', DEADLINE_EXCEEDED, current.message!);
    }
    // Past its deadline or evicted, a pod is killed whatever its restart policy says.
    const deadline = current.reason === DEADLINE_EXCEEDED || current.reason === EVICTED;
    if (deadline || (isTerminalPhase(current.phase) && !before.containers.some((c) => c.state === 'running'))) {
      // A finished pod keeps its containers for logs but releases its sandbox.
      this.prober.removePod(uid);
      await this.runtimeManager.killPod(pod, before);
      return true;
    }
    // In-place resize: a resize the node cannot hold now is pending, and the containers keep what they have.
    const pending = resizePending(pod, before, this.options.admission, () => this.activePods(uid));
    this.setResizeCondition(uid, 'PodResizePending', pending);
    const target = pending ? podAsCreated(pod, before.containers) : pod;
    const result = await this.runtimeManager.syncPod(target, before, this.prober);
    if (result.resizeRefused) this.setResizeCondition(uid, 'PodResizePending', { reason: 'Infeasible', message: result.resizeRefused });
    this.setResizeCondition(uid, 'PodResizeInProgress', result.resizeError ? { reason: 'Error', message: result.resizeError } : undefined);
    this.statusManager.recordWaiting(uid, result.waiting);
    this.observers.forEach((o) => o.onSyncResult?.(pod, result));
    // After steps, the runtime is read, the statuses of what the sync started from and what it made asked with the lists.
    const after = result.steps.length
      ? await this.getRuntimeStatus(pod, {
          sandboxIds: [...before.sandboxes.map((s) => s.id), ...(result.sandboxId ? [result.sandboxId] : [])],
          containerIds: [...before.containers, ...(before.ephemeral ?? [])].map((c) => c.id).concat(result.createdContainerIds),
        })
      : before;
    const status = this.updateStatus(pod, after);
    if (result.retryAfterMs !== undefined) this.workers.requeueAfter(uid, result.retryAfterMs);
    const left = activeDeadlineLeftMs(pod, status, this.clock.now());
    if (left !== undefined) this.workers.requeueAfter(uid, left);
    if (result.error) throw new Error(result.error);
    if (oomMayStillShow(after, this.clock.now())) {
      // containerd 1.6 records an OOM kill from an event that can land just after the exit:
      // look once more before the pod's status is final, or it keeps reason Error.
      // The reason is in ContainerStatus only, never in a list: read the runtime.
      this.readRuntimeNext.add(uid);
      this.workers.requeueAfter(uid, OOM_SETTLE_MS);
      return false;
    }
    return isTerminalPhase(status.phase) && !after.containers.some((c) => c.state === 'running');
  }

  async syncTerminatingPod(pod: IPod, gracePeriodSeconds: number | undefined): Promise<void> {
    // A terminating pod is not probed: a failing liveness probe must not restart what is being stopped.
    this.prober.removePod(podMeta(pod).uid);
    const status = await this.getRuntimeStatus(pod);
    await this.runtimeManager.killPod(pod, status, gracePeriodSeconds);
  }

  async syncTerminatedPod(pod: IPod): Promise<void> {
    const uid = podMeta(pod).uid;
    const status = await this.getRuntimeStatus(pod);
    await this.runtimeManager.removePod(status);
    this.podManager.removePod(uid);
    this.statusManager.forget(uid);
    this.evictionManager.forget(uid);
    this.rejected.delete(uid);
    // The pod cache keeps its entry until the PLEG sees the pod gone; a new life of the UID does not trust it.
    this.lastSyncEnd.delete(uid);
    this.readRuntimeNext.delete(uid);
    this.pruneAfterSync.delete(uid);
    this.addedAt.delete(uid);
    this.deletions.delete(uid);
    this.events.forget(uid);
    this.parts.terminations.forget(uid);
    this.prober.removePod(uid);
    // Room freed: a resize deferred for want of it is tried again now (the kubelet's retry of pending resizes).
    for (const other of this.pods.keys()) {
      if (this.statusManager.conditions(other).some((c) => c.type === 'PodResizePending' && c.reason === 'Deferred'))
        this.workers.requeueAfter(other, 0);
    }
    this.observers.forEach((o) => o.onTerminated?.(pod));
  }
}

const OOM_SETTLE_MS = 500;

/** A SIGKILL exit the runtime may still relabel OOMKilled (within 2 s of it). */
function oomMayStillShow(status: RuntimePodStatus, now: number): boolean {
  return status.containers.some(
    (c) => c.state === 'exited' && c.exitCode === 137 && c.reason === 'Error' && c.finishedAt !== undefined && now - c.finishedAt < 2000,
  );
}
