import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { ImageService, RuntimeService } from '../cri/client.js';
import { ignoreNotFound } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import { errorMessage } from '../errors.js';
import { EventRecorder, type PodRef } from '../events.js';
import { Backoff, CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS } from '../util/backoff.js';
import { computePodActions, noProbeFailures, type ContainerToStart, type PodActions, type ProbeVerdicts } from './actions.js';
import { containerConfig, podLogDirectory, podSandboxConfig } from './config.js';
import { ImagePuller, StartContainerError } from './images.js';
import * as L from './labels.js';
import { newerFirst, type RuntimeContainerStatus, type RuntimePodStatus, type RuntimeSandboxStatus } from './types.js';

/** The kubelet's minimum grace when killing (minimumGracePeriodInSeconds). */
export const MINIMUM_GRACE_PERIOD_SECONDS = 2;

const nsToMs = (ns: number | undefined): number | undefined => (ns ? Math.floor(ns / 1e6) : undefined);

export interface SyncStepResult {
  action: 'KillPod' | 'CreatePodSandbox' | 'KillContainer' | 'StartContainer';
  target: string;
  error?: string;
  reason?: string;
}

export interface SyncPodResult {
  actions: PodActions;
  steps: SyncStepResult[];
  /** Per container name: why it is waiting (cleared when it started). */
  waiting: Map<string, { reason: string; message: string } | null>;
  /** When a backoff ends, the loop should sync again then. */
  retryAfterMs?: number;
  /** First hard error, if any step failed for a reason other than a backoff. */
  error?: string;
}

export interface RuntimeManagerOptions {
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  logRoot: string;
  /** Recorded on sandboxes: housekeeping removes only what its own agent made. */
  agent?: string;
  /** Where the kubelet's events go (Created, Started, Killing, BackOff, ...). */
  events?: EventRecorder;
}

/**
 * The kubelet's kubeGenericRuntimeManager: reads a pod's state from the CRI
 * and carries out computePodActions through it.
 */
export class RuntimeManager {
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly crashBackoff: Backoff;
  readonly imagePuller: ImagePuller;
  private readonly clock: Clock;
  private readonly logRoot: string;
  readonly agent: string;
  readonly events: EventRecorder;

  constructor(opts: RuntimeManagerOptions) {
    this.agent = opts.agent ?? 'run';
    this.events = opts.events ?? new EventRecorder(opts.clock);
    this.runtime = opts.runtime;
    this.images = opts.images;
    this.clock = opts.clock;
    this.logRoot = opts.logRoot;
    this.crashBackoff = new Backoff(opts.clock, CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS);
    this.imagePuller = new ImagePuller(opts.images, opts.clock);
  }

  /** The runtime's view of one pod, from its labelled sandboxes and containers. */
  async getPodStatus(uid: string, name: string, namespace: string, opts: { all?: boolean } = {}): Promise<RuntimePodStatus> {
    // podctl's own objects only, unless a debugging command asks for every agent's.
    const selector: Record<string, string> = opts.all ? { [L.POD_UID_LABEL]: uid } : { [L.POD_UID_LABEL]: uid, [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
    const [sandboxes, containers] = await Promise.all([
      this.runtime.listPodSandbox({ labelSelector: selector }),
      this.runtime.listContainers({ labelSelector: selector }),
    ]);
    const sandboxStatuses = await Promise.all(sandboxes.map((s) => this.sandboxStatus(s)));
    const containerStatuses = await Promise.all(containers.map((c) => this.containerStatus(c)));
    const live = sandboxStatuses.filter((s): s is RuntimeSandboxStatus => s !== undefined).sort((a, b) => b.createdAt - a.createdAt || b.attempt - a.attempt);
    const ready = live.find((s) => s.state === 'ready');
    return {
      uid,
      name,
      namespace,
      ips: ready?.ip ? [ready.ip, ...ready.additionalIps] : [],
      sandboxes: live,
      containers: containerStatuses.filter((c): c is RuntimeContainerStatus => c !== undefined).sort(newerFirst),
      timestamp: this.clock.now(),
    };
  }

  private async sandboxStatus(sandbox: T.PodSandbox): Promise<RuntimeSandboxStatus | undefined> {
    const res = await ignoreNotFound(this.runtime.podSandboxStatus(sandbox.id));
    if (!res) return undefined;
    const status = res.status;
    return {
      id: sandbox.id,
      state: sandbox.state === 'SANDBOX_READY' ? 'ready' : 'notready',
      createdAt: nsToMs(sandbox.createdAt) ?? 0,
      attempt: sandbox.metadata?.attempt ?? 0,
      ip: status?.network?.ip || undefined,
      additionalIps: (status?.network?.additionalIps ?? []).map((i) => i.ip).filter(Boolean),
      hostNetwork: status?.linux?.namespaces?.options?.network === 'NODE',
    };
  }

  private async containerStatus(container: T.Container): Promise<RuntimeContainerStatus | undefined> {
    const res = await ignoreNotFound(this.runtime.containerStatus(container.id));
    return res ? toRuntimeContainerStatus(container, res.status ?? undefined) : undefined;
  }

  /** SyncPod: compute the actions and carry them out, one step at a time, as the kubelet does. */
  async syncPod(pod: IPod, status: RuntimePodStatus, probes: ProbeVerdicts = noProbeFailures): Promise<SyncPodResult> {
    const actions = computePodActions(pod, status, probes);
    const result: SyncPodResult = { actions, steps: [], waiting: new Map() };
    const fail = (step: SyncStepResult) => {
      result.steps.push(step);
      if (!result.error) result.error = `${step.action} ${step.target}: ${step.error}`;
    };

    if (actions.killPod) {
      try {
        await this.killPod(pod, status);
        result.steps.push({ action: 'KillPod', target: pod.metadata!.name! });
      } catch (err) {
        fail({ action: 'KillPod', target: pod.metadata!.name!, error: errorMessage(err) });
        return result;
      }
      if (!actions.createSandbox) return result;
    } else {
      for (const kill of actions.containersToKill) {
        try {
          await this.killContainer(pod, kill.id, kill.name, kill.message);
          result.steps.push({ action: 'KillContainer', target: kill.name, reason: kill.reason });
        } catch (err) {
          fail({ action: 'KillContainer', target: kill.name, error: errorMessage(err) });
          return result;
        }
      }
    }

    let sandboxId = actions.sandboxId;
    const sandboxConfig = podSandboxConfig(pod, actions.attempt, this.logRoot, this.agent);
    if (actions.createSandbox) {
      try {
        await mkdir(podLogDirectory(this.logRoot, pod), { recursive: true, mode: 0o755 });
        sandboxId = await this.runtime.runPodSandbox(sandboxConfig);
        result.steps.push({ action: 'CreatePodSandbox', target: pod.metadata!.name! });
      } catch (err) {
        fail({ action: 'CreatePodSandbox', target: pod.metadata!.name!, error: errorMessage(err), reason: 'CreatePodSandboxError' });
        return result;
      }
    }
    if (!sandboxId) return result;

    const inits = pod.spec?.initContainers ?? [];
    const start = async (item: ContainerToStart, container: IContainer) => {
      try {
        await this.startContainer(pod, container, item, sandboxId!, sandboxConfig, status);
        result.waiting.set(item.name, null);
        result.steps.push({ action: 'StartContainer', target: item.name });
        return true;
      } catch (err) {
        const reason = err instanceof StartContainerError ? err.reason : 'RunContainerError';
        result.waiting.set(item.name, { reason, message: errorMessage(err) });
        const backoff = reason === 'CrashLoopBackOff' || reason === 'ImagePullBackOff';
        this.events.record(podRef(pod), 'Warning', backoff ? 'BackOff' : 'Failed', errorMessage(err), item.name);
        const step: SyncStepResult = { action: 'StartContainer', target: item.name, error: errorMessage(err), reason };
        if (backoff) result.steps.push(step);
        else fail(step);
        return false;
      }
    };
    for (const item of actions.initContainersToStart) {
      // Init containers go one at a time: stop at the first that could not start.
      if (!(await start(item, inits[item.index]!))) return this.withRetry(result, pod, status);
    }
    for (const item of actions.containersToStart) {
      await start(item, pod.spec!.containers[item.index]!);
    }
    return this.withRetry(result, pod, status);
  }

  /** Sets retryAfterMs to when the nearest backoff ends, so the loop syncs again then. */
  private withRetry(result: SyncPodResult, pod: IPod, status: RuntimePodStatus): SyncPodResult {
    let soonest: number | undefined;
    for (const [name, waiting] of result.waiting) {
      if (!waiting) continue;
      let left: number | undefined;
      if (waiting.reason === 'CrashLoopBackOff') {
        const last = lastExited(status, name);
        if (last) left = this.crashBackoff.remainingSince(crashKey(pod, last), last.finishedAt ?? 0);
      } else if (waiting.reason === 'ImagePullBackOff' || waiting.reason === 'ErrImagePull') {
        const image = [...(pod.spec?.initContainers ?? []), ...pod.spec!.containers].find((c) => c.name === name)?.image;
        if (image) left = this.imagePuller.backoff.remainingSinceUpdate(`${pod.metadata!.uid}/${image}`, this.clock.now());
      }
      if (left !== undefined && (soonest === undefined || left < soonest)) soonest = left;
    }
    if (soonest !== undefined) result.retryAfterMs = Math.max(soonest, 100);
    return result;
  }

  private async startContainer(
    pod: IPod,
    container: IContainer,
    item: ContainerToStart,
    sandboxId: string,
    sandboxConfig: T.PodSandboxConfigInput,
    status: RuntimePodStatus,
  ): Promise<void> {
    const previous = status.containers.find((c) => c.name === container.name);
    const last = lastExited(status, container.name);
    // CrashLoopBackOff: wait out the delay measured from the last exit.
    if (last && previous?.state !== 'running') {
      const key = crashKey(pod, last);
      const finishedAt = last.finishedAt ?? 0;
      if (this.crashBackoff.isInBackOffSince(key, finishedAt)) {
        const delay = Math.round(this.crashBackoff.get(key) / 1000);
        throw new StartContainerError(
          'CrashLoopBackOff',
          `back-off ${delay}s restarting failed container=${container.name} pod=${pod.metadata!.name}_${pod.metadata!.namespace}(${pod.metadata!.uid})`,
        );
      }
      this.crashBackoff.next(key, finishedAt);
    }
    const imageRef = await this.imagePuller.ensureImageExists(pod, container, sandboxConfig, this.clock.now());
    const restartCount = previous ? previous.restartCount + 1 : 0;
    await mkdir(join(podLogDirectory(this.logRoot, pod), container.name), { recursive: true, mode: 0o755 });
    const config = containerConfig({ pod, container, kind: item.kind, restartCount, imageRef });
    let id: string;
    try {
      id = await this.runtime.createContainer(sandboxId, config, sandboxConfig);
    } catch (err) {
      throw new StartContainerError('CreateContainerError', errorMessage(err));
    }
    this.events.record(podRef(pod), 'Normal', 'Created', `Created container ${container.name}`, container.name);
    try {
      await this.runtime.startContainer(id);
    } catch (err) {
      throw new StartContainerError('RunContainerError', errorMessage(err));
    }
    this.events.record(podRef(pod), 'Normal', 'Started', `Started container ${container.name}`, container.name);
    await this.pruneDeadContainers(status, container.name);
  }

  /** Keeps only the newest dead instance of a container (MaxPerPodContainer 1). */
  private async pruneDeadContainers(status: RuntimePodStatus, name: string): Promise<void> {
    const dead = status.containers.filter((c) => c.name === name && c.state === 'exited').sort(newerFirst);
    for (const old of dead.slice(1)) {
      await ignoreNotFound(this.runtime.removeContainer(old.id));
    }
  }

  private gracePeriod(pod: IPod, override?: number): number {
    const grace = override ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    return Math.max(grace, MINIMUM_GRACE_PERIOD_SECONDS);
  }

  async killContainer(pod: IPod, containerId: string, name: string, message: string, gracePeriodOverride?: number): Promise<void> {
    this.events.record(podRef(pod), 'Normal', 'Killing', message || `Stopping container ${name}`, name);
    await ignoreNotFound(this.runtime.stopContainer(containerId, this.gracePeriod(pod, gracePeriodOverride)));
  }

  /** Stops every running container, then the sandboxes (the kubelet's KillPod). */
  async killPod(pod: IPod, status: RuntimePodStatus, gracePeriodOverride?: number): Promise<void> {
    const running = status.containers.filter((c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown');
    // App containers first, then sidecars, as the kubelet orders termination.
    const apps = running.filter((c) => c.kind !== 'sidecar');
    const sidecars = running.filter((c) => c.kind === 'sidecar');
    await Promise.all(apps.map((c) => this.killContainer(pod, c.id, c.name, `Stopping container ${c.name}`, gracePeriodOverride)));
    await Promise.all(sidecars.map((c) => this.killContainer(pod, c.id, c.name, `Stopping container ${c.name}`, gracePeriodOverride)));
    for (const sandbox of status.sandboxes) {
      if (sandbox.state !== 'ready') continue;
      await ignoreNotFound(this.runtime.stopPodSandbox(sandbox.id));
    }
  }

  /** The grace period recorded on a pod's containers, for pods no source describes any more. */
  graceFromRuntime(status: RuntimePodStatus): number {
    const graces = status.containers.map((c) => c.terminationGracePeriod).filter((g): g is number => g !== undefined);
    return graces.length ? Math.max(...graces) : 30;
  }

  /** Kills a pod known only from the runtime (no spec): every container, then its sandboxes. */
  async killPodByStatus(status: RuntimePodStatus, gracePeriodSeconds: number): Promise<void> {
    const ghost = { metadata: { name: status.name, namespace: status.namespace, uid: status.uid }, spec: { containers: [], terminationGracePeriodSeconds: gracePeriodSeconds } } as unknown as IPod;
    await this.killPod(ghost, status, gracePeriodSeconds);
  }

  /** Keeps the newest dead instance per pod and container name; returns how many were removed. */
  async removeDeadContainers(containers: T.Container[], keepPod: (uid: string) => boolean): Promise<number> {
    const groups = new Map<string, T.Container[]>();
    for (const c of containers) {
      if (c.state !== 'CONTAINER_EXITED') continue;
      const uid = c.labels[L.POD_UID_LABEL];
      if (!uid || !keepPod(uid)) continue;
      const key = `${uid}/${c.labels[L.CONTAINER_NAME_LABEL]}`;
      groups.set(key, [...(groups.get(key) ?? []), c]);
    }
    let removed = 0;
    for (const dead of groups.values()) {
      dead.sort((a, b) => b.createdAt - a.createdAt);
      for (const old of dead.slice(1)) {
        await ignoreNotFound(this.runtime.removeContainer(old.id));
        removed++;
      }
    }
    return removed;
  }

  async pruneAllDead(status: RuntimePodStatus): Promise<void> {
    for (const name of new Set(status.containers.map((c) => c.name))) await this.pruneDeadContainers(status, name);
  }

  /** Removes every container and sandbox of a pod that was killed. */
  async removePod(status: RuntimePodStatus): Promise<void> {
    for (const c of status.containers) {
      await ignoreNotFound(this.runtime.removeContainer(c.id));
    }
    for (const s of status.sandboxes) {
      await ignoreNotFound(this.runtime.stopPodSandbox(s.id));
      await ignoreNotFound(this.runtime.removePodSandbox(s.id));
    }
  }
}

export function podRef(pod: IPod): PodRef {
  const m = pod.metadata!;
  return { uid: m.uid!, namespace: m.namespace ?? 'default', name: m.name! };
}

function lastExited(status: RuntimePodStatus, name: string): RuntimeContainerStatus | undefined {
  return status.containers.filter((c) => c.name === name && c.state === 'exited').sort(newerFirst)[0];
}

/** Keyed as the kubelet keys CrashLoopBackOff: a spec change starts a fresh backoff. */
function crashKey(pod: IPod, c: RuntimeContainerStatus): string {
  const m = pod.metadata!;
  return `${m.name}_${m.namespace}_${m.uid}_${c.name}_${c.hash}`;
}

const STATE: Record<string, RuntimeContainerStatus['state']> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

/** Rebuilds what podctl knows of a container from its CRI labels, annotations and status. */
export function toRuntimeContainerStatus(container: T.Container, status?: T.ContainerStatus): RuntimeContainerStatus {
  const annotations = status?.annotations && Object.keys(status.annotations).length ? status.annotations : container.annotations;
  const kind = annotations[L.CONTAINER_KIND_ANNOTATION];
  return {
    id: container.id,
    name: container.labels[L.CONTAINER_NAME_LABEL] ?? container.metadata?.name ?? '',
    state: STATE[status?.state ?? container.state] ?? 'unknown',
    createdAt: nsToMs(status?.createdAt ?? container.createdAt) ?? 0,
    startedAt: nsToMs(status?.startedAt),
    finishedAt: nsToMs(status?.finishedAt),
    exitCode: status && (status.state === 'CONTAINER_EXITED' || status.finishedAt) ? status.exitCode : undefined,
    image: specImage(annotations[L.CONTAINER_SPEC_ANNOTATION]) || container.image?.userSpecifiedImage || container.image?.image || '',
    imageRef: status?.imageRef || container.imageRef,
    imageId: container.imageRef,
    hash: annotations[L.CONTAINER_HASH_ANNOTATION] ?? '',
    restartCount: Number(annotations[L.CONTAINER_RESTART_COUNT_ANNOTATION] ?? 0) || 0,
    reason: status?.reason || undefined,
    message: status?.message || undefined,
    specJSON: annotations[L.CONTAINER_SPEC_ANNOTATION],
    terminationGracePeriod: Number(annotations[L.POD_TERMINATION_GRACE_PERIOD_ANNOTATION]) || undefined,
    kind: kind === 'init' || kind === 'sidecar' ? kind : 'app',
    logPath: status?.logPath || undefined,
  };
}

/** The image as the pod spec named it, from the spec copy in the container's annotations. */
function specImage(specJSON: string | undefined): string | undefined {
  if (!specJSON) return undefined;
  try {
    const image = (JSON.parse(specJSON) as { image?: unknown }).image;
    return typeof image === 'string' ? image : undefined;
  } catch {
    return undefined;
  }
}
