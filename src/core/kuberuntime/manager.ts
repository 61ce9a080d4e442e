import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { IContainer, ILifecycleHandler, IPod } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { ImageService, RuntimeService } from '../cri/client.js';
import { ignoreNotFound } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import { errorMessage } from '../errors.js';
import { EventRecorder, type PodRef } from '../events.js';
import { Backoff, CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS } from '../util/backoff.js';
import {
  computePodActions,
  noProbeFailures,
  type ContainerToResize,
  type ContainerToStart,
  type PodActions,
  type ProbeVerdicts,
} from './actions.js';
import { containerConfig, managedHostsFile, oomScoreAdj, podLogDirectory, podLogDirectoryName, podSandboxConfig } from './config.js';
import { ImagePuller, StartContainerError } from './images.js';
import { runHandler, type Handler } from '../prober/handlers.js';
import { makeEnvironmentVariables, type EnvObjects, type NodeAllocatable } from './env.js';
import { removePodDirectory, type PodVolumes, type VolumeManager } from '../volumes/index.js';
import { checkComponent, removeBelow, safeJoin, UnsafePathError } from '../util/safe-path.js';
import * as L from './labels.js';
import type { RuntimeClassRef } from '../objects.js';
import { runtimeClassNotFound } from '../pod/references.js';
import { newerFirst, type RuntimeContainerStatus, type RuntimePodStatus } from '../container/types.js';
import { PodStatusReader, type ExpectedIds } from './pod-status.js';
import { podMeta } from '../util/pod-key.js';
import { nodeDockerConfigPaths } from '../credentials/keyring.js';
import { formatResourceChanges } from './resize.js';
import { containerSpecJSON, podSpecJSON } from './hash.js';

/** The kubelet's minimum grace when killing (minimumGracePeriodInSeconds). */
export const MINIMUM_GRACE_PERIOD_SECONDS = 2;

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

/** The kubelet's --maximum-dead-containers-per-container and --maximum-dead-containers (-1: no bound). */
export interface ContainerGCPolicy {
  maxPerPodContainer: number;
  maxContainers: number;
}
export const DEFAULT_CONTAINER_GC: ContainerGCPolicy = { maxPerPodContainer: 1, maxContainers: -1 };

/** A resize that could not be applied is tried again after this long. */
const RESIZE_RETRY_MS = 5000;

const NO_OBJECTS: EnvObjects = { configMap: () => undefined, secret: () => undefined };

/** podctl bounds postStart hooks (the kubelet does not) so that one hook cannot hold a pod's lane forever. */
export const POST_START_TIMEOUT_SECONDS = 30;

/**
 * The most containers of one pod killed at once (preStop hook and StopContainer). The kubelet kills
 * them all at once; containerd 1.6 runs one shim per pod, and 200 stops at once wedged it (its
 * processes gone, the CRI still saying Running). A pod of up to 16 containers is killed as the
 * kubelet would; see killPod for why the bound costs no grace.
 */
export const MAX_KILLS_IN_FLIGHT_PER_POD = 16;

/**
 * Runs fn over the items, at most `limit` at a time, each to its end whatever the others do;
 * rejects with the first failure once all are done (a container that failed to stop does not
 * leave the rest unstopped).
 */
export async function eachBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.err;
}

/** A container to kill: its ID and name, and what is known of its spec. */
export interface KillTarget {
  id: string;
  name: string;
  container?: IContainer;
  /** The preStop handler recorded on the container, when the spec is not known. */
  preStopJSON?: string;
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
  private readonly rootDir?: string;
  private readonly hostIP?: string;
  private readonly objects: EnvObjects;
  private readonly node: NodeAllocatable;
  private readonly allowPrivileged: boolean;
  private readonly volumes?: VolumeManager;
  private readonly runtimeClasses?: RuntimeManagerOptions['runtimeClasses'];
  private readonly defaultRuntimeHandler: string;
  readonly containerGC: ContainerGCPolicy;
  /** The host's resolv.conf and /etc/hosts, read once: pods merge dnsConfig into the first and host-network pods copy the second. */
  private hostFiles?: Promise<{ resolvConf: string; etcHosts: string }>;
  /** Pod directories made during the sync under way, by pod UID (ensurePodDir). */
  private readonly podDirsMade = new Map<string, Promise<string>>();
  readonly agent: string;
  readonly events: EventRecorder;
  /** The kubelet's GetPodStatus: the read side, shared with whoever only reads. */
  readonly statusReader: PodStatusReader;

  constructor(opts: RuntimeManagerOptions) {
    this.agent = opts.agent ?? 'run';
    this.events = opts.events ?? new EventRecorder(opts.clock);
    this.runtime = opts.runtime;
    this.images = opts.images;
    this.clock = opts.clock;
    this.logRoot = opts.logRoot;
    this.rootDir = opts.rootDir;
    this.hostIP = opts.hostIP;
    this.objects = opts.objects ?? NO_OBJECTS;
    this.node = opts.node ?? { cpuCores: cpus().length, memoryBytes: totalmem() };
    this.allowPrivileged = opts.allowPrivileged ?? false;
    this.volumes = opts.volumes;
    this.runtimeClasses = opts.runtimeClasses;
    this.defaultRuntimeHandler = opts.defaultRuntimeHandler ?? '';
    this.containerGC = { ...DEFAULT_CONTAINER_GC, ...opts.containerGC };
    this.crashBackoff = new Backoff(opts.clock, CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS);
    this.imagePuller = new ImagePuller(
      opts.images,
      opts.clock,
      (pod, container, type, reason, message) => this.events.record(podRef(pod), type, reason, message, container.name),
      {
        secret: (namespace, name) => this.objects.secret(namespace, name),
        nodeConfigPaths: nodeDockerConfigPaths(opts.rootDir),
        onMissingPullSecrets: (pod, names) => {
          for (const name of names)
            this.events.record(
              podRef(pod),
              'Warning',
              'FailedToRetrieveImagePullSecret',
              `Unable to retrieve some image pull secrets (${name}); attempting to pull the image may not succeed.`,
            );
        },
      },
    );
    this.statusReader = new PodStatusReader({ runtime: opts.runtime, clock: opts.clock });
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
      this.podDirsMade.delete(podMeta(pod).uid);
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
          await this.killContainer(pod, kill, kill.message, undefined, kill.reason === 'Unhealthy');
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
        await this.resizeContainer(pod, resize);
        result.steps.push({ action: 'ResizeContainer', target: resize.name });
      } catch (err) {
        // Not applied; the container keeps what it has, and the next sync tries again.
        result.resizeError = errorMessage(err);
        result.steps.push({ action: 'ResizeContainer', target: resize.name, error: errorMessage(err), reason: 'ResizeError' });
        result.retryAfterMs = RESIZE_RETRY_MS;
      }
    }

    const starting = actions.createSandbox || actions.initContainersToStart.length > 0 || actions.containersToStart.length > 0;
    if (starting && !this.allowPrivileged) {
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
    // Every sync, as the kubelet: a ConfigMap or Secret that changed reaches the volumes of a running pod too.
    let podVolumes: PodVolumes | undefined;
    if ((pod.spec?.volumes ?? []).length > 0) {
      try {
        if (!this.volumes) throw new Error('volumes need a state directory (--root-dir)');
        podVolumes = await this.volumes.setUpPodVolumes(pod, status.ips);
      } catch (err) {
        // VolumeErrors already speak the kubelet's words ("MountVolume.SetUp failed for volume ...").
        const message = errorMessage(err).startsWith('MountVolume') ? errorMessage(err) : `MountVolume.SetUp failed: ${errorMessage(err)}`;
        this.events.record(podRef(pod), 'Warning', 'FailedMount', message);
        fail({ action: 'CreatePodSandbox', target: podMeta(pod).name, error: message, reason: 'FailedMount' });
        return result;
      }
    }

    // Nothing to create or start (a pod as it should be, the periodic resync's usual case): no sandbox config to build.
    if (!starting) return result;
    let sandboxId = actions.sandboxId;
    const sandboxConfig = podSandboxConfig(
      pod,
      actions.attempt,
      this.logRoot,
      this.agent,
      (await this.readHostFiles()).resolvConf,
      this.rootDir ? this.podDir(podMeta(pod).uid) : undefined,
    );
    const inits = pod.spec?.initContainers ?? [];
    let imagesChecked: Map<string, Promise<T.Image | undefined>> | undefined;
    if (actions.createSandbox) {
      try {
        const handler = this.runtimeHandler(pod);
        await mkdir(podLogDirectory(this.logRoot, pod), { recursive: true, mode: 0o755 });
        // The image checks run while the sandbox is created (its CNI ADD is most of a start), not after it.
        imagesChecked = this.imagePuller.checkPresent([
          ...actions.initContainersToStart.map((i) => inits[i.index]!),
          ...actions.containersToStart.map((i) => pod.spec!.containers[i.index]!),
        ]);
        // The pod spec copy the sandbox names by its hash (spec-copy.ts), there before the sandbox is.
        if (this.rootDir) await this.statusReader.specCopies.writePodSpec(await this.ensurePodDir(podMeta(pod).uid), podSpecJSON(pod));
        sandboxId = await this.runtime.runPodSandbox(sandboxConfig, handler);
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
        ips = this.podIPs(pod, sandboxId!, status);
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
        await this.startContainer(
          pod,
          container,
          item,
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

  /**
   * In-place resize (CRI UpdateContainerResources) with the cgroup settings container start
   * computes. A memory limit below what the container uses now is not applied, as the kubelet decides.
   */
  private async resizeContainer(pod: IPod, r: ContainerToResize): Promise<void> {
    const status = (await this.runtime.containerStatus(r.id)).status;
    const current = Number(status?.resources?.linux?.memoryLimitInBytes ?? 0);
    const wanted = r.linux.memoryLimitInBytes;
    if (wanted > 0 && (current === 0 || wanted < current)) {
      const stats = await this.runtime.containerStats(r.id).catch(() => undefined);
      const usage = Number(stats?.memory?.usageBytes?.value ?? stats?.memory?.workingSetBytes?.value ?? 0);
      if (usage > wanted)
        throw new Error(`attempting to set container ${r.name}'s memory limit (${wanted}) below its current usage (${usage})`);
    }
    await this.runtime.updateContainerResources(r.id, {
      cpuShares: r.linux.cpuShares,
      cpuQuota: r.linux.cpuQuota,
      cpuPeriod: r.linux.cpuPeriod,
      memoryLimitInBytes: r.linux.memoryLimitInBytes,
      oomScoreAdj: oomScoreAdj(pod, r.container, this.node.memoryBytes),
    });
    this.events.record(
      podRef(pod),
      'Normal',
      'Resized',
      `Container ${r.name} resized in place: ${formatResourceChanges(r.changes)}`,
      r.name,
    );
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
        if (image) left = this.imagePuller.backoff.remainingSinceUpdate(`${podMeta(pod).uid}/${image}`, this.clock.now());
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
    sandbox: { sandboxId: string; sandboxConfig: T.PodSandboxConfigInput; podIPs: () => Promise<string[]> },
    status: RuntimePodStatus,
    podVolumes?: PodVolumes,
    imageChecked?: Promise<T.Image | undefined>,
    onCreated?: (id: string) => void,
  ): Promise<void> {
    const { sandboxId, sandboxConfig } = sandbox;
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
          `back-off ${delay}s restarting failed container=${container.name} pod=${podMeta(pod).name}_${podMeta(pod).namespace}(${podMeta(pod).uid})`,
        );
      }
      this.crashBackoff.next(key, finishedAt);
    }
    const imageRef = await this.imagePuller.ensureImageExists(pod, container, sandboxConfig, this.clock.now(), imageChecked);
    const restartCount = previous ? previous.restartCount + 1 : 0;
    await mkdir(join(podLogDirectory(this.logRoot, pod), checkComponent(container.name, 'container name')), {
      recursive: true,
      mode: 0o755,
    });
    const podIPs = await sandbox.podIPs();
    let env: { key: string; value: string }[];
    let mounts: T.MountInput[] = [];
    try {
      const resolved = makeEnvironmentVariables({ pod, container, objects: this.objects, podIPs, hostIP: this.hostIP, node: this.node });
      env = resolved.env;
      if (resolved.skipped.length) {
        this.events.record(
          podRef(pod),
          'Warning',
          'InvalidEnvironmentVariableNames',
          `Keys [${resolved.skipped.join(', ')}] from the EnvFrom were skipped since they are invalid environment variable names.`,
          container.name,
        );
      }
      if (podVolumes && this.volumes)
        mounts = await this.volumes.containerMounts(pod, container, podVolumes, Object.fromEntries(env.map((e) => [e.key, e.value])));
    } catch (err) {
      throw err instanceof StartContainerError ? err : new StartContainerError('CreateContainerConfigError', errorMessage(err));
    }
    const [hosts] = await Promise.all([this.etcHostsMount(pod, container, podIPs), this.verifyRunAsNonRoot(pod, container, imageRef)]);
    if (hosts) mounts.push(hosts);
    // Once nothing can refuse the container: a file made for a container that is never created would stay.
    const [terminationMessageFile, specCopyInPodDir] = await Promise.all([
      this.terminationMessageFile(pod, container, restartCount),
      this.recordSpec(pod, container),
    ]);
    const config = containerConfig({
      pod,
      container,
      kind: item.kind,
      restartCount,
      imageRef,
      terminationMessageFile,
      env,
      mounts,
      memoryCapacityBytes: this.node.memoryBytes,
      specCopyInPodDir,
    });
    let id: string;
    try {
      id = await this.runtime.createContainer(sandboxId, config, sandboxConfig);
    } catch (err) {
      throw new StartContainerError('CreateContainerError', errorMessage(err));
    }
    onCreated?.(id);
    this.events.record(podRef(pod), 'Normal', 'Created', `Created container ${container.name}`, container.name);
    try {
      await this.runtime.startContainer(id);
    } catch (err) {
      throw new StartContainerError('RunContainerError', errorMessage(err));
    }
    this.events.record(podRef(pod), 'Normal', 'Started', `Started container ${container.name}`, container.name);
    await this.pruneDeadContainers(status, container.name, { neverStarted: true });
    const postStart = container.lifecycle?.postStart;
    if (postStart) {
      const failure = await this.runHook(postStart, pod, container, id, sandboxId, POST_START_TIMEOUT_SECONDS);
      if (failure) {
        this.events.record(podRef(pod), 'Warning', 'FailedPostStartHook', failure, container.name);
        await this.killContainer(pod, { id, name: container.name, container }, `FailedPostStartHook`, undefined, false, failure);
        throw new StartContainerError('PostStartHookError', failure);
      }
    }
  }

  private readHostFiles(): Promise<{ resolvConf: string; etcHosts: string }> {
    this.hostFiles ??= Promise.all([
      readFile('/etc/resolv.conf', 'utf8').catch(() => ''),
      readFile('/etc/hosts', 'utf8').catch(() => ''),
    ]).then(([resolvConf, etcHosts]) => ({
      resolvConf,
      etcHosts,
    }));
    return this.hostFiles;
  }

  /** The pod's IPs: from the runtime view when the sandbox is the one it shows, else asked of the runtime once. */
  private async podIPs(pod: IPod, sandboxId: string, status: RuntimePodStatus): Promise<string[]> {
    if (pod.spec?.hostNetwork) return this.hostIP ? [this.hostIP] : [];
    const known = status.sandboxes.find((s) => s.id === sandboxId && s.ip);
    if (known) return [known.ip!, ...known.additionalIps];
    const res = await ignoreNotFound(this.runtime.podSandboxStatus(sandboxId));
    const net = res?.status?.network;
    return net?.ip ? [net.ip, ...(net.additionalIps ?? []).map((i) => i.ip).filter(Boolean)] : [];
  }

  /** The kubelet's managed /etc/hosts under the pod dir, unless the container mounts its own. */
  private async etcHostsMount(pod: IPod, container: IContainer, podIPs: string[]): Promise<T.MountInput | undefined> {
    if (!this.rootDir) return undefined;
    if ((container.volumeMounts ?? []).some((m) => m.mountPath === '/etc/hosts')) return undefined;
    const file = join(await this.ensurePodDir(podMeta(pod).uid), 'etc-hosts');
    await writeFile(file, managedHostsFile(pod, podIPs, (await this.readHostFiles()).etcHosts), { mode: 0o644 });
    return { containerPath: '/etc/hosts', hostPath: file, readonly: false };
  }

  /** The kubelet's verifyRunAsNonRoot: the effective user, or the image's (root when it names none), must not be root. */
  private async verifyRunAsNonRoot(pod: IPod, container: IContainer, imageRef: string): Promise<void> {
    const sc = container.securityContext ?? {};
    const podSc = pod.spec?.securityContext ?? {};
    if (!(sc.runAsNonRoot ?? podSc.runAsNonRoot)) return;
    const m = podMeta(pod);
    const who = `(pod: "${m.name}_${m.namespace}(${m.uid})", container: ${container.name})`;
    const runAsUser = sc.runAsUser ?? podSc.runAsUser;
    if (runAsUser !== undefined) {
      if (runAsUser === 0)
        throw new StartContainerError('CreateContainerConfigError', `container's runAsUser breaks non-root policy ${who}`);
      return;
    }
    const image = await this.images.imageStatus(imageRef);
    const uid = image?.uid ? Number(image.uid.value) : image?.username ? undefined : 0;
    if (uid === 0)
      throw new StartContainerError('CreateContainerConfigError', `container has runAsNonRoot and image will run as root ${who}`);
    if (uid === undefined) {
      throw new StartContainerError(
        'CreateContainerConfigError',
        `container has runAsNonRoot and image has non-numeric user (${image!.username}), cannot verify user is non-root ${who}`,
      );
    }
  }

  /** Creates the empty host file the container's termination message is written to (0666: any user may write). */
  private async terminationMessageFile(pod: IPod, container: IContainer, restartCount: number): Promise<string | undefined> {
    if (!this.rootDir) return undefined;
    const dir = safeJoin(await this.ensurePodDir(podMeta(pod).uid), [
      ['containers', 'containers'],
      ['container name', container.name],
    ]);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const file = join(dir, `${restartCount}-${randomBytes(4).toString('hex')}`);
    await writeFile(file, '', { mode: 0o666 });
    await chmod(file, 0o666);
    return file;
  }

  /**
   * The container's spec copy, in its pod directory when there is one (spec-copy.ts): on the container
   * record it would be listed by every relist. Without a root dir it stays an annotation.
   */
  private async recordSpec(pod: IPod, container: IContainer): Promise<boolean> {
    if (!this.rootDir) return false;
    await this.statusReader.specCopies.write(await this.ensurePodDir(podMeta(pod).uid), container.name, containerSpecJSON(container));
    return true;
  }

  /** The pod's RuntimeClass handler, as the kubelet's runtimeClassManager resolves it; throws when it does not exist. */
  private runtimeHandler(pod: IPod): string {
    const name = pod.spec?.runtimeClassName;
    if (!name) return this.defaultRuntimeHandler;
    const found = this.runtimeClasses?.runtimeClass(name);
    if (!found) throw new Error(runtimeClassNotFound(name));
    return found.handler;
  }

  private podDir(uid: string): string {
    return safeJoin(this.rootDir!, [
      ['pods', 'pods'],
      ['pod UID', uid],
    ]);
  }

  /**
   * The state dir is private to the user running podctl: created 0700 before anything goes in it.
   * Made once a sync (the pod spec, /etc/hosts, each container's termination message and spec copy
   * all go in it); a later sync makes sure again, should anything have removed it in between.
   */
  private ensurePodDir(uid: string): Promise<string> {
    let made = this.podDirsMade.get(uid);
    if (!made) {
      made = (async () => {
        await mkdir(this.rootDir!, { recursive: true, mode: 0o700 });
        const dir = this.podDir(uid);
        await mkdir(dir, { recursive: true, mode: 0o750 });
        return dir;
      })();
      this.podDirsMade.set(uid, made);
      // A failure is said where it is awaited, and the next call tries again.
      made.catch(() => {
        if (this.podDirsMade.get(uid) === made) this.podDirsMade.delete(uid);
      });
    }
    return made;
  }

  /**
   * Runs a lifecycle hook (exec, httpGet or sleep); returns the failure
   * message in the kubelet's words, or undefined when the hook succeeded.
   */
  private async runHook(
    hook: ILifecycleHandler,
    pod: IPod,
    container: IContainer,
    containerId: string,
    sandboxId: string | undefined,
    timeoutSeconds: number,
  ): Promise<string | undefined> {
    const what = hook.exec
      ? `Exec lifecycle hook (${JSON.stringify(hook.exec.command ?? [])})`
      : hook.httpGet
        ? `HTTP lifecycle hook (${hook.httpGet.path ?? '/'})`
        : 'Sleep lifecycle hook';
    const m = podMeta(pod);
    try {
      const podIP = hook.httpGet && !hook.httpGet.host ? await this.podIP(pod, sandboxId) : undefined;
      const outcome = await runHandler(hook as Handler, {
        runtime: this.runtime,
        clock: this.clock,
        containerId,
        container,
        podIP,
        timeoutSeconds,
      });
      if (outcome.result !== 'failure') return undefined;
      return `${what} for Container "${container.name}" in Pod "${m.name}_${m.namespace}(${m.uid})" failed - error: ${outcome.output.trim()}`;
    } catch (err) {
      return `${what} for Container "${container.name}" in Pod "${m.name}_${m.namespace}(${m.uid})" failed - error: ${errorMessage(err)}`;
    }
  }

  /** The pod IP a hook's httpGet reaches: the sandbox's, or the host's for host-network pods. */
  private async podIP(pod: IPod, sandboxId: string | undefined): Promise<string | undefined> {
    if (pod.spec?.hostNetwork) return this.hostIP ?? '127.0.0.1';
    if (!sandboxId) return undefined;
    const res = await ignoreNotFound(this.runtime.podSandboxStatus(sandboxId));
    return res?.status?.network?.ip || undefined;
  }

  /**
   * Keeps only the newest dead instances of a container (MaxPerPodContainer, 1 by default),
   * and removes instances that were created but never started (a start that
   * failed, or a create the runtime finished after podctl's deadline): called
   * once a newer instance runs, they would otherwise stay for ever.
   */
  private async pruneDeadContainers(status: RuntimePodStatus, name: string, opts: { neverStarted?: boolean } = {}): Promise<void> {
    const instances = status.containers.filter((c) => c.name === name);
    const dead = instances.filter((c) => c.state === 'exited').sort(newerFirst);
    // Only the pod's own lane, right after a start, knows no start of these is still under way.
    const neverStarted = opts.neverStarted ? instances.filter((c) => c.state === 'created') : [];
    for (const old of [...dead.slice(this.keepPerContainer), ...neverStarted]) {
      await ignoreNotFound(this.runtime.removeContainer(old.id));
    }
  }

  /**
   * The kubelet's killContainer: the Killing event, the preStop hook within
   * the grace period, then StopContainer with what is left of it (at least
   * 2 s), after which the runtime sends SIGKILL.
   */
  async killContainer(
    pod: IPod,
    target: KillTarget,
    message: string,
    gracePeriodOverride?: number,
    probeKill = false,
    terminationMessage?: string,
  ): Promise<void> {
    const spec =
      target.container ?? [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find((c) => c.name === target.name);
    // A liveness or startup kill may carry its own grace period (probe-level terminationGracePeriodSeconds).
    const probeGrace = probeKill
      ? (spec?.livenessProbe?.terminationGracePeriodSeconds ?? spec?.startupProbe?.terminationGracePeriodSeconds)
      : undefined;
    let grace = gracePeriodOverride ?? probeGrace ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    this.events.record(podRef(pod), 'Normal', 'Killing', message || `Stopping container ${target.name}`, target.name);
    if (probeKill || terminationMessage) this.statusReader.noteKillMessage(target.id, terminationMessage ?? message);
    const preStop = spec?.lifecycle?.preStop ?? parsePreStop(target.preStopJSON);
    if (preStop && grace > 0) {
      const started = this.clock.now();
      const failure = await this.runHook(preStop, pod, spec ?? { name: target.name }, target.id, undefined, grace);
      if (failure) this.events.record(podRef(pod), 'Warning', 'FailedPreStopHook', failure, target.name);
      grace -= Math.floor((this.clock.now() - started) / 1000);
    }
    await ignoreNotFound(this.runtime.stopContainer(target.id, Math.max(grace, MINIMUM_GRACE_PERIOD_SECONDS)));
  }

  /**
   * Stops every running container, then the sandboxes (the kubelet's KillPod), at most
   * MAX_KILLS_IN_FLIGHT_PER_POD containers at a time.
   *
   * The grace period is the pod's, and runs from here: a container that waits for a slot (or a
   * sidecar waiting for the app containers, as the kubelet's terminationOrdering has it) is
   * given what is left of it when its turn comes, at least the minimum 2 s. So the bound
   * does not multiply the grace: with every container ignoring SIGTERM, the pod is gone after
   * its grace period and then 2 s for each further batch of the bound (200 containers and a 30 s
   * grace: 30 s, then 12 batches of 2 s), where a grace per container would be 13 times 30 s.
   */
  async killPod(pod: IPod, status: RuntimePodStatus, gracePeriodOverride?: number): Promise<void> {
    const running = status.containers.filter((c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown');
    // App containers first, then sidecars, as the kubelet orders termination.
    const apps = running.filter((c) => c.kind !== 'sidecar');
    const sidecars = running.filter((c) => c.kind === 'sidecar');
    const grace = gracePeriodOverride ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    const started = this.clock.now();
    const kill = (c: RuntimeContainerStatus) => {
      const left = grace - Math.floor((this.clock.now() - started) / 1000);
      return this.killContainer(pod, c, `Stopping container ${c.name}`, Math.max(left, 0));
    };
    await eachBounded(apps, MAX_KILLS_IN_FLIGHT_PER_POD, kill);
    await eachBounded(sidecars, MAX_KILLS_IN_FLIGHT_PER_POD, kill);
    for (const sandbox of status.sandboxes) {
      if (sandbox.state !== 'ready') continue;
      await ignoreNotFound(this.runtime.stopPodSandbox(sandbox.id));
    }
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
  async removeDeadContainers(containers: readonly T.ContainerSummary[], keepPod: (uid: string) => boolean): Promise<number> {
    const groups = new Map<string, T.ContainerSummary[]>();
    for (const c of containers) {
      if (c.state !== 'CONTAINER_EXITED') continue;
      const uid = c.labels[L.POD_UID_LABEL];
      if (!uid || !keepPod(uid)) continue;
      const key = `${uid}/${c.labels[L.CONTAINER_NAME_LABEL]}`;
      groups.set(key, [...(groups.get(key) ?? []), c]);
    }
    const doomed: T.ContainerSummary[] = [];
    const kept: T.ContainerSummary[] = [];
    for (const dead of groups.values()) {
      dead.sort((a, b) => b.createdAt - a.createdAt);
      kept.push(...dead.slice(0, this.keepPerContainer));
      doomed.push(...dead.slice(this.keepPerContainer));
    }
    // Over the node-wide bound, the oldest of what is left go too (the kubelet's MaxContainers).
    const max = this.containerGC.maxContainers;
    if (max >= 0 && kept.length > max) doomed.push(...kept.sort((a, b) => a.createdAt - b.createdAt).slice(0, kept.length - max));
    for (const old of doomed) await ignoreNotFound(this.runtime.removeContainer(old.id));
    return doomed.length;
  }

  /** Dead instances kept per container: a negative setting means no bound, as the kubelet's flag. */
  private get keepPerContainer(): number {
    const n = this.containerGC.maxPerPodContainer;
    return n < 0 ? Number.MAX_SAFE_INTEGER : n;
  }

  async pruneAllDead(status: RuntimePodStatus): Promise<void> {
    for (const name of new Set(status.containers.map((c) => c.name))) await this.pruneDeadContainers(status, name);
  }

  /** Removes every container and sandbox of a pod that was killed, and its host state. */
  async removePod(status: RuntimePodStatus): Promise<void> {
    // In parallel, as bounded as the kills: one after the other, 200 containers took longer than a delete waits.
    await eachBounded(status.containers, MAX_KILLS_IN_FLIGHT_PER_POD, async (c) => {
      await ignoreNotFound(this.runtime.removeContainer(c.id));
      this.statusReader.forget(c.id);
    });
    for (const s of status.sandboxes) {
      await ignoreNotFound(this.runtime.stopPodSandbox(s.id));
      await ignoreNotFound(this.runtime.removePodSandbox(s.id));
    }
    if (status.uid) await this.removePodDirectories(status);
  }

  /**
   * Every host directory the pod had, mounts first: the ones its sandboxes recorded (whichever --root-dir and
   * --log-root started it), this process's own, and where its containers' log paths point. Each is checked to
   * be this pod's (<root>/pods/<uid>, <log-root>/<ns>_<name>_<uid>) before anything is unmounted or removed.
   */
  private async removePodDirectories(status: RuntimePodStatus): Promise<void> {
    const podDirs = new Set<string>();
    if (this.rootDir) podDirs.add(this.podDir(status.uid));
    for (const s of status.sandboxes) if (s.podDir) podDirs.add(s.podDir);
    for (const dir of podDirs) {
      await removePodDirectory(dir, status.uid);
      this.statusReader.specCopies.forgetPodDir(dir);
    }
    // The logs go with the pod, as the kubelet's container GC removes a deleted pod's log directory.
    if (!status.name) return;
    const name = podLogDirectoryName({ uid: status.uid, name: status.name, namespace: status.namespace });
    const logDirs = new Set<string>(status.sandboxes.flatMap((s) => (s.logDirectory ? [s.logDirectory] : [])));
    if (this.logRoot)
      logDirs.add(podLogDirectory(this.logRoot, { metadata: { uid: status.uid, name: status.name, namespace: status.namespace } }));
    for (const c of status.containers) if (c.logPath) logDirs.add(dirname(dirname(c.logPath)));
    for (const dir of logDirs) {
      // Only a directory named for this very pod, and never beyond its log root once symlinks are resolved.
      if (!isAbsolute(dir) || resolve(dir) !== dir || basename(dir) !== name) continue;
      if (!(await removeBelow([dirname(dir)], dir)))
        throw new UnsafePathError(`refusing to remove ${dir}: it resolves outside ${dirname(dir)}`);
    }
  }
}

function parsePreStop(json: string | undefined): ILifecycleHandler | undefined {
  if (!json) return undefined;
  try {
    return JSON.parse(json) as ILifecycleHandler;
  } catch {
    return undefined;
  }
}

export function podRef(pod: IPod): PodRef {
  const m = podMeta(pod);
  return { uid: m.uid!, namespace: m.namespace ?? 'default', name: m.name! };
}

function lastExited(status: RuntimePodStatus, name: string): RuntimeContainerStatus | undefined {
  return status.containers.filter((c) => c.name === name && c.state === 'exited').sort(newerFirst)[0];
}

/** Keyed as the kubelet keys CrashLoopBackOff: a spec change starts a fresh backoff. */
function crashKey(pod: IPod, c: RuntimeContainerStatus): string {
  const m = podMeta(pod);
  return `${m.name}_${m.namespace}_${m.uid}_${c.name}_${c.hash}`;
}

/** The grace period recorded on a pod's containers, for pods no source describes any more. */
export function graceFromRuntime(status: RuntimePodStatus): number {
  const graces = status.containers.map((c) => c.terminationGracePeriod).filter((g): g is number => g !== undefined);
  return graces.length ? Math.max(...graces) : 30;
}
