import type { EventRecorder } from './events.js';
import type { ObjectStore } from './objects.js';
import type { ProberManager } from './prober/index.js';
import type { RuntimeCache } from './container/runtime-cache.js';
import type { ImageGCManager } from './kuberuntime/image-gc.js';
import type { RuntimeManager } from './kuberuntime/manager.js';
import type { ContainerLogManager } from './logs/rotation.js';
import type { PodManager } from './pod-manager/index.js';
import type { PodCache } from './pleg/cache.js';
import type { StatusManager } from './status/manager.js';
import type { TerminationRecords } from './status/termination-records.js';
import type { EvictionManager } from './eviction/manager.js';
import type { PodCleanups } from './housekeeping.js';
import type { PodWorkers } from './workers/pod-workers.js';
import type { KubeletOptions } from './kubelet-types.js';

/** The Kubelet's parts, made by the composition root (node/compose.ts). */
export interface KubeletParts {
  options: KubeletOptions;
  podManager: PodManager;
  podCache: PodCache;
  statusManager: StatusManager;
  evictionManager: EvictionManager;
  events: EventRecorder;
  prober: ProberManager;
  objects: ObjectStore;
  runtimeManager: RuntimeManager;
  runtimeCache: RuntimeCache;
  imageGC: ImageGCManager;
  containerLogs: ContainerLogManager;
  workers: PodWorkers;
  cleanups: PodCleanups;
  terminations: TerminationRecords;
}
