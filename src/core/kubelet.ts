import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import type { Clock } from './clock.js';
import { duplicateSandboxes } from './duplicate-sandboxes.js';
import type { ImageService, RuntimeService } from './cri/client.js';
import { graceFromRuntime, podRef, RuntimeManager, type ContainerGCPolicy, type SyncPodResult } from './kuberuntime/manager.js';
import { emptyPodStatus, type RuntimePodStatus } from './container/types.js';
import { generatePodStatus } from './status/generate.js';
import { qosClass } from './status/qos.js';
import { admitPod, podRequests, type NodeInfo } from './admission.js';
import { podAsCreated, resizeDecision } from './kuberuntime/resize.js';
import type { ExpectedIds } from './kuberuntime/pod-status.js';
import { StatusManager } from './status/manager.js';
import { isTerminalPhase, statusSummary } from './status/phase.js';
import { EventRecorder } from './events.js';
import { ObjectStore } from './objects.js';
import { PLUGIN_DIRS, VolumeManager } from './volumes/index.js';
import {
  EVICTION_MONITORING_PERIOD_MS,
  hasLocalStorageLimits,
  localStorageEviction,
  measurePodStorage,
  type PodStorageUsage,
} from './eviction/local-storage.js';
import { containerLogPath, podLogDirectory } from './kuberuntime/config.js';
import { cpus, totalmem } from 'node:os';
import type { Metrics } from './metrics.js';
import { EventedPleg, type Pleg } from './pleg/evented.js';
import { choosePleg, type PlegKind } from './pleg/select.js';
import type { ContainerdEventSource } from './cri/containerd-events.js';
import { ProberManager, type ProbeResultUpdate } from './prober/index.js';
import { GenericPleg } from './pleg/generic.js';
import { RuntimeCache, type RuntimeSnapshot } from './container/runtime-cache.js';
import type { PodCache } from './pleg/cache.js';
import {
  AGENT_LABEL,
  CONTAINER_NAME_LABEL,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  POD_UID_LABEL,
  podIdentityFromLabels,
} from './kuberuntime/labels.js';
import { ContainerLogManager, DEFAULT_CONTAINER_LOG_MONITOR_INTERVAL_MS, type ContainerLogPolicy } from './logs/rotation.js';
import { ImageGCManager, type ImageGCPolicy, type ImageGCResult } from './kuberuntime/image-gc.js';
import { PodWorkers, type UpdateType } from './workers/pod-workers.js';
import { Backoff } from './util/backoff.js';
import { safeJoin } from './util/safe-path.js';
import { TerminationRecords } from './status/termination-records.js';
import type { WorkerTrace } from './workers/pod-workers.js';
import { podKey, podMeta } from './util/pod-key.js';

export interface KubeletOptions {
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  logRoot: string;
  nodeName: string;
  hostIP?: string;
  runtimeName?: string;
  /** Pod worker backoff after a failed sync (10 s in the kubelet). */
  backOffPeriodMs?: number;
  resyncIntervalMs?: number;
  /** 'watch' or 'run': recorded on sandboxes; housekeeping touches only its own agent's. */
  agent?: string;
  /**
   * Per-pod state on the host (volumes, termination-message files, /etc/hosts): <rootDir>/pods/<uid>. None: no such files and no volumes.
   */
  rootDir?: string;
  /** Privileged containers run only when set (the kubelet's old --allow-privileged). */
  allowPrivileged?: boolean;
  /** The CRI runtime handler of pods without spec.runtimeClassName; empty: the runtime's default. */
  runtimeHandler?: string;
  /**
   * Whether housekeeping kills pods of this agent that no source wants. Only
   * watch has sources that can drop a pod; a foreground run knows only its
   * own files and must never remove what another run started. Default: agent is watch.
   */
  removeOrphans?: boolean;
  /**
   * Why a source still claims a pod it cannot hand over (its manifest exists but cannot be read or is
   * invalid, with no last good version: at start); undefined when none does. Housekeeping keeps such
   * a pod as it runs, with a FailedValidation event naming the problem, instead of removing it.
   */
  sourceClaim?: (namespace: string, name: string) => string | undefined;
  metrics?: Metrics;
  /** Wraps each pod worker's unit of work (watch --trace). */
  trace?: WorkerTrace;
  /** Where the agent's events are journaled (reloaded at start); none: in memory only. */
  eventsJournal?: string;
  /** Image GC (--image-gc-high-threshold, --image-gc-low-threshold, --image-minimum-gc-age). */
  imageGC?: Partial<ImageGCPolicy>;
  /** Dead containers kept (--maximum-dead-containers-per-container, --maximum-dead-containers). */
  containerGC?: Partial<ContainerGCPolicy>;
  /**
   * This node for the kubelet's admission of each new pod (GeneralPredicates: node affinity,
   * host ports, resources); none: every pod is admitted (a foreground run admits before).
   */
  admission?: NodeInfo;
  /** How often the eviction manager measures pods' local storage (10 s, as the kubelet). */
  evictionMonitoringPeriodMs?: number;
  /** Measures a pod's local storage; default: its emptyDirs and log dirs on disk, writable layers from ListContainerStats. */
  measureLocalStorage?: (pod: IPod) => Promise<PodStorageUsage>;
  /** Container log rotation (the kubelet's --container-log-max-size / --container-log-max-files). */
  containerLogs?: Partial<ContainerLogPolicy> & { monitorIntervalMs?: number };
}

/** Retry of an orphan the runtime would not remove: 10 s doubling to 5 min. */
const ORPHAN_RETRY_INITIAL_MS = 10_000;
const ORPHAN_RETRY_MAX_MS = 300_000;

/** What one housekeeping pass cleaned up. */
export interface HousekeepingResult {
  /** Pods podctl had labelled that no source wants any more: killed and removed. */
  removedPods: string[];
  /** Dead containers beyond the newest one per container name. */
  removedContainers: number;
  /** What image GC removed, when it ran and removed something (every 5 min, over the high threshold). */
  images?: ImageGCResult;
  imageGCError?: string;
  /** Orphans the runtime would not remove this pass (retried with backoff), with its error. */
  failedPods?: { pod: string; error: string; retryInMs: number }[];
  durationMs: number;
}

export interface PodStatusChange {
  pod: IPod;
  status: IPodStatus;
  previous?: IPodStatus;
}

export interface SyncObserver {
  onStatus?(change: PodStatusChange): void;
  onSyncResult?(pod: IPod, result: SyncPodResult): void;
  onSyncError?(pod: IPod, err: unknown): void;
  onTerminated?(pod: IPod): void;
  /** A sync of this pod object ended (its status is recorded): what status.observedGeneration follows. */
  onSynced?(pod: IPod): void;
}

/**
 * The kubelet's Kubelet: desired pods (podManager), their lanes (podWorkers),
 * the runtime (RuntimeManager) and the last status of each (statusManager).
 */
export class Kubelet {
  readonly runtimeManager: RuntimeManager;
  readonly workers: PodWorkers;
  readonly clock: Clock;
  /** Desired pods by UID. */
  /** The pod manager's desired pods, by UID: written only through addOrUpdatePod, reconcilePod and removal. */
  private readonly desired = new Map<string, IPod>();
  get pods(): ReadonlyMap<string, IPod> {
    return this.desired;
  }
  /** Last status reported per pod UID. */
  /** The kubelet's statusManager: the pods' last statuses and waiting reasons. */
  readonly statusManager = new StatusManager();
  /** Last runtime view per pod UID (the podCache). */
  readonly runtimeStatuses = new Map<string, RuntimePodStatus>();
  private readonly volumes?: VolumeManager;
  /** Pods the eviction manager evicted, with its message: they end Failed, reason Evicted. */
  private readonly evictions = new Map<string, string>();
  private lastEvictionCheck = -Infinity;
  /** Pods admission rejected, by UID: held Failed with the reason, never synced, re-admitted on update. */
  private readonly rejected = new Map<string, { reason: string; message: string }>();
  /** The kubelet's events per pod (what `describe` lists). */
  readonly events: EventRecorder;
  /** Liveness, readiness and startup probes of the desired pods. */
  readonly prober: ProberManager;
  /** ConfigMaps and Secrets delivered by the sources, for env and volumes. */
  readonly objects = new ObjectStore();
  /** Each container's last termination, on disk in the pod's directory (Last State after GC). */
  private readonly terminations: TerminationRecords;
  /** Removes unused images when the image filesystem fills up. */
  readonly imageGC: ImageGCManager;
  /** Rotates the logs of this agent's running containers; the sync loop starts and stops it. */
  readonly containerLogs: ContainerLogManager;
  /** When each pod was added, until it first ran (pod start latency). */
  private readonly addedAt = new Map<string, number>();
  /** When each pod being deleted was asked to go, with its grace period (the API server's deletionTimestamp is the sum). */
  private readonly deletions = new Map<string, { at: number; grace: number }>();
  private readonly observers = new Set<SyncObserver>();
  private readonly opts: KubeletOptions;
  /** The PLEG's pod cache, once a PLEG is made: a sync starts from it when it is fresh enough. */
  private podCache?: PodCache;
  /** The generic PLEG under whichever PLEG runs: what it has seen of each pod. */
  private plegGeneric?: GenericPleg;
  /** The PLEG's last lists: housekeeping reads them while they are fresh instead of listing again. */
  readonly runtimeCache: RuntimeCache;
  /** When each pod's last sync ended: cache data must come from a relist begun after it. */
  private readonly lastSyncEnd = new Map<string, number>();
  /** Pods whose next sync must read the runtime (what it waits for shows in no list). */
  private readonly readRuntimeNext = new Set<string>();
  /** Pods whose older dead containers go once their next sync ends. */
  private readonly pruneAfterSync = new Set<string>();
  /** Orphans whose removal failed, by UID: retried after a delay that doubles (a stuck netns can fail for ever). */
  private readonly orphanBackoff: Backoff;
  private readonly orphanFailedAt = new Map<string, number>();
  /** The problem last recorded as an event on each pod kept for a source's claim: said once, not every pass. */
  private readonly claimedSaid = new Map<string, string>();
  /** The lists housekeeping last acted on. */
  private lastHousekept?: RuntimeSnapshot;

  constructor(opts: KubeletOptions) {
    this.opts = opts;
    this.clock = opts.clock;
    this.events = new EventRecorder(opts.clock, { journal: opts.eventsJournal });
    this.orphanBackoff = new Backoff(opts.clock, ORPHAN_RETRY_INITIAL_MS, ORPHAN_RETRY_MAX_MS);
    this.runtimeCache = new RuntimeCache(opts.clock);
    this.terminations = new TerminationRecords((uid) => {
      if (!opts.rootDir) return undefined;
      try {
        return safeJoin(opts.rootDir, [
          ['pods', 'pods'],
          ['pod UID', uid],
        ]);
      } catch {
        return undefined;
      }
    });
    this.imageGC = new ImageGCManager({ runtime: opts.runtime, images: opts.images, clock: opts.clock, policy: opts.imageGC });
    const logMonitorIntervalMs = opts.containerLogs?.monitorIntervalMs ?? DEFAULT_CONTAINER_LOG_MONITOR_INTERVAL_MS;
    this.containerLogs = new ContainerLogManager({
      ...opts.containerLogs,
      runtime: {
        // The running containers it checks every 10 s are the runtime cache's (this kubelet's pods are
        // podctl's) when no older than that check's interval: a relist's lists then serve it, where its
        // own ListContainers was most of an idle watch's remaining lists at 5,000 pods. Older lists (an
        // event stream keeps them a minute) would miss a container that started since, whose log must rotate.
        listContainerSummaries: async (filter) =>
          filter?.state?.state === 'CONTAINER_RUNNING' && !filter.id && !filter.podSandboxId && !filter.labelSelector
            ? (await this.runtimeCache.get(() => this.listForRuntimeCache(), true, logMonitorIntervalMs)).containers.filter(
                (c) => c.state === 'CONTAINER_RUNNING',
              )
            : opts.runtime.listContainerSummaries(filter),
        containerStatus: (id, verbose) => opts.runtime.containerStatus(id, verbose),
        reopenContainerLog: (id) => opts.runtime.reopenContainerLog(id),
      },
      clock: opts.clock,
      runningContainers: () => this.runningFromPodCache(logMonitorIntervalMs),
      owns: (c) => this.pods.has(c.labels[POD_UID_LABEL] ?? ''),
      logPathOf: (c) => {
        const pod = this.pods.get(c.labels[POD_UID_LABEL] ?? '');
        const name = c.labels[CONTAINER_NAME_LABEL];
        return pod && name ? join(podLogDirectory(opts.logRoot, pod), containerLogPath(name, c.metadata?.attempt ?? 0)) : undefined;
      },
    });
    const node = { nodeName: opts.nodeName, hostIP: opts.hostIP, cpuCores: cpus().length, memoryBytes: totalmem() };
    this.volumes = opts.rootDir ? new VolumeManager({ rootDir: opts.rootDir, objects: this.objects, node }) : undefined;
    this.runtimeManager = new RuntimeManager({
      runtime: opts.runtime,
      images: opts.images,
      clock: opts.clock,
      logRoot: opts.logRoot,
      rootDir: opts.rootDir,
      agent: opts.agent,
      events: this.events,
      hostIP: opts.hostIP,
      objects: this.objects,
      runtimeClasses: this.objects,
      defaultRuntimeHandler: opts.runtimeHandler,
      allowPrivileged: opts.allowPrivileged,
      containerGC: opts.containerGC,
      node,
      volumes: this.volumes,
    });
    this.prober = new ProberManager({
      clock: opts.clock,
      runtime: opts.runtime,
      events: this.events,
      pod: (uid) => this.pods.get(uid),
      status: (uid) => this.statusManager.get(uid),
    });
    this.workers = new PodWorkers(this, {
      clock: opts.clock,
      backOffPeriodMs: opts.backOffPeriodMs,
      resyncIntervalMs: opts.resyncIntervalMs,
      onSyncError: (pod, err) => this.observers.forEach((o) => o.onSyncError?.(pod, err)),
      trace: opts.trace,
      admit: opts.runtime.whenUncongested && (() => opts.runtime.whenUncongested!()),
      onSyncDone: (_pod, durationMs, err) => opts.metrics?.syncDuration.observe({ outcome: err ? 'error' : 'success' }, durationMs / 1000),
    });
  }

  observe(observer: SyncObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /** A generic PLEG over this kubelet's runtime, inspecting changed pods as SyncPod does. */
  createPleg(
    opts: { relistPeriodMs?: number; onError?: (err: unknown) => void; onRelist?: (durationMs: number, intervalMs?: number) => void } = {},
  ): GenericPleg {
    const pleg = new GenericPleg({
      runtime: this.opts.runtime,
      clock: this.clock,
      inspect: (uid, name, namespace) => this.runtimeManager.getPodStatus(uid, name, namespace),
      // A sync's read after its steps: the relist that then finds the pod started need not read it again.
      latestStatus: (uid) => this.runtimeStatuses.get(uid),
      earlyExits: this.runtimeManager.statusReader.earlyExits,
      exitedStatus: (c, exit) => this.runtimeManager.statusReader.exitedStatus(c, exit),
      runtimeCache: this.runtimeCache,
      onRelist: (durationMs, intervalMs) => {
        this.opts.metrics?.relistDuration.observe(durationMs / 1000);
        if (intervalMs !== undefined) this.opts.metrics?.relistInterval.observe(intervalMs / 1000);
      },
      ...opts,
    });
    this.podCache = pleg.cache;
    this.plegGeneric = pleg;
    return pleg;
  }

  /** An evented PLEG over the generic one (the generic relists as a safety net, and takes over on UNIMPLEMENTED). */
  createEventedPleg(
    opts: {
      relistPeriodMs?: number;
      onError?: (err: unknown) => void;
      onFallback?: (reason: string) => void;
      onRelist?: (durationMs: number, intervalMs?: number) => void;
    } = {},
  ): EventedPleg {
    return new EventedPleg({
      runtime: this.opts.runtime,
      clock: this.clock,
      generic: this.createPleg({
        relistPeriodMs: opts.relistPeriodMs,
        onError: opts.onError,
        ...(opts.onRelist ? { onRelist: opts.onRelist } : {}),
      }),
      onFallback: opts.onFallback,
    });
  }

  /** The PLEG of that kind over a generic one of this kubelet (see choosePleg). */
  choosePleg(
    kind: PlegKind,
    opts: {
      relistPeriodMs?: number;
      onRelist?: (durationMs: number, intervalMs?: number) => void;
      onFallback?: (reason: string) => void;
      containerdEvents: () => ContainerdEventSource;
    },
  ): Pleg {
    const generic = this.createPleg({ relistPeriodMs: opts.relistPeriodMs, ...(opts.onRelist ? { onRelist: opts.onRelist } : {}) });
    return choosePleg({
      kind,
      runtime: this.opts.runtime,
      clock: this.clock,
      generic,
      runtimeName: this.opts.runtimeName,
      containerdEvents: opts.containerdEvents,
      onFallback: opts.onFallback,
    });
  }

  /**
   * ADD / UPDATE from a config source. A new pod (or a rejected one, edited) goes through the
   * kubelet's admission first, against the pods already admitted and not finished.
   */
  addOrUpdatePod(pod: IPod): void {
    const uid = podMeta(pod).uid;
    const wasRejected = this.rejected.has(uid);
    const known = this.pods.has(uid) && !wasRejected;
    if (!known && this.opts.admission) {
      const active = [...this.desired]
        .filter(([u]) => u !== uid && !this.rejected.has(u) && !isTerminalPhase(this.statusManager.get(u)?.phase))
        .map(([, p]) => p);
      const result = admitPod(pod, active, this.opts.admission);
      if (!result.admit) {
        this.rejectPod(pod, result.reason, result.message);
        return;
      }
    }
    if (wasRejected) {
      this.rejected.delete(uid);
      this.statusManager.forget(uid);
    }
    if (!known) this.addedAt.set(uid, this.clock.now());
    this.desired.set(uid, pod);
    this.workers.updatePod({ type: known ? 'update' : 'create', pod });
    this.prober.addPod(pod);
  }

  /**
   * Whether the resize the spec asks for fits this node (the kubelet's canResizePod): Infeasible
   * when the pod's new requests exceed what the node can ever allocate, Deferred when the pods
   * admitted beside it leave too little now. No node info (a foreground run): always fits.
   */
  private resizePending(pod: IPod, status: RuntimePodStatus): { reason: string; message: string } | undefined {
    const node = this.opts.admission;
    if (!node) return undefined;
    const running = status.containers.filter((c) => c.state === 'running');
    const resizing = running.some((cs) => {
      const c = pod.spec!.containers.find((x) => x.name === cs.name);
      return c !== undefined && resizeDecision(c, cs)?.kind === 'resize';
    });
    if (!resizing) return undefined;
    const want = podRequests(pod);
    const now = podRequests(podAsCreated(pod, status.containers));
    const uid = podMeta(pod).uid;
    const others = [...this.desired]
      .filter(([u]) => u !== uid && !this.rejected.has(u) && !isTerminalPhase(this.statusManager.get(u)?.phase))
      .map(([, p]) => podRequests(p));
    for (const k of ['cpu', 'memory'] as const) {
      if (want[k] <= now[k]) continue;
      if (want[k] > node.allocatable[k])
        return {
          reason: 'Infeasible',
          message: `Node didn't have enough capacity: ${k}, requested: ${want[k]}, capacity: ${node.allocatable[k]}`,
        };
      const used = others.reduce((sum, r) => sum + r[k], 0);
      if (used + want[k] > node.allocatable[k])
        return {
          reason: 'Deferred',
          message: `Node didn't have enough resource: ${k}, requested: ${want[k]}, used: ${used}, capacity: ${node.allocatable[k]}`,
        };
    }
    return undefined;
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
  private rejectPod(pod: IPod, reason: string, message: string): void {
    const uid = podMeta(pod).uid;
    const previous = this.statusManager.get(uid);
    this.desired.set(uid, pod);
    this.rejected.set(uid, { reason, message });
    const status: IPodStatus = { phase: 'Failed', reason, message: `Pod was rejected: ${message}`, qosClass: qosClass(pod) };
    this.statusManager.set(uid, status);
    if (previous?.reason !== reason || previous?.message !== status.message) {
      this.events.record(podRef(pod), 'Warning', reason, message);
      this.observers.forEach((o) => o.onStatus?.({ pod, status, previous }));
    }
    // The rejection is this version's final word: its status is the one to judge it by (observedGeneration).
    this.observers.forEach((o) => o.onSynced?.(pod));
  }

  /** Why admission rejected the pod, while it is held rejected. */
  rejection(uid: string): { reason: string; message: string } | undefined {
    return this.rejected.get(uid);
  }

  /**
   * A pod condition set from outside (a readiness gate's, as a controller patches it through the
   * API server): recorded, and the status recomputed at once from the last runtime view.
   */
  setPodCondition(uid: string, c: Parameters<StatusManager['setCondition']>[1]): IPodStatus | undefined {
    const pod = this.pods.get(uid);
    if (!pod) return undefined;
    this.statusManager.setCondition(uid, c, this.clock.now());
    const runtime = this.runtimeStatuses.get(uid);
    return runtime ? this.updateStatus(pod, runtime) : this.statusManager.get(uid);
  }

  /** RECONCILE: only metadata or status moved; keep the new object, no sync needed. */
  reconcilePod(pod: IPod): void {
    if (this.desired.has(podMeta(pod).uid)) this.desired.set(podMeta(pod).uid, pod);
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
      const runtime = this.runtimeStatuses.get(u.uid);
      if (runtime) this.updateStatus(pod, runtime);
    }
    this.syncPodSoon(u.uid);
  }

  /** Asks the pod's lane for a sync (PLEG event, probe result). */
  syncPodSoon(uid: string): void {
    const pod = this.pods.get(uid);
    if (pod && this.workers.state(uid) === 'syncing') this.workers.updatePod({ type: 'sync', pod });
  }

  async getRuntimeStatus(pod: IPod, expected?: ExpectedIds): Promise<RuntimePodStatus> {
    const m = podMeta(pod);
    const status = await this.runtimeManager.getPodStatus(m.uid!, m.name!, m.namespace ?? 'default', { expected });
    this.runtimeStatuses.set(m.uid!, status);
    return status;
  }

  /**
   * The runtime view a sync starts from. As the kubelet's podCache.GetNewerThan: the PLEG's
   * cache once a relist has begun since this pod's last sync ended (a relist re-reads every pod
   * whose sandboxes or containers changed, so an unchanged entry is still true); the runtime
   * otherwise. A periodic resync or a sync after a PLEG event then makes no CRI call at all.
   */
  private async statusForSync(pod: IPod): Promise<RuntimePodStatus> {
    const uid = podMeta(pod).uid;
    const mustRead = this.readRuntimeNext.delete(uid);
    const cached = this.podCache?.get(uid);
    const freshness = this.podCache?.freshness(uid);
    const lastSync = this.lastSyncEnd.get(uid);
    if (!mustRead && cached && freshness !== undefined && lastSync !== undefined && freshness > lastSync) {
      this.runtimeStatuses.set(uid, cached);
      return cached;
    }
    // Never synced (GetNewerThan with no last sync): a pod the PLEG knows nothing of, with its cache
    // current after a full relist, has nothing in the runtime, and its first sync creates without
    // listing. A pod with an entry left from a previous life, or whose inspection failed, is read.
    if (!mustRead && !cached && lastSync === undefined && this.plegGeneric?.holdsNothingOf(uid)) {
      const m = podMeta(pod);
      const empty = emptyPodStatus(uid, m.name!, m.namespace ?? 'default', this.clock.now());
      this.runtimeStatuses.set(uid, empty);
      return empty;
    }
    return this.getRuntimeStatus(pod);
  }

  /** Computes and records the v1 status from a runtime view. */
  updateStatus(pod: IPod, runtime: RuntimePodStatus): IPodStatus {
    const uid = podMeta(pod).uid;
    const previous = this.statusManager.get(uid);
    const status = generatePodStatus({
      pod,
      runtime,
      previous,
      waitingReason: (name) => this.statusManager.waitingReason(uid, name),
      ready: (id, container) => this.prober.ready(id, container),
      started: (id, container) => this.prober.started(id, container),
      hostIP: this.opts.hostIP,
      now: this.clock.now(),
      runtimeName: this.opts.runtimeName,
      lastTermination: (name) => this.terminations.get(uid, name),
      podConditions: this.statusManager.conditions(uid),
    });
    if (pastActiveDeadline(pod, previous ?? status, this.clock.now())) {
      // The kubelet's active deadline handler: the pod fails as a whole, whatever its containers say.
      status.phase = 'Failed';
      status.reason = DEADLINE_EXCEEDED;
      status.message = 'Pod was active on the node longer than the specified deadline';
    }
    const evicted = this.evictions.get(uid);
    if (evicted !== undefined || previous?.reason === EVICTED) {
      status.phase = 'Failed';
      status.reason = EVICTED;
      status.message = evicted ?? previous!.message;
    }
    this.terminations.remember(uid, status);
    this.statusManager.set(uid, status);
    const added = this.addedAt.get(uid);
    if (added !== undefined && (status.containerStatuses ?? []).length > 0 && status.containerStatuses!.every((c) => c.state?.running)) {
      this.opts.metrics?.podStartDuration.observe((this.clock.now() - added) / 1000);
      this.addedAt.delete(uid);
    }
    if (!previous || statusSummary(previous) !== statusSummary(status)) {
      this.observers.forEach((o) => o.onStatus?.({ pod, status, previous }));
    }
    return status;
  }

  /**
   * The running containers of this kubelet's pods with their log paths, from the PLEG's pod cache while
   * it is current (a relist, or an event stream's mark, within maxAgeMs): log rotation then lists
   * nothing. A container started since is in it once its PLEG event has refreshed its pod.
   */
  private runningFromPodCache(maxAgeMs: number): { id: string; path: string }[] | undefined {
    const cache = this.podCache;
    if (!cache || this.clock.now() - cache.currentAsOf() >= maxAgeMs) return undefined;
    const out: { id: string; path: string }[] = [];
    for (const uid of this.pods.keys()) {
      const status = cache.get(uid);
      if (!status) continue;
      for (const c of status.containers) if (c.state === 'running' && c.logPath) out.push({ id: c.id, path: c.logPath });
      for (const c of status.ephemeral ?? []) if (c.state === 'running' && c.logPath) out.push({ id: c.id, path: c.logPath });
    }
    return out;
  }

  /** podctl's sandboxes and containers, as a relist lists them: what the runtime cache holds. */
  private async listForRuntimeCache(): Promise<Omit<RuntimeSnapshot, 'at'>> {
    const selector = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
    const [sandboxes, containers] = await Promise.all([
      this.opts.runtime.listPodSandboxSummaries({ labelSelector: selector }),
      this.opts.runtime.listContainerSummaries({ labelSelector: selector }),
    ]);
    return { sandboxes, containers };
  }

  /**
   * The kubelet's HandlePodCleanups: kill and remove pods podctl labelled that
   * no source wants, garbage-collect dead containers beyond the newest one per
   * container name, forget finished lanes.
   */
  async housekeeping(): Promise<HousekeepingResult> {
    const started = this.clock.now();
    const result: HousekeepingResult = { removedPods: [], removedContainers: 0, durationMs: 0 };
    const removeOrphans = this.opts.removeOrphans ?? this.runtimeManager.agent === 'watch';
    const agent = this.runtimeManager.agent;
    // It lists what a relist does (its own agent's sandboxes are picked below), so the cache may keep it.
    const snapshot = await this.runtimeCache.get(() => this.listForRuntimeCache(), true);
    // Lists already acted on (an event-driven PLEG's cache lives a minute) hold nothing new for the
    // cleanups below; a pod removed since is its worker's to kill.
    const fresh = snapshot !== this.lastHousekept;
    this.lastHousekept = snapshot;
    const { sandboxes, containers } = fresh ? snapshot : { sandboxes: [], containers: [] };
    const orphans = new Map<string, { name: string; namespace: string }>();
    const claimed = new Set<string>();
    for (const s of removeOrphans ? sandboxes : []) {
      if (s.labels[AGENT_LABEL] !== agent) continue;
      const id = podIdentityFromLabels(s.labels);
      if (!id || this.pods.has(id.uid) || this.workers.isWorking(id.uid)) continue;
      const claim = this.opts.sourceClaim?.(id.namespace, id.name);
      if (claim !== undefined) {
        claimed.add(id.uid);
        if (this.claimedSaid.get(id.uid) !== claim)
          this.events.record({ uid: id.uid, namespace: id.namespace, name: id.name }, 'Warning', 'FailedValidation', claim);
        this.claimedSaid.set(id.uid, claim);
        continue;
      }
      orphans.set(id.uid, id);
    }
    if (fresh) for (const uid of [...this.claimedSaid.keys()]) if (!claimed.has(uid)) this.claimedSaid.delete(uid);
    if (removeOrphans)
      for (const [uid, id] of duplicateSandboxes(sandboxes, this.pods.values(), agent))
        if (!this.workers.isWorking(uid)) orphans.set(uid, id);
    for (const [uid, id] of orphans) {
      const failedAt = this.orphanFailedAt.get(uid);
      if (failedAt !== undefined && this.orphanBackoff.isInBackOffSince(uid, failedAt)) continue;
      try {
        const status = await this.runtimeManager.getPodStatus(uid, id.name, id.namespace);
        // The lists may be a relist's of up to 3 s ago: a pod removed since is no orphan to report.
        if (status.sandboxes.length === 0 && status.containers.length === 0) continue;
        const grace = graceFromRuntime(status);
        await this.runtimeManager.killPodByStatus(status, grace);
        await this.runtimeManager.removePod(status);
        result.removedPods.push(podKey(id));
        this.orphanFailedAt.delete(uid);
        this.orphanBackoff.reset(uid);
      } catch (err) {
        // One pod the runtime cannot remove must not stop the cleanup of the others.
        const now = this.clock.now();
        const retryInMs = this.orphanBackoff.next(uid, now);
        this.orphanFailedAt.set(uid, now);
        (result.failedPods ??= []).push({ pod: podKey(id), error: (err as Error).message, retryInMs });
      }
    }
    for (const uid of fresh ? this.orphanFailedAt.keys() : []) {
      if (orphans.has(uid)) continue;
      this.orphanFailedAt.delete(uid);
      this.orphanBackoff.reset(uid);
    }
    result.removedContainers = await this.runtimeManager.removeDeadContainers(containers, (uid) => !orphans.has(uid));
    for (const uid of this.workers.knownPods()) if (!this.pods.has(uid)) this.workers.forget(uid);
    this.runtimeManager.crashBackoff.gc();
    this.runtimeManager.imagePuller.backoff.gc();
    // A failed image GC (no statfs of the image filesystem, say) must not stop housekeeping.
    const images = await this.imageGC.maybeGarbageCollect().catch((err: unknown) => {
      result.imageGCError = (err as Error).message;
      return undefined;
    });
    if (images?.removed.length) result.images = images;
    await this.evictForLocalStorage();
    result.durationMs = this.clock.now() - started;
    return result;
  }

  /**
   * The kubelet eviction manager's local storage checks, every 10 s: a pod whose disk emptyDir
   * outgrows its sizeLimit, or whose writable layers and logs outgrow its ephemeral-storage
   * limits, is evicted (killed, Failed with reason Evicted and the kubelet's message).
   */
  private async evictForLocalStorage(): Promise<void> {
    const now = this.clock.now();
    if (now - this.lastEvictionCheck < (this.opts.evictionMonitoringPeriodMs ?? EVICTION_MONITORING_PERIOD_MS)) return;
    this.lastEvictionCheck = now;
    for (const [uid, pod] of this.pods) {
      if (this.evictions.has(uid) || !hasLocalStorageLimits(pod)) continue;
      const status = this.statusManager.get(uid);
      if (status && isTerminalPhase(status.phase)) continue;
      const usage = await (this.opts.measureLocalStorage ?? ((p: IPod) => this.measureLocalStorage(p)))(pod).catch(() => undefined);
      const message = usage && localStorageEviction(pod, usage);
      if (!message) continue;
      this.evictions.set(uid, message);
      this.events.record(podRef(pod), 'Warning', EVICTED, message);
      this.workers.requeueAfter(uid, 0);
    }
  }

  private measureLocalStorage(pod: IPod): Promise<PodStorageUsage> {
    const uid = podMeta(pod).uid;
    const volumes = this.volumes;
    return measurePodStorage(pod, {
      emptyDirPath: (name) => (volumes ? join(volumes.volumesDir(uid), PLUGIN_DIRS.emptyDir, name) : ''),
      logDir: (container) => join(podLogDirectory(this.opts.logRoot, pod), container),
      writableLayers: async () => {
        const out = new Map<string, number>();
        for (const s of await this.opts.runtime.listContainerStats({ labelSelector: { [POD_UID_LABEL]: uid } })) {
          const name = s.attributes?.labels?.[CONTAINER_NAME_LABEL] ?? s.attributes?.metadata?.name;
          if (name) out.set(name, Math.max(out.get(name) ?? 0, Number(s.writableLayer?.usedBytes?.value ?? 0)));
        }
        return out;
      },
    });
  }

  /**
   * After a ContainerDied: keep only the newest dead instance of each of the pod's containers.
   * Done at the end of the pod's next sync (the event asks for one), in its worker lane: never
   * beside a sync of the same pod, and waitIdle covers it.
   */
  pruneDeadContainersSoon(uid: string): void {
    this.pruneAfterSync.add(uid);
  }

  // PodSyncer -------------------------------------------------------------

  /** SyncPod at the kubelet level: returns true once the pod is terminal. */
  async syncPod(pod: IPod, _type: UpdateType): Promise<boolean> {
    const uid = podMeta(pod).uid;
    try {
      return await this.syncPodOnce(pod);
    } finally {
      const status = this.runtimeStatuses.get(uid);
      if (this.pruneAfterSync.delete(uid) && status) await this.runtimeManager.pruneAllDead(status).catch(() => undefined);
      this.lastSyncEnd.set(uid, this.clock.now());
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
    const pending = this.resizePending(pod, before);
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
    this.desired.delete(uid);
    this.statusManager.forget(uid);
    this.evictions.delete(uid);
    this.rejected.delete(uid);
    this.runtimeStatuses.delete(uid);
    this.lastSyncEnd.delete(uid);
    this.readRuntimeNext.delete(uid);
    this.pruneAfterSync.delete(uid);
    this.addedAt.delete(uid);
    this.deletions.delete(uid);
    this.events.forget(uid);
    this.terminations.forget(uid);
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
const DEADLINE_EXCEEDED = 'DeadlineExceeded';
const EVICTED = 'Evicted';

/** How long until spec.activeDeadlineSeconds runs out, counted from the status' startTime. */
function activeDeadlineLeftMs(pod: IPod, status: IPodStatus, now: number): number | undefined {
  const seconds = pod.spec?.activeDeadlineSeconds;
  if (seconds === undefined || seconds === null || !status.startTime) return undefined;
  return Date.parse(status.startTime) + seconds * 1000 - now;
}

/** The kubelet's pastActiveDeadline; once failed for it, a pod stays failed. */
function pastActiveDeadline(pod: IPod, status: IPodStatus, now: number): boolean {
  if (status.reason === DEADLINE_EXCEEDED) return true;
  if (status.phase === 'Succeeded' || status.phase === 'Failed') return false;
  const left = activeDeadlineLeftMs(pod, status, now);
  return left !== undefined && left <= 0;
}

/** A SIGKILL exit the runtime may still relabel OOMKilled (within 2 s of it). */
function oomMayStillShow(status: RuntimePodStatus, now: number): boolean {
  return status.containers.some(
    (c) => c.state === 'exited' && c.exitCode === 137 && c.reason === 'Error' && c.finishedAt !== undefined && now - c.finishedAt < 2000,
  );
}
