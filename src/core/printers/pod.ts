import type { IContainerStateTerminated, IContainerStatus, IPod, IPodStatus } from 'kubernetes-models/v1';
import { timestampMs, timestampSince } from './duration.js';

/**
 * A pod's columns as the API server's printPod computes them (pkg/printers/internalversion), the one
 * implementation behind `podctl get pods` and the Kubernetes API's Tables.
 */
export interface PodColumns {
  /** READY: ready/total, sidecars (restartable init containers) counted with the app containers. */
  ready: string;
  /** STATUS: Init:…, PodInitializing, CrashLoopBackOff, Completed, Terminating, a pod's reason or its phase. */
  status: string;
  restarts: number;
  /** When the containers counted in `restarts` last finished (epoch ms), if ever. */
  lastRestartAt?: number;
}

/** The reason the node lifecycle controller gives a pod of a node that stopped reporting (util/node's NodeUnreachablePodReason). */
const NODE_LOST = 'NodeLost';

const finishedAt = (t: IContainerStateTerminated | undefined): number | undefined => timestampMs(t?.finishedAt as string | undefined);
const later = (a: number | undefined, b: number | undefined) => (b === undefined || (a !== undefined && a >= b) ? a : b);
const conditionTrue = (s: IPodStatus, type: string) => (s.conditions ?? []).some((c) => c.type === type && c.status === 'True');

function terminatedReason(t: IContainerStateTerminated, prefix: string): string {
  if (t.reason) return `${prefix}${t.reason}`;
  return t.signal ? `${prefix}Signal:${t.signal}` : `${prefix}ExitCode:${t.exitCode}`;
}

/**
 * READY, STATUS and RESTARTS of a pod. `status` apart from the pod for callers that hold the two
 * separately; a pod with no status at all (podctl's, before its first sync) is Unknown.
 */
export function podColumns(pod: IPod, status: IPodStatus | undefined = pod.status): PodColumns {
  const s: IPodStatus = status ?? {};
  const initSpecs = pod.spec?.initContainers ?? [];
  const sidecar = new Set(initSpecs.filter((c) => c.restartPolicy === 'Always').map((c) => c.name));
  const total = (pod.spec?.containers?.length ?? 0) + sidecar.size;
  let ready = 0;
  let restarts = 0;
  let lastRestartAt: number | undefined;
  let sidecarRestarts = 0;
  let sidecarLastRestartAt: number | undefined;
  let reason = status ? s.reason || s.phase || '' : 'Unknown';
  if ((s.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.reason === 'SchedulingGated')) reason = 'SchedulingGated';

  let initializing = false;
  const inits = s.initContainerStatuses ?? [];
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i]!;
    restarts += c.restartCount ?? 0;
    lastRestartAt = later(lastRestartAt, finishedAt(c.lastState?.terminated));
    const isSidecar = sidecar.has(c.name);
    if (isSidecar) {
      sidecarRestarts += c.restartCount ?? 0;
      sidecarLastRestartAt = later(sidecarLastRestartAt, finishedAt(c.lastState?.terminated));
    }
    const terminated = c.state?.terminated;
    const waiting = c.state?.waiting;
    if (terminated && terminated.exitCode === 0) continue;
    if (isSidecar && c.started) {
      if (c.ready) ready++;
      continue;
    }
    initializing = true;
    if (terminated) reason = terminatedReason(terminated, 'Init:');
    else if (waiting?.reason && waiting.reason !== 'PodInitializing') reason = `Init:${waiting.reason}`;
    else reason = `Init:${i}/${initSpecs.length}`;
    break;
  }

  if (!initializing || conditionTrue(s, 'Initialized')) {
    restarts = sidecarRestarts;
    lastRestartAt = sidecarLastRestartAt;
    let hasRunning = false;
    const containers: IContainerStatus[] = s.containerStatuses ?? [];
    // Last to first, as printPod: the first container's state is the one the column says.
    for (let i = containers.length - 1; i >= 0; i--) {
      const c = containers[i]!;
      restarts += c.restartCount ?? 0;
      lastRestartAt = later(lastRestartAt, finishedAt(c.lastState?.terminated));
      const terminated = c.state?.terminated;
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (terminated) reason = terminatedReason(terminated, '');
      else if (c.ready && c.state?.running) {
        hasRunning = true;
        ready++;
      }
    }
    // One container completed while another still runs: the pod is Running (or NotReady), not Completed.
    if (reason === 'Completed' && hasRunning) reason = conditionTrue(s, 'Ready') ? 'Running' : 'NotReady';
  }

  if (pod.metadata?.deletionTimestamp) {
    if (s.reason === NODE_LOST) reason = 'Unknown';
    else if (s.phase !== 'Succeeded' && s.phase !== 'Failed') reason = 'Terminating';
  }
  return { ready: `${ready}/${total}`, status: reason, restarts, ...(lastRestartAt !== undefined ? { lastRestartAt } : {}) };
}

/** The RESTARTS cell: the count, and how long ago the last restart was ("3 (40s ago)") once there has been one. */
export function restartsCell(columns: Pick<PodColumns, 'restarts' | 'lastRestartAt'>, now: number): string {
  if (columns.restarts === 0 || columns.lastRestartAt === undefined) return String(columns.restarts);
  return `${columns.restarts} (${timestampSince(columns.lastRestartAt, now)} ago)`;
}

/** AGE: since creationTimestamp; a pod podctl read from a file has none, so since it started or was first seen. */
export function podAge(pod: IPod, now: number): string {
  const m = pod.metadata;
  return timestampSince(m?.creationTimestamp ?? pod.status?.startTime ?? m?.annotations?.['kubernetes.io/config.seen'], now);
}

/** The wide cells of printPod: IP, Node, Nominated Node, Readiness Gates ("<none>" for what is not there). */
export function podWideCells(pod: IPod): [ip: string, node: string, nominatedNode: string, readinessGates: string] {
  const s = pod.status ?? {};
  const ip = s.podIPs?.[0]?.ip || s.podIP || '<none>';
  const gates = pod.spec?.readinessGates ?? [];
  let readinessGates = '<none>';
  if (gates.length) {
    const met = gates.filter((g) => (s.conditions ?? []).find((c) => c.type === g.conditionType)?.status === 'True').length;
    readinessGates = `${met}/${gates.length}`;
  }
  return [ip, pod.spec?.nodeName || '<none>', s.nominatedNodeName || '<none>', readinessGates];
}

/** One row of printPod: Name, Ready, Status, Restarts, Age, and with `wide` IP, Node, Nominated Node, Readiness Gates. */
export function podCells(pod: IPod, now: number, wide: boolean): string[] {
  const c = podColumns(pod);
  const cells = [pod.metadata?.name ?? '', c.ready, c.status, restartsCell(c, now), podAge(pod, now)];
  return wide ? [...cells, ...podWideCells(pod)] : cells;
}
