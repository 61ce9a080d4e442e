import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import type { Clock } from './clock.js';
import type { ImageService, RuntimeService } from './cri/client.js';
import type { ContainerGCPolicy, SyncPodResult } from './kuberuntime/manager.js';
import type { NodeInfo } from './admission.js';
import type { Metrics } from './metrics.js';
import type { ProbeResultUpdate } from './prober/index.js';
import type { PodStorageUsage } from './eviction/local-storage.js';
import type { ContainerLogPolicy } from './logs/rotation.js';
import type { ImageGCPolicy, ImageGCResult } from './kuberuntime/image-gc.js';
import type { WorkerTrace } from './workers/pod-workers.js';

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

/** What the sync loop needs of the prober: its results, and an end to its probes when the loop stops. */
export interface ProbeResults {
  watch(listener: (u: ProbeResultUpdate) => void): () => void;
  stopAll(): void;
}

/** A part the sync loop starts and stops with itself (container log rotation). */
export interface LoopRunnable {
  start(): void;
  stop(): void;
}

/**
 * The kubelet's SyncHandler: what syncLoopIteration calls, one method per branch, and nothing of
 * how the Kubelet is made. Pods are the config source's objects; UIDs name pods of the pod manager.
 */
export interface SyncHandler {
  /** New pods from a config source (admitted first), or pods it changed. */
  HandlePodAdditions(pods: IPod[], source?: string): void;
  HandlePodUpdates(pods: IPod[], source?: string): void;
  /** Each terminates gracefully, then leaves the runtime. */
  HandlePodRemoves(pods: IPod[]): void;
  /** One pod by UID, with a grace period of its own (a delete's --grace-period). */
  removePod(uid: string, gracePeriodSeconds?: number): void;
  /** Only metadata or status moved: the newer object is kept, no sync. */
  HandlePodReconcile(pods: IPod[]): void;
  /** A sync for each of these pods whose worker is syncing (PLEG events, the sync tick, the runtime back). */
  HandlePodSyncs(uids: string[]): void;
  /** Housekeeping: orphans, dead containers, images, local storage eviction. */
  HandlePodCleanups(): Promise<HousekeepingResult>;
  /** The probe branch: a liveness or startup failure syncs the pod; readiness updates its status at once. */
  HandleProbeResult(u: ProbeResultUpdate): void;
  /** After a ContainerDied: the pod's older dead containers go once its next sync ends. */
  pruneDeadContainersSoon(uid: string): void;
  /** Whether the pod manager holds the pod: PLEG events of other pods are not this node's. */
  isDesired(uid: string): boolean;
  /** Every pod the pod manager holds. */
  desiredUIDs(): Iterable<string>;
  /** Whether the pod's worker is syncing (not terminating or terminated): what a dispatch reaches. */
  isSyncing(uid: string): boolean;
  /** The pods whose worker asked to be synced again by now (the sync tick's). */
  syncDue(): string[];
  readonly prober: ProbeResults;
  readonly containerLogs: LoopRunnable;
}
