import type { IContainer, IEphemeralContainer, IPod } from 'kubernetes-models/v1';
import { newerFirst, type RuntimeContainerStatus, type RuntimePodStatus } from '../container/types.js';
import { errorMessage } from '../errors.js';
import { Backoff, CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS } from '../util/backoff.js';
import { podMeta } from '../util/pod-key.js';
import { computePodActions, noProbeFailures, type ContainerToStart, type PodActions, type ProbeVerdicts } from './actions.js';
import { ContainerGC, DEFAULT_CONTAINER_GC, type ContainerGCPolicy } from './container-gc.js';
import { Containers, graceFromRuntime, type KillTarget } from './containers.js';
import { podRef, runtimeContext, type RuntimeContext, type RuntimeManagerOptions } from './context.js';
import { pullKey, StartContainerError, type ImagePuller } from './images.js';
import { PodFiles } from './pod-files.js';
import type { ExpectedIds, PodStatusReader } from './pod-status.js';
import { formatResourceChanges, updateContainerResources } from './resize.js';
import { setUpPodVolumes } from './run-options.js';
import { Sandboxes } from './sandbox.js';

// What moved to the parts, under the names the rest of the core imports from here.
export { DEFAULT_CONTAINER_GC, graceFromRuntime, podRef };
export type { ContainerGCPolicy, KillTarget, RuntimeManagerOptions };
export { MINIMUM_GRACE_PERIOD_SECONDS, POST_START_TIMEOUT_SECONDS } from './containers.js';

export interface SyncStepResult {
  action: 'KillPod' | 'CreatePodSandbox' | 'KillContainer' | 'ResizeContainer' | 'StartContainer';
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
  /** An in-place resize that could not be applied, and why (the PodResizeInProgress condition says it). */
  resizeError?: string;
  /** A resize refused as the API server refuses it (a QoS class change): PodResizePending, Infeasible. */
  resizeRefused?: string;
  /** The sandbox the containers went into, and the containers created: the read after the sync expects them. */
  sandboxId?: string;
  createdContainerIds: string[];
}

/** A resize that could not be applied is tried again after this long. */
const RESIZE_RETRY_MS = 5000;

/**
 * The kubelet's kubeGenericRuntimeManager: reads a pod's state from the CRI and carries out
 * computePodActions through it (SyncPod, KillPod). Its parts, as the kubelet splits them: the
 * sandbox (sandbox.ts), containers and their hooks (containers.ts, lifecycle.ts), container GC
 * (container-gc.ts) and the pod's files on the host (pod-files.ts).
 */
export class RuntimeManager {
  readonly runtime: RuntimeContext['runtime'];
  readonly images: RuntimeContext['images'];
  readonly crashBackoff: Backoff;
  readonly imagePuller: ImagePuller;
  readonly containerGC: ContainerGCPolicy;
  readonly agent: string;
  readonly events: RuntimeContext['events'];
  /** The kubelet's GetPodStatus: the read side, shared with whoever only reads. */
  readonly statusReader: PodStatusReader;
  private readonly ctx: RuntimeContext;
  private readonly files: PodFiles;
  private readonly sandboxes: Sandboxes;
  private readonly containers: Containers;
  private readonly gc: ContainerGC;

  constructor(opts: RuntimeManagerOptions) {
    const ctx = runtimeContext(opts);
    this.ctx = ctx;
    this.runtime = ctx.runtime;
    this.images = ctx.images;
    this.agent = ctx.agent;
    this.events = ctx.events;
    this.imagePuller = ctx.imagePuller;
    this.statusReader = ctx.statusReader;
    this.containerGC = { ...DEFAULT_CONTAINER_GC, ...opts.containerGC };
    this.crashBackoff = new Backoff(opts.clock, CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS);
    this.files = new PodFiles(opts.rootDir, opts.logRoot, ctx.statusReader.specCopies);
    this.gc = new ContainerGC(ctx.runtime, this.containerGC, ctx.statusReader);
    this.sandboxes = new Sandboxes(ctx, this.files, opts.runtimeClasses, opts.defaultRuntimeHandler ?? '');
    this.containers = new Containers(ctx, this.files, this.gc);
  }

  getPodStatus(
    uid: string,
    name: string,
    namespace: string,
    opts: { all?: boolean; expected?: ExpectedIds } = {},
  ): Promise<RuntimePodStatus> {
    return this.statusReader.getPodStatus(uid, name, namespace, opts);
  }

  /** SyncPod: compute the actions and carry them out, one step at a time, as the kubelet does. */
  async syncPod(pod: IPod, status: RuntimePodStatus, probes: ProbeVerdicts = noProbeFailures): Promise<SyncPodResult> {
    try {
      return await this.syncPodSteps(pod, status, probes);
    } finally {
      this.files.syncDone(podMeta(pod).uid);
    }
  }

  private async syncPodSteps(pod: IPod, status: RuntimePodStatus, probes: ProbeVerdicts): Promise<SyncPodResult> {
    const actions = computePodActions(pod, status, probes);
    const result: SyncPodResult = { actions, steps: [], waiting: new Map(), createdContainerIds: [] };
    const fail = (step: SyncStepResult) => {
      result.steps.push(step);
      if (!result.error) result.error = `${step.action} ${step.target}: ${step.error}`;
    };

    if (actions.killPod) {
      try {
        await this.killPod(pod, status);
        result.steps.push({ action: 'KillPod', target: podMeta(pod).name });
      } catch (err) {
        fail({ action: 'KillPod', target: podMeta(pod).name, error: errorMessage(err) });
        return result;
      }
      if (!actions.createSandbox) return result;
    } else {
      for (const kill of actions.containersToKill) {
        try {
          await this.containers.kill(pod, kill, kill.message, undefined, kill.reason === 'Unhealthy');
          result.steps.push({ action: 'KillContainer', target: kill.name, reason: kill.reason });
        } catch (err) {
          fail({ action: 'KillContainer', target: kill.name, error: errorMessage(err) });
          return result;
        }
      }
    }

    for (const resize of actions.containersToResize) {
      if (resize.refused) {
        result.resizeRefused = resize.refused;
        this.events.record(podRef(pod), 'Warning', 'ResizeRefused', `Container ${resize.name}: ${resize.refused}`, resize.name);
        continue;
      }
      try {
        await updateContainerResources(this.runtime, pod, resize, this.ctx.node.memoryBytes);
        const message = `Container ${resize.name} resized in place: ${formatResourceChanges(resize.changes)}`;
        this.events.record(podRef(pod), 'Normal', 'Resized', message, resize.name);
        result.steps.push({ action: 'ResizeContainer', target: resize.name });
      } catch (err) {
        // Not applied; the container keeps what it has, and the next sync tries again.
        result.resizeError = errorMessage(err);
        result.steps.push({ action: 'ResizeContainer', target: resize.name, error: errorMessage(err), reason: 'ResizeError' });
        result.retryAfterMs = RESIZE_RETRY_MS;
      }
    }

    const starting = actions.createSandbox || actions.initContainersToStart.length > 0 || actions.containersToStart.length > 0;
    if (starting && !this.ctx.allowPrivileged) {
      const privileged = [...(pod.spec?.initContainers ?? []), ...pod.spec!.containers].filter((c) => c.securityContext?.privileged);
      if (privileged.length) {
        // Refused before anything is created: no sandbox for a pod that may not run.
        const message = `container ${privileged[0]!.name} is privileged, and podctl runs without --allow-privileged`;
        for (const c of privileged) result.waiting.set(c.name, { reason: 'CreateContainerConfigError', message });
        this.events.record(podRef(pod), 'Warning', 'Failed', `Error: ${message}`, privileged[0]!.name);
        fail({ action: 'CreatePodSandbox', target: podMeta(pod).name, error: message, reason: 'CreateContainerConfigError' });
        return result;
      }
    }
    let podVolumes: Awaited<ReturnType<typeof setUpPodVolumes>>;
    try {
      podVolumes = await setUpPodVolumes(this.ctx.volumes, pod, status.ips);
    } catch (err) {
      this.events.record(podRef(pod), 'Warning', 'FailedMount', errorMessage(err));
      fail({ action: 'CreatePodSandbox', target: podMeta(pod).name, error: errorMessage(err), reason: 'FailedMount' });
      return result;
    }

    // Nothing to create or start (a pod as it should be, the periodic resync's usual case): no sandbox config to build.
    if (!starting) return result;
    let sandboxId = actions.sandboxId;
    const sandboxConfig = await this.sandboxes.config(pod, actions.attempt);
    const inits = pod.spec?.initContainers ?? [];
    let imagesChecked: ReturnType<ImagePuller['checkPresent']> | undefined;
    if (actions.createSandbox) {
      try {
        sandboxId = await this.sandboxes.create(pod, sandboxConfig, () => {
          // The image checks run while the sandbox is created (its CNI ADD is most of a start), not after it.
          imagesChecked = this.imagePuller.checkPresent([
            ...actions.initContainersToStart.map((i) => inits[i.index]!),
            ...actions.containersToStart.map((i) => pod.spec!.containers[i.index]!),
          ]);
        });
        result.steps.push({ action: 'CreatePodSandbox', target: podMeta(pod).name });
      } catch (err) {
        this.events.record(podRef(pod), 'Warning', 'FailedCreatePodSandBox', `Failed to create pod sandbox: ${errorMessage(err)}`);
        fail({ action: 'CreatePodSandbox', target: podMeta(pod).name, error: errorMessage(err), reason: 'CreatePodSandboxError' });
        return result;
      }
    }
    if (!sandboxId) return result;
    result.sandboxId = sandboxId;
    // The pod's IPs, asked once for all its containers; for a sandbox just made, asked now, while the
    // first container's image check and directories are under way.
    let ips: Promise<string[]> | undefined;
    const podIPs = () => {
      if (!ips) {
        ips = this.sandboxes.podIPs(pod, sandboxId!, status);
        ips.catch(() => undefined);
      }
      return ips;
    };
    if (actions.createSandbox) void podIPs();

    const start = async (item: ContainerToStart, container: IContainer) => {
      try {
        // A check made before this sync's first container started is used once; later ones ask again.
        const checked = imagesChecked?.get(container.image ?? '');
        imagesChecked?.delete(container.image ?? '');
        this.doBackOff(pod, container, status);
        await this.containers.start(
          pod,
          container,
          item.kind,
          { sandboxId: sandboxId!, sandboxConfig, podIPs },
          status,
          podVolumes,
          checked,
          (id) => result.createdContainerIds.push(id),
        );
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

  /** The kubelet's doBackOff: CrashLoopBackOff waits out the delay measured from the last exit. */
  private doBackOff(pod: IPod, container: IContainer, status: RuntimePodStatus): void {
    const previous = status.containers.find((c) => c.name === container.name);
    const last = lastExited(status, container.name);
    if (!last || previous?.state === 'running') return;
    const key = crashKey(pod, last);
    const finishedAt = last.finishedAt ?? 0;
    if (this.crashBackoff.isInBackOffSince(key, finishedAt)) {
      const delay = Math.round(this.crashBackoff.get(key) / 1000);
      const m = podMeta(pod);
      throw new StartContainerError(
        'CrashLoopBackOff',
        `back-off ${delay}s restarting failed container=${container.name} pod=${m.name}_${m.namespace}(${m.uid})`,
      );
    }
    this.crashBackoff.next(key, finishedAt);
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
        if (image) left = this.imagePuller.backoff.remainingSinceUpdate(pullKey(pod, image), this.ctx.clock.now());
      }
      if (left !== undefined && (soonest === undefined || left < soonest)) soonest = left;
    }
    if (soonest !== undefined) result.retryAfterMs = Math.max(soonest, 100);
    return result;
  }

  /**
   * The kubelet's killContainer: the Killing event, the preStop hook within
   * the grace period, then StopContainer with what is left of it (at least
   * 2 s), after which the runtime sends SIGKILL.
   */
  killContainer(
    pod: IPod,
    target: KillTarget,
    message: string,
    gracePeriodOverride?: number,
    probeKill = false,
    terminationMessage?: string,
  ): Promise<void> {
    return this.containers.kill(pod, target, message, gracePeriodOverride, probeKill, terminationMessage);
  }

  /**
   * Stops every running container, then the sandboxes (the kubelet's KillPod); the containers at most
   * MAX_KILLS_IN_FLIGHT_PER_POD at a time, within the pod's one grace period (Containers.killAll).
   */
  async killPod(pod: IPod, status: RuntimePodStatus, gracePeriodOverride?: number): Promise<void> {
    await this.containers.killAll(pod, status, gracePeriodOverride);
    await this.sandboxes.stopReady(status);
  }

  /** Kills a pod known only from the runtime (no spec): every container, then its sandboxes. */
  async killPodByStatus(status: RuntimePodStatus, gracePeriodSeconds: number): Promise<void> {
    const ghost = {
      metadata: { name: status.name, namespace: status.namespace, uid: status.uid },
      spec: { containers: [], terminationGracePeriodSeconds: gracePeriodSeconds },
    } as unknown as IPod;
    await this.killPod(ghost, status, gracePeriodSeconds);
  }

  /** Keeps the newest dead instance per pod and container name; returns how many were removed. */
  removeDeadContainers(containers: Parameters<ContainerGC['removeDeadContainers']>[0], keepPod: (uid: string) => boolean): Promise<number> {
    return this.gc.removeDeadContainers(containers, keepPod);
  }

  pruneAllDead(status: RuntimePodStatus): Promise<void> {
    return this.gc.pruneAllDead(status);
  }

  /**
   * Starts an ephemeral container in the pod's ready sandbox, as SyncPod starts each of
   * EphemeralContainersToStart: image, log directory, environment and mounts as for any of its
   * containers, in the PID namespace of targetContainerName's running container when it names one.
   */
  async startEphemeralContainer(pod: IPod, container: IEphemeralContainer, status: RuntimePodStatus): Promise<void> {
    const sandbox = status.sandboxes.find((s) => s.state === 'ready');
    if (!sandbox) throw new StartContainerError('CreateContainerConfigError', `pod ${podMeta(pod).name} has no ready sandbox`);
    let targetId: string | undefined;
    const target = container.targetContainerName;
    if (target) {
      targetId = status.containers.filter((c) => c.name === target && c.state === 'running').sort(newerFirst)[0]?.id;
      if (!targetId) throw new StartContainerError('CreateContainerConfigError', `target container ${target} is not running`);
    }
    const sandboxConfig = await this.sandboxes.config(pod, sandbox.attempt);
    const podVolumes = await setUpPodVolumes(this.ctx.volumes, pod, status.ips);
    const podIPs = () => this.sandboxes.podIPs(pod, sandbox.id, status);
    // The spec copy keeps targetContainerName: the API lists the container as it was asked for.
    await this.containers.start(
      pod,
      container as IContainer,
      'app',
      { sandboxId: sandbox.id, sandboxConfig, podIPs },
      status,
      podVolumes,
      undefined,
      undefined,
      {
        targetId,
      },
    );
  }

  /** Removes every container and sandbox of a pod that was killed, and its host state. */
  async removePod(status: RuntimePodStatus): Promise<void> {
    await this.gc.removeContainers(status);
    await this.sandboxes.removeAll(status);
    if (status.uid) await this.files.removePodDirectories(status);
  }
}

function lastExited(status: RuntimePodStatus, name: string): RuntimeContainerStatus | undefined {
  return status.containers.filter((c) => c.name === name && c.state === 'exited').sort(newerFirst)[0];
}

/** Keyed as the kubelet keys CrashLoopBackOff: a spec change starts a fresh backoff. */
function crashKey(pod: IPod, c: RuntimeContainerStatus): string {
  const m = podMeta(pod);
  return `${m.name}_${m.namespace}_${m.uid}_${c.name}_${c.hash}`;
}
