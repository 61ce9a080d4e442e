import { cpus, totalmem } from 'node:os';
import type { IPod } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { ImageService, RuntimeService } from '../cri/client.js';
import { nodeDockerConfigPaths } from '../credentials/keyring.js';
import { EventRecorder, type PodRef } from '../events.js';
import type { RuntimeClassRef } from '../objects.js';
import { podMeta } from '../util/pod-key.js';
import type { VolumeManager } from '../volumes/index.js';
import type { ContainerGCPolicy } from './container-gc.js';
import type { EnvObjects, NodeAllocatable } from './env.js';
import { ImagePuller } from './images.js';
import { PodStatusReader } from './pod-status.js';

export interface RuntimeManagerOptions {
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  logRoot: string;
  /** Recorded on sandboxes: housekeeping removes only what its own agent made. */
  agent?: string;
  /** Where the kubelet's events go (Created, Started, Killing, BackOff, ...). */
  events?: EventRecorder;
  /** Per-pod host state (termination-message files) under <rootDir>/pods/<uid>; none without it. */
  rootDir?: string;
  /** The address lifecycle hooks of host-network pods reach. */
  hostIP?: string;
  /** ConfigMaps and Secrets for env, envFrom and volumes. */
  objects?: EnvObjects;
  /** The RuntimeClasses a pod's runtimeClassName is looked up in (the kubelet's runtimeClassManager). */
  runtimeClasses?: { runtimeClass(name: string): RuntimeClassRef | undefined };
  /** The CRI runtime handler of a pod without runtimeClassName; empty: the runtime's default. */
  defaultRuntimeHandler?: string;
  /** The node's allocatable (resource fields of containers without limits, OOM scores). */
  node?: NodeAllocatable;
  /** Privileged containers run only when set (the kubelet's old --allow-privileged). */
  allowPrivileged?: boolean;
  /** Sets up and tears down pod volumes (needs a root dir). */
  volumes?: VolumeManager;
  /** Dead containers kept (the kubelet's container GC policy); default: the newest per container, no overall bound. */
  containerGC?: Partial<ContainerGCPolicy>;
}

/**
 * What the runtime manager's parts (sandbox, containers, container GC, pod files) share: the
 * kubeGenericRuntimeManager's fields, with the options' defaults filled in.
 */
export interface RuntimeContext {
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly clock: Clock;
  readonly events: EventRecorder;
  readonly logRoot: string;
  readonly rootDir?: string;
  readonly agent: string;
  readonly hostIP?: string;
  readonly objects: EnvObjects;
  readonly node: NodeAllocatable;
  readonly allowPrivileged: boolean;
  readonly volumes?: VolumeManager;
  readonly imagePuller: ImagePuller;
  /** The kubelet's GetPodStatus: the read side, shared with whoever only reads. */
  readonly statusReader: PodStatusReader;
}

const NO_OBJECTS: EnvObjects = { configMap: () => undefined, secret: () => undefined };

export function runtimeContext(opts: RuntimeManagerOptions): RuntimeContext {
  const events = opts.events ?? new EventRecorder(opts.clock);
  const objects = opts.objects ?? NO_OBJECTS;
  const imagePuller = new ImagePuller(
    opts.images,
    opts.clock,
    (pod, container, type, reason, message) => events.record(podRef(pod), type, reason, message, container.name),
    {
      secret: (namespace, name) => objects.secret(namespace, name),
      nodeConfigPaths: nodeDockerConfigPaths(opts.rootDir),
      onMissingPullSecrets: (pod, names) => {
        for (const name of names)
          events.record(
            podRef(pod),
            'Warning',
            'FailedToRetrieveImagePullSecret',
            `Unable to retrieve some image pull secrets (${name}); attempting to pull the image may not succeed.`,
          );
      },
    },
  );
  return {
    runtime: opts.runtime,
    images: opts.images,
    clock: opts.clock,
    events,
    logRoot: opts.logRoot,
    rootDir: opts.rootDir,
    agent: opts.agent ?? 'run',
    hostIP: opts.hostIP,
    objects,
    node: opts.node ?? { cpuCores: cpus().length, memoryBytes: totalmem() },
    allowPrivileged: opts.allowPrivileged ?? false,
    volumes: opts.volumes,
    imagePuller,
    statusReader: new PodStatusReader({ runtime: opts.runtime, clock: opts.clock }),
  };
}

export function podRef(pod: IPod): PodRef {
  const m = podMeta(pod);
  return { uid: m.uid!, namespace: m.namespace ?? 'default', name: m.name! };
}
