/**
 * The runtime's view of one pod, rebuilt from CRI sandboxes and containers
 * (the kubelet's kubecontainer.PodStatus). Times are epoch milliseconds.
 */
export type RuntimeContainerState = 'created' | 'running' | 'exited' | 'unknown';

export interface RuntimeContainerStatus {
  id: string;
  name: string;
  state: RuntimeContainerState;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  exitCode?: number;
  /** Image as requested in the spec. */
  image: string;
  /** Image reference the runtime resolved (digest). */
  imageRef: string;
  imageId: string;
  hash: string;
  restartCount: number;
  reason?: string;
  message?: string;
  /** The host file bind-mounted at terminationMessagePath, as the runtime reports the mount. */
  terminationMessageFile?: string;
  /** The compact spec copy (from the container's annotation or its pod directory), for diffs. */
  specJSON?: string;
  /** The cgroup settings the runtime reports in effect (CRI ContainerStatus.resources), for in-place resize. */
  resources?: { cpuShares: number; cpuQuota: number; cpuPeriod: number; memoryLimitInBytes: number };
  kind: 'init' | 'sidecar' | 'app';
  logPath?: string;
  /** The pod's grace period when this container was created (seconds). */
  terminationGracePeriod?: number;
  /** The preStop handler recorded at creation (JSON), for pods known only from the runtime. */
  preStopJSON?: string;
}

export interface RuntimeSandboxStatus {
  id: string;
  state: 'ready' | 'notready';
  createdAt: number;
  attempt: number;
  ip?: string;
  additionalIps: string[];
  /** Network namespace mode as the runtime reports it (host network or pod). */
  hostNetwork: boolean;
  /** The pod's state directory and log directory as recorded at sandbox creation (any root dir, any log root). */
  podDir?: string;
  logDirectory?: string;
}

export interface RuntimePodStatus {
  uid: string;
  name: string;
  namespace: string;
  ips: string[];
  /** Newest first. */
  sandboxes: RuntimeSandboxStatus[];
  /** Newest first within each container name. */
  containers: RuntimeContainerStatus[];
  /** Debug containers (`podctl debug`), kept apart so that no sync decision sees them. */
  ephemeral?: RuntimeContainerStatus[];
  /** When this view was taken (epoch ms). */
  timestamp: number;
}

export function emptyPodStatus(uid: string, name: string, namespace: string, now: number): RuntimePodStatus {
  return { uid, name, namespace, ips: [], sandboxes: [], containers: [], timestamp: now };
}

/** Newest first: by creation time, then by restart count (equal times happen with a coarse or injected clock). */
export function newerFirst(a: RuntimeContainerStatus, b: RuntimeContainerStatus): number {
  return b.createdAt - a.createdAt || b.restartCount - a.restartCount;
}

/** The newest status of the named container, if any. */
export function findContainerStatus(status: RuntimePodStatus, name: string): RuntimeContainerStatus | undefined {
  let best: RuntimeContainerStatus | undefined;
  for (const c of status.containers) {
    if (c.name !== name) continue;
    if (!best || newerFirst(c, best) < 0) best = c;
  }
  return best;
}
