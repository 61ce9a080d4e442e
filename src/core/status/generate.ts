import type {
  IContainer,
  IContainerState,
  IContainerStateTerminated,
  IContainerStatus,
  IPod,
  IPodCondition,
  IPodStatus,
} from 'kubernetes-models/v1';
import { newerFirst, type RuntimeContainerStatus, type RuntimePodStatus } from '../container/types.js';
import { getPhase, type PodPhase } from './phase.js';
import { qosClass } from './qos.js';
import { resourcesFromRuntime } from '../kuberuntime/resize.js';

export { qosClass };

/** Why a container is waiting, kept from the last SyncPod (the kubelet's reasonCache). */
export interface WaitingReason {
  reason: string;
  message?: string;
}

export interface StatusInputs {
  pod: IPod;
  runtime: RuntimePodStatus;
  /** Per container name: why the last attempt to start it did not succeed. */
  waitingReason?: (containerName: string) => WaitingReason | undefined;
  /** Readiness probe verdict; undefined when the container has no readiness probe. */
  ready?: (containerId: string, container: IContainer) => boolean | undefined;
  /** Startup probe verdict; undefined when the container has no startup probe. */
  started?: (containerId: string, container: IContainer) => boolean | undefined;
  /** The status last reported, to keep startTime and transition times stable. */
  previous?: IPodStatus;
  hostIP?: string;
  now: number;
  /** Runtime name for containerID, as "containerd://<id>". */
  runtimeName?: string;
  /** A container's last termination as recorded on disk: Last State once GC removed that instance. */
  lastTermination?: (containerName: string) => IContainerStateTerminated | undefined;
  /** Conditions set from outside the kubelet (readiness gates'), as an API client patches them in. */
  podConditions?: IPodCondition[];
}

/**
 * The kubelet's readiness gate check (GeneratePodReadyCondition): each gate's condition must be
 * present and True; its words when one is not.
 */
export function readinessGateProblems(pod: IPod, conditions: IPodCondition[]): string[] {
  const out: string[] = [];
  for (const gate of pod.spec?.readinessGates ?? []) {
    const c = conditions.find((x) => x.type === gate.conditionType);
    if (!c) out.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    else if (c.status !== 'True') out.push(`the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`);
  }
  return out;
}

const iso = (ms: number | undefined): string | undefined => (ms === undefined || ms <= 0 ? undefined : new Date(ms).toISOString());

function terminatedState(cs: RuntimeContainerStatus, runtimeName: string): IContainerState {
  const exitCode = cs.exitCode ?? 0;
  return {
    terminated: {
      exitCode,
      reason: cs.reason || (exitCode === 0 ? 'Completed' : 'Error'),
      message: cs.message || undefined,
      startedAt: iso(cs.startedAt),
      finishedAt: iso(cs.finishedAt),
      containerID: `${runtimeName}://${cs.id}`,
    },
  };
}

function containerStatusFor(
  container: IContainer,
  runtime: RuntimePodStatus,
  inputs: StatusInputs,
  runtimeName: string,
  /** ContainerCreating, or PodInitializing while init containers have not finished. */
  defaultWaiting: string,
): IContainerStatus {
  // Instances of this container, newest first.
  const instances = runtime.containers.filter((c) => c.name === container.name).sort(newerFirst);
  const newest = instances[0];
  const waiting = inputs.waitingReason?.(container.name);
  const status: IContainerStatus = {
    name: container.name,
    image: container.image ?? '',
    imageID: '',
    ready: false,
    restartCount: newest?.restartCount ?? 0,
    started: false,
  };
  if (!newest) {
    status.state = { waiting: { reason: waiting?.reason ?? defaultWaiting, message: waiting?.message } };
    return status;
  }
  status.containerID = `${runtimeName}://${newest.id}`;
  status.imageID = newest.imageRef;
  status.image = newest.image || status.image;
  const previousExited = instances.find((c, i) => i > 0 && c.state === 'exited');
  // The instance before this one is gone (container GC): its recorded end is the Last State.
  const recorded = !previousExited && newest.restartCount > 0 ? inputs.lastTermination?.(container.name) : undefined;
  const recordedLast = recorded && recorded.containerID !== status.containerID ? { terminated: recorded } : undefined;

  switch (newest.state) {
    case 'running': {
      status.state = { running: { startedAt: iso(newest.startedAt) } };
      // In-place resize: what the runtime has in effect, and the requests allocated to it.
      const requests = Object.fromEntries(
        Object.entries((container.resources?.requests ?? {}) as Record<string, string | number>)
          .filter(([k]) => k === 'cpu' || k === 'memory')
          .map(([k, v]) => [k, String(v)]),
      );
      if (Object.keys(requests).length) status.allocatedResources = requests;
      if (newest.resources && (container.resources?.requests || container.resources?.limits))
        status.resources = resourcesFromRuntime(newest.resources, container.resources);
      const started = inputs.started?.(newest.id, container);
      status.started = started ?? true;
      status.ready = status.started && (inputs.ready?.(newest.id, container) ?? true);
      if (previousExited) status.lastState = terminatedState(previousExited, runtimeName);
      else if (recordedLast) status.lastState = recordedLast;
      break;
    }
    case 'exited':
      if (waiting) {
        // Exited and due to restart: waiting, with the exit as the last state.
        status.state = { waiting: { reason: waiting.reason, message: waiting.message } };
        status.lastState = terminatedState(newest, runtimeName);
      } else {
        status.state = terminatedState(newest, runtimeName);
        if (previousExited) status.lastState = terminatedState(previousExited, runtimeName);
        else if (recordedLast) status.lastState = recordedLast;
      }
      break;
    default:
      status.state = { waiting: { reason: waiting?.reason ?? defaultWaiting, message: waiting?.message } };
      if (previousExited) status.lastState = terminatedState(previousExited, runtimeName);
      else if (recordedLast) status.lastState = recordedLast;
  }
  return status;
}

function condition(
  type: string,
  ok: boolean,
  now: string,
  previous: IPodCondition[] | undefined,
  reason?: string,
  message?: string,
): IPodCondition {
  const status = ok ? 'True' : 'False';
  const prev = previous?.find((c) => c.type === type);
  return {
    type,
    status,
    lastProbeTime: null as unknown as undefined,
    lastTransitionTime: prev && prev.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : now,
    ...(ok ? {} : { reason, message }),
  };
}

/** The runtime's view as a v1 PodStatus, before the kubelet's overrides (see generateAPIPodStatus). */
export function generatePodStatus(inputs: StatusInputs): IPodStatus {
  const { pod, runtime } = inputs;
  const spec = pod.spec!;
  const runtimeName = inputs.runtimeName ?? 'containerd';
  const inits = spec.initContainers ?? [];
  const initStatuses = inits.map((c) => containerStatusFor(c, runtime, inputs, runtimeName, 'PodInitializing'));
  // Until an app container exists, initialization is what the pod waits for.
  const appStarted = spec.containers.some((c) => runtime.containers.some((r) => r.name === c.name));
  const appDefault = inits.length > 0 && !appStarted ? 'PodInitializing' : 'ContainerCreating';
  const statuses = spec.containers.map((c) => containerStatusFor(c, runtime, inputs, runtimeName, appDefault));
  const phase: PodPhase = getPhase(spec, statuses, initStatuses);
  const now = new Date(inputs.now).toISOString();
  const previous = inputs.previous?.conditions;

  const initialized = (spec.initContainers ?? []).every((c, i) => {
    const s = initStatuses[i]!;
    if (c.restartPolicy === 'Always') return s.started === true;
    return s.state?.terminated?.exitCode === 0 || (phase === 'Running' && !s.state?.waiting);
  });
  // Sidecars count toward readiness, as app containers do (kubelet 1.29+).
  const sidecarStatuses = initStatuses.filter((_, i) => inits[i]!.restartPolicy === 'Always');
  const notReady = [...sidecarStatuses, ...statuses].filter((s) => !s.ready).map((s) => s.name);
  const containersReady = notReady.length === 0 && phase !== 'Succeeded' && phase !== 'Failed';
  const notReadyMessage = `containers with unready status: [${notReady.join(' ')}]`;
  const external = inputs.podConditions ?? [];
  const gates = containersReady ? readinessGateProblems(pod, external) : [];
  const readyCondition = containersReady
    ? condition('Ready', gates.length === 0, now, previous, 'ReadinessGatesNotReady', gates.join(', '))
    : condition('Ready', false, now, previous, phase === 'Succeeded' ? 'PodCompleted' : 'ContainersNotReady', notReadyMessage);
  const conditions: IPodCondition[] = [
    condition(
      'PodReadyToStartContainers',
      runtime.sandboxes.some((s) => s.state === 'ready'),
      now,
      previous,
    ),
    condition('Initialized', initialized, now, previous, 'ContainersNotInitialized', 'containers with incomplete status'),
    readyCondition,
    condition(
      'ContainersReady',
      containersReady,
      now,
      previous,
      phase === 'Succeeded' ? 'PodCompleted' : 'ContainersNotReady',
      notReadyMessage,
    ),
    condition('PodScheduled', true, now, previous),
    ...external,
  ];

  const startTime =
    inputs.previous?.startTime ?? iso(runtime.sandboxes.length ? Math.min(...runtime.sandboxes.map((s) => s.createdAt)) : undefined) ?? now;
  const hostNetwork = spec.hostNetwork === true;
  const podIPs = hostNetwork && inputs.hostIP ? [inputs.hostIP] : runtime.ips;
  const status: IPodStatus = {
    phase,
    conditions,
    hostIP: inputs.hostIP,
    hostIPs: inputs.hostIP ? [{ ip: inputs.hostIP }] : undefined,
    podIP: podIPs[0],
    podIPs: podIPs.map((ip) => ({ ip })),
    startTime,
    containerStatuses: statuses,
    qosClass: qosClass(pod),
  };
  if (initStatuses.length) status.initContainerStatuses = initStatuses;
  const ephemeral = ephemeralStatuses(runtime, runtimeName);
  if (ephemeral.length) status.ephemeralContainerStatuses = ephemeral;
  return status;
}

/** Debug containers as the API shows ephemeral ones: never ready, never restarted, no part of the phase. */
function ephemeralStatuses(runtime: RuntimePodStatus, runtimeName: string): IContainerStatus[] {
  return (runtime.ephemeral ?? []).map((c) => ({
    name: c.name,
    image: c.image,
    imageID: c.imageRef,
    containerID: `${runtimeName}://${c.id}`,
    ready: false,
    restartCount: 0,
    started: c.state === 'running',
    state:
      c.state === 'running'
        ? { running: { startedAt: iso(c.startedAt) } }
        : c.state === 'exited'
          ? terminatedState(c, runtimeName)
          : { waiting: { reason: 'ContainerCreating' } },
  }));
}

export const DEADLINE_EXCEEDED = 'DeadlineExceeded';
export const EVICTED = 'Evicted';

/** What the kubelet decided of a pod beyond its runtime view: each overrides what its containers say. */
export interface StatusOverrides {
  /** Admission rejected it: Failed with the reason, never run. */
  rejected?: { reason: string; message: string };
  /** The eviction manager's message, once it evicted the pod. */
  evicted?: string;
  /** The generation of the pod object the last finished sync used. */
  observedGeneration?: number;
}

/** How long until spec.activeDeadlineSeconds runs out, counted from the status' startTime. */
export function activeDeadlineLeftMs(pod: IPod, status: IPodStatus, now: number): number | undefined {
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

/**
 * The kubelet's generateAPIPodStatus: the v1 status from the runtime view with every override
 * applied (rejection at admission, the active deadline, eviction, observedGeneration). Every view
 * of a pod's status is this one's result.
 */
export function generateAPIPodStatus(inputs: StatusInputs, o: StatusOverrides = {}): IPodStatus {
  const generation = o.observedGeneration === undefined ? {} : { observedGeneration: o.observedGeneration };
  if (o.rejected) {
    const { reason, message } = o.rejected;
    return { phase: 'Failed', reason, message: `Pod was rejected: ${message}`, qosClass: qosClass(inputs.pod), ...generation };
  }
  const status = generatePodStatus(inputs);
  const { pod, previous, now } = inputs;
  if (pastActiveDeadline(pod, previous ?? status, now)) {
    // The kubelet's active deadline handler: the pod fails as a whole, whatever its containers say.
    status.phase = 'Failed';
    status.reason = DEADLINE_EXCEEDED;
    status.message = 'Pod was active on the node longer than the specified deadline';
  }
  if (o.evicted !== undefined || previous?.reason === EVICTED) {
    status.phase = 'Failed';
    status.reason = EVICTED;
    status.message = o.evicted ?? previous!.message;
  }
  return Object.assign(status, generation);
}
