import type { IContainer, IPod } from 'kubernetes-models/v1';
import { hashContainer } from './hash.js';
import { findContainerStatus, type RuntimeContainerStatus, type RuntimePodStatus } from '../container/types.js';
import { formatResourceChanges, podAsCreated, resizeDecision, type EffectiveResources, type ResourceChange } from './resize.js';
import { qosClass } from '../status/qos.js';

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface ContainerToStart {
  /** Index in spec.containers, or in spec.initContainers when kind is not 'app'. */
  index: number;
  name: string;
  kind: 'init' | 'sidecar' | 'app';
  /** Why it starts, in words (plan and trace show it). */
  reason: string;
}

export interface ContainerToKill {
  id: string;
  name: string;
  /** Present when the container is still in the spec. */
  container?: IContainer;
  reason: 'SpecChanged' | 'Unhealthy' | 'Unknown' | 'PodKilled';
  message: string;
}

/** A running container whose cpu or memory changes in place (CRI UpdateContainerResources). */
export interface ContainerToResize {
  id: string;
  name: string;
  kind: 'sidecar' | 'app';
  container: IContainer;
  changes: ResourceChange[];
  /** The cgroup settings to apply, computed as container start computes them. */
  linux: EffectiveResources;
  /** Why it is not applied: a resize may not change the pod's QoS class (the API server's words). */
  refused?: string;
}

/** What SyncPod must do to move the runtime toward the pod spec (the kubelet's podActions). */
export interface PodActions {
  killPod: boolean;
  createSandbox: boolean;
  /** Why a new sandbox is needed, when it is. */
  sandboxReason?: string;
  /** The sandbox to keep using or to replace. */
  sandboxId?: string;
  attempt: number;
  /** At most one init container at a time, in order; sidecars included. */
  initContainersToStart: ContainerToStart[];
  containersToStart: ContainerToStart[];
  containersToKill: ContainerToKill[];
  containersToResize: ContainerToResize[];
}

/** Containers whose liveness or startup probe said kill (issue: probes feed this). */
export interface ProbeVerdicts {
  livenessFailed(containerId: string): boolean;
  startupFailed(containerId: string): boolean;
}

export const noProbeFailures: ProbeVerdicts = { livenessFailed: () => false, startupFailed: () => false };

export function restartPolicyOf(pod: IPod): RestartPolicy {
  return (pod.spec?.restartPolicy as RestartPolicy | undefined) ?? 'Always';
}

export function shouldRestartOnFailure(pod: IPod): boolean {
  return restartPolicyOf(pod) !== 'Never';
}

export function isSidecar(container: IContainer): boolean {
  return container.restartPolicy === 'Always';
}

/** The kubelet's podSandboxChanged: whether a new sandbox is needed, and its attempt number. */
export function podSandboxChanged(
  pod: IPod,
  status: RuntimePodStatus,
): { changed: boolean; attempt: number; sandboxId?: string; reason?: string } {
  if (status.sandboxes.length === 0) return { changed: true, attempt: 0, reason: 'no sandbox exists' };
  const newest = status.sandboxes[0]!;
  const ready = status.sandboxes.filter((s) => s.state === 'ready').length;
  if (ready > 1) {
    return { changed: true, attempt: newest.attempt + 1, sandboxId: newest.id, reason: `${ready} ready sandboxes, reconciling to one` };
  }
  if (newest.state !== 'ready') {
    return { changed: true, attempt: newest.attempt + 1, sandboxId: newest.id, reason: 'sandbox is not ready' };
  }
  const hostNetwork = pod.spec?.hostNetwork === true;
  if (newest.hostNetwork !== hostNetwork) {
    return { changed: true, attempt: newest.attempt + 1, reason: 'network namespace changed (hostNetwork)' };
  }
  if (!hostNetwork && !newest.ip) {
    return { changed: true, attempt: newest.attempt + 1, sandboxId: newest.id, reason: 'sandbox has no IP address' };
  }
  return { changed: false, attempt: newest.attempt, sandboxId: newest.id };
}

/** The kubelet's ShouldContainerBeRestarted, with the reason for plan output. */
export function containerRestartReason(container: IContainer, pod: IPod, status: RuntimePodStatus): string | undefined {
  if (pod.metadata?.deletionTimestamp) return undefined;
  const cs = findContainerStatus(status, container.name);
  if (!cs) return 'never started';
  if (cs.state === 'running') return undefined;
  if (cs.state === 'unknown' || cs.state === 'created') return `container is ${cs.state}`;
  const policy = restartPolicyOf(pod);
  if (policy === 'Never') return undefined;
  if (policy === 'OnFailure' && cs.exitCode === 0) return undefined;
  return `exited with code ${cs.exitCode ?? 'unknown'} and restartPolicy is ${policy}`;
}

function containerSucceeded(container: IContainer, status: RuntimePodStatus): boolean {
  const cs = findContainerStatus(status, container.name);
  return cs !== undefined && cs.state === 'exited' && cs.exitCode === 0;
}

function isInitContainerFailed(cs: RuntimeContainerStatus): boolean {
  if (cs.state === 'exited' && cs.exitCode !== 0) return true;
  if (cs.state === 'unknown') return true;
  return false;
}

interface InitProgress {
  done: boolean;
  /** The init container to run next (index into spec.initContainers). */
  next?: number;
  /** The failed status when the next one is a retry. */
  failed?: RuntimeContainerStatus;
}

/**
 * The kubelet's findNextInitContainerToRun, extended for sidecars: a sidecar
 * counts as done once it runs, since it never exits.
 */
export function findNextInitContainerToRun(pod: IPod, status: RuntimePodStatus): InitProgress {
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length === 0) return { done: true };
  // Any app container running means initialization already finished.
  for (const c of pod.spec?.containers ?? []) {
    if (findContainerStatus(status, c.name)?.state === 'running') return { done: true };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const cs = findContainerStatus(status, inits[i]!.name);
    if (cs && !isSidecar(inits[i]!) && isInitContainerFailed(cs)) return { done: false, next: i, failed: cs };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const cs = findContainerStatus(status, inits[i]!.name);
    if (!cs) continue;
    const finished = isSidecar(inits[i]!) ? cs.state === 'running' || cs.state === 'exited' : cs.state === 'exited';
    if (!finished) return { done: false };
    if (i === inits.length - 1) return { done: true };
    return { done: false, next: i + 1 };
  }
  return { done: false, next: 0 };
}

/**
 * computePodActions: compares the pod spec with the runtime's view and
 * decides, without side effects, what SyncPod must do. Mirrors
 * kuberuntime_manager.go; a steady pod yields no action.
 */
export function computePodActions(pod: IPod, status: RuntimePodStatus, probes: ProbeVerdicts = noProbeFailures): PodActions {
  const sandbox = podSandboxChanged(pod, status);
  const actions: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxReason: sandbox.reason,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    containersToKill: [],
    containersToResize: [],
  };
  const containers = pod.spec?.containers ?? [];
  const inits = pod.spec?.initContainers ?? [];

  if (sandbox.changed) {
    // A pod that must not restart and already ran does not get a new sandbox.
    if (!shouldRestartOnFailure(pod) && sandbox.attempt !== 0 && status.containers.length !== 0) {
      actions.createSandbox = false;
      actions.killPod = !alreadyStopped(status);
      return actions;
    }
    const toStart: ContainerToStart[] = [];
    containers.forEach((c, index) => {
      if (restartPolicyOf(pod) === 'OnFailure' && containerSucceeded(c, status)) return;
      toStart.push({ index, name: c.name, kind: 'app', reason: sandbox.attempt === 0 ? 'new pod' : 'sandbox recreated' });
    });
    if (toStart.length === 0 && findNextInitContainerToRun(pod, status).done) {
      actions.createSandbox = false;
      actions.killPod = !alreadyStopped(status);
      return actions;
    }
    if (inits.length > 0) {
      actions.initContainersToStart = [
        {
          index: 0,
          name: inits[0]!.name,
          kind: isSidecar(inits[0]!) ? 'sidecar' : 'init',
          reason: 'first init container of a new sandbox',
        },
      ];
      return actions;
    }
    actions.containersToStart = toStart;
    return actions;
  }

  // Initialization first: app containers wait until every init container succeeded.
  const init = findNextInitContainerToRun(pod, status);
  if (!init.done) {
    if (init.next !== undefined) {
      if (init.failed && !shouldRestartOnFailure(pod)) {
        actions.killPod = !alreadyStopped(status);
      } else {
        const c = inits[init.next]!;
        if (init.failed?.state === 'unknown') {
          actions.containersToKill.push({
            id: init.failed.id,
            name: c.name,
            container: c,
            reason: 'Unknown',
            message: 'init container is in unknown state',
          });
        }
        actions.initContainersToStart.push({
          index: init.next,
          name: c.name,
          kind: isSidecar(c) ? 'sidecar' : 'init',
          reason: init.failed ? `init container exited with code ${init.failed.exitCode ?? 'unknown'}` : 'next init container',
        });
      }
    }
    return actions;
  }

  // A resize may not change the pod's QoS class: the API server refuses it, and the containers keep what they have.
  let qosMove: string | undefined | null = null;
  const qosChange = () => {
    if (qosMove === null) {
      const from = qosClass(podAsCreated(pod, status.containers));
      const to = qosClass(pod);
      qosMove = from === to ? undefined : `${from} → ${to}`;
    }
    return qosMove;
  };
  const verdict = (c: IContainer, cs: RuntimeContainerStatus, kind: 'sidecar' | 'app') => {
    const v = killReason(c, cs, probes);
    if (v && 'resize' in v) {
      const qos = qosChange();
      const refused = qos
        ? `Pod QOS Class may not change as a result of resizing (${qos}); delete the pod and run it again to change it`
        : undefined;
      actions.containersToResize.push({
        id: cs.id,
        name: c.name,
        kind,
        container: c,
        changes: v.resize.changes,
        linux: v.resize.linux,
        ...(refused ? { refused } : {}),
      });
      return undefined;
    }
    return v;
  };

  // Sidecars keep running alongside the app containers.
  inits.forEach((c, index) => {
    if (!isSidecar(c)) return;
    const cs = findContainerStatus(status, c.name);
    if (cs?.state === 'running') {
      const kill = verdict(c, cs, 'sidecar');
      if (!kill) return;
      actions.containersToKill.push({ id: cs.id, name: c.name, container: c, ...kill });
      actions.initContainersToStart.push({ index, name: c.name, kind: 'sidecar', reason: kill.message });
      return;
    }
    actions.initContainersToStart.push({
      index,
      name: c.name,
      kind: 'sidecar',
      reason: cs ? `sidecar exited with code ${cs.exitCode ?? 'unknown'}` : 'never started',
    });
  });

  let keepCount = 0;
  containers.forEach((c, index) => {
    const cs = findContainerStatus(status, c.name);
    if (!cs || cs.state !== 'running') {
      const reason = containerRestartReason(c, pod, status);
      if (reason) actions.containersToStart.push({ index, name: c.name, kind: 'app', reason });
      return;
    }
    const kill = verdict(c, cs, 'app');
    if (!kill) {
      keepCount++;
      return;
    }
    // A failed liveness probe restarts only when the policy allows it.
    if (kill.reason === 'SpecChanged' || restartPolicyOf(pod) !== 'Never') {
      actions.containersToStart.push({ index, name: c.name, kind: 'app', reason: kill.message });
    }
    actions.containersToKill.push({ id: cs.id, name: c.name, container: c, ...kill });
  });

  if (keepCount === 0 && actions.containersToStart.length === 0) {
    // Nothing will run again: stop the sandbox, and let no sidecar keep the pod alive.
    actions.killPod = !alreadyStopped(status);
    actions.initContainersToStart = [];
  }
  return actions;
}

/** Killing a pod whose sandboxes are down and containers exited would only repeat CRI writes. */
function alreadyStopped(status: RuntimePodStatus): boolean {
  return status.sandboxes.every((s) => s.state !== 'ready') && status.containers.every((c) => c.state !== 'running');
}

type Verdict =
  { reason: ContainerToKill['reason']; message: string } | { resize: Extract<ReturnType<typeof resizeDecision>, { kind: 'resize' }> };

/**
 * Why a running container must go (a spec change, a failed probe), or the in-place resize it
 * needs instead when only its cpu or memory changed; undefined when it stays as it is.
 */
function killReason(c: IContainer, cs: RuntimeContainerStatus, probes: ProbeVerdicts): Verdict | undefined {
  let resize: Verdict | undefined;
  const specChanged = cs.hash !== hashContainer(c);
  // An unchanged spec may still differ from what is in effect: a resize back to what it was created with.
  if (specChanged || cs.resources) {
    const r = resizeDecision(c, cs);
    if (!r && specChanged) return { reason: 'SpecChanged', message: `Container ${c.name} definition changed, will be restarted` };
    if (r?.kind === 'restart') return { reason: 'SpecChanged', message: `${r.message} (${formatResourceChanges(r.changes)})` };
    if (r?.kind === 'resize') resize = { resize: r };
  }
  if (probes.livenessFailed(cs.id)) return { reason: 'Unhealthy', message: `Container ${c.name} failed liveness probe, will be restarted` };
  if (probes.startupFailed(cs.id)) return { reason: 'Unhealthy', message: `Container ${c.name} failed startup probe, will be restarted` };
  return resize;
}

/** True when the actions change nothing in the runtime. */
export function isNoop(actions: PodActions): boolean {
  return (
    !actions.killPod &&
    !actions.createSandbox &&
    actions.initContainersToStart.length === 0 &&
    actions.containersToStart.length === 0 &&
    actions.containersToKill.length === 0 &&
    actions.containersToResize.length === 0
  );
}
