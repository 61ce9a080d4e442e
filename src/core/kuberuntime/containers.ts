import type { IContainer, IPod } from 'kubernetes-models/v1';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../container/types.js';
import { ignoreNotFound } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import { errorMessage } from '../errors.js';
import { podMeta } from '../util/pod-key.js';
import type { PodVolumes } from '../volumes/index.js';
import { eachBounded, MAX_KILLS_IN_FLIGHT_PER_POD } from './bounded.js';
import { containerConfig, type ContainerConfigInputs } from './config.js';
import { markEphemeral } from './ephemeral.js';
import type { ContainerGC } from './container-gc.js';
import { podRef, type RuntimeContext } from './context.js';
import { StartContainerError } from './images.js';
import { HandlerRunner, parsePreStop } from './lifecycle.js';
import type { PodFiles } from './pod-files.js';
import { runContainerOptions } from './run-options.js';

/** The kubelet's minimum grace when killing (minimumGracePeriodInSeconds). */
export const MINIMUM_GRACE_PERIOD_SECONDS = 2;

/** podctl bounds postStart hooks (the kubelet does not) so that one hook cannot hold a pod's lane forever. */
export const POST_START_TIMEOUT_SECONDS = 30;

/** A container to kill: its ID and name, and what is known of its spec. */
export interface KillTarget {
  id: string;
  name: string;
  container?: IContainer;
  /** The preStop handler recorded on the container, when the spec is not known. */
  preStopJSON?: string;
}

/** The sandbox a container goes into, and the pod's IPs, asked once for all its containers. */
export interface SandboxForStart {
  sandboxId: string;
  sandboxConfig: T.PodSandboxConfigInput;
  podIPs: () => Promise<string[]>;
}

/** The kubelet's kuberuntime_container.go: start a container (its config, its postStart hook) and kill one. */
export class Containers {
  private readonly hooks: HandlerRunner;

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly files: PodFiles,
    private readonly gc: ContainerGC,
  ) {
    this.hooks = new HandlerRunner(ctx);
  }

  /** The kubelet's startContainer: pull, config, create, start, then the postStart hook. The crash backoff is SyncPod's. */
  async start(
    pod: IPod,
    container: IContainer,
    kind: ContainerConfigInputs['kind'],
    sandbox: SandboxForStart,
    status: RuntimePodStatus,
    podVolumes?: PodVolumes,
    imageChecked?: Promise<T.Image | undefined>,
    onCreated?: (id: string) => void,
    /** An ephemeral container (kubectl debug), in its target's PID namespace when it has one. */
    ephemeral?: { targetId?: string },
  ): Promise<void> {
    const { runtime, events } = this.ctx;
    const { sandboxId, sandboxConfig } = sandbox;
    const previous = status.containers.find((c) => c.name === container.name);
    const imageRef = await this.ctx.imagePuller.ensureImageExists(pod, container, sandboxConfig, this.ctx.clock.now(), imageChecked);
    const restartCount = previous ? previous.restartCount + 1 : 0;
    await this.files.makeContainerLogDirectory(pod, container);
    const podIPs = await sandbox.podIPs();
    const { env, mounts } = await runContainerOptions(this.ctx, pod, container, podIPs, podVolumes);
    const [hosts] = await Promise.all([
      this.files.etcHostsMount(pod, container, podIPs),
      this.verifyRunAsNonRoot(pod, container, imageRef),
    ]);
    if (hosts) mounts.push(hosts);
    // Once nothing can refuse the container: a file made for a container that is never created would stay.
    const [terminationMessageFile, specCopyInPodDir] = await Promise.all([
      this.files.terminationMessageFile(pod, container, restartCount),
      this.files.recordSpec(pod, container),
    ]);
    const made = containerConfig({
      pod,
      container,
      kind,
      restartCount,
      imageRef,
      terminationMessageFile,
      env,
      mounts,
      memoryCapacityBytes: this.ctx.node.memoryBytes,
      specCopyInPodDir,
    });
    const config = ephemeral ? markEphemeral(made, ephemeral.targetId) : made;
    let id: string;
    try {
      id = await runtime.createContainer(sandboxId, config, sandboxConfig);
    } catch (err) {
      throw new StartContainerError('CreateContainerError', errorMessage(err));
    }
    onCreated?.(id);
    events.record(podRef(pod), 'Normal', 'Created', `Created container ${container.name}`, container.name);
    try {
      await runtime.startContainer(id);
    } catch (err) {
      throw new StartContainerError('RunContainerError', errorMessage(err));
    }
    events.record(podRef(pod), 'Normal', 'Started', `Started container ${container.name}`, container.name);
    await this.gc.pruneDeadContainers(status, container.name, { neverStarted: true });
    const postStart = container.lifecycle?.postStart;
    if (postStart) {
      const failure = await this.hooks.run(postStart, pod, container, id, sandboxId, POST_START_TIMEOUT_SECONDS);
      if (failure) {
        events.record(podRef(pod), 'Warning', 'FailedPostStartHook', failure, container.name);
        await this.kill(pod, { id, name: container.name, container }, `FailedPostStartHook`, undefined, false, failure);
        throw new StartContainerError('PostStartHookError', failure);
      }
    }
  }

  /**
   * The kubelet's killContainer: the Killing event, the preStop hook within
   * the grace period, then StopContainer with what is left of it (at least
   * 2 s), after which the runtime sends SIGKILL.
   */
  async kill(
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
    this.ctx.events.record(podRef(pod), 'Normal', 'Killing', message || `Stopping container ${target.name}`, target.name);
    if (probeKill || terminationMessage) this.ctx.statusReader.noteKillMessage(target.id, terminationMessage ?? message);
    const preStop = spec?.lifecycle?.preStop ?? parsePreStop(target.preStopJSON);
    if (preStop && grace > 0) {
      const started = this.ctx.clock.now();
      const failure = await this.hooks.run(preStop, pod, spec ?? { name: target.name }, target.id, undefined, grace);
      if (failure) this.ctx.events.record(podRef(pod), 'Warning', 'FailedPreStopHook', failure, target.name);
      grace -= Math.floor((this.ctx.clock.now() - started) / 1000);
    }
    await ignoreNotFound(this.ctx.runtime.stopContainer(target.id, Math.max(grace, MINIMUM_GRACE_PERIOD_SECONDS)));
  }

  /**
   * The kubelet's killContainersWithSyncResult: every running container of the pod, at most
   * MAX_KILLS_IN_FLIGHT_PER_POD at a time.
   *
   * The grace period is the pod's, and runs from here: a container that waits for a slot (or a
   * sidecar waiting for the app containers, as the kubelet's terminationOrdering has it) is
   * given what is left of it when its turn comes, at least the minimum 2 s. So the bound
   * does not multiply the grace: with every container ignoring SIGTERM, the pod is gone after
   * its grace period and then 2 s for each further batch of the bound (200 containers and a 30 s
   * grace: 30 s, then 12 batches of 2 s), where a grace per container would be 13 times 30 s.
   */
  async killAll(pod: IPod, status: RuntimePodStatus, gracePeriodOverride?: number): Promise<void> {
    const running = status.containers.filter((c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown');
    // App containers first, then sidecars, as the kubelet orders termination.
    const apps = running.filter((c) => c.kind !== 'sidecar');
    const sidecars = running.filter((c) => c.kind === 'sidecar');
    const grace = gracePeriodOverride ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    const started = this.ctx.clock.now();
    const kill = (c: RuntimeContainerStatus) => {
      const left = grace - Math.floor((this.ctx.clock.now() - started) / 1000);
      return this.kill(pod, c, `Stopping container ${c.name}`, Math.max(left, 0));
    };
    await eachBounded(apps, MAX_KILLS_IN_FLIGHT_PER_POD, kill);
    await eachBounded(sidecars, MAX_KILLS_IN_FLIGHT_PER_POD, kill);
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
    const image = await this.ctx.images.imageStatus(imageRef);
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
}

/** The grace period recorded on a pod's containers, for pods no source describes any more. */
export function graceFromRuntime(status: RuntimePodStatus): number {
  const graces = status.containers.map((c) => c.terminationGracePeriod).filter((g): g is number => g !== undefined);
  return graces.length ? Math.max(...graces) : 30;
}
