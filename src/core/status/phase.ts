import type { IContainerStatus, IPodSpec, IPodStatus } from 'kubernetes-models/v1';

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

/**
 * The kubelet's getPhase (kubelet_pods.go): derived only from the spec and
 * the containers' API statuses, so the same rule serves the loop and RunOnce.
 */
export function getPhase(spec: IPodSpec, statuses: IContainerStatus[], initStatuses: IContainerStatus[]): PodPhase {
  const policy = spec.restartPolicy ?? 'Always';
  let pendingInitialization = 0;
  let failedInitialization = 0;
  for (const init of spec.initContainers ?? []) {
    const s = initStatuses.find((x) => x.name === init.name);
    if (init.restartPolicy === 'Always') {
      // A sidecar counts as initialized once it has started.
      if (!s || !s.started) pendingInitialization++;
      continue;
    }
    if (!s) {
      pendingInitialization++;
      continue;
    }
    if (s.state?.running) pendingInitialization++;
    else if (s.state?.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInitialization++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated && s.lastState.terminated.exitCode !== 0) failedInitialization++;
      else pendingInitialization++;
    } else pendingInitialization++;
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of spec.containers) {
    const s = statuses.find((x) => x.name === c.name);
    if (!s) {
      unknown++;
      continue;
    }
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }

  if (failedInitialization > 0 && policy === 'Never') return 'Failed';
  if (pendingInitialization > 0 || failedInitialization > 0) return 'Pending';
  if (waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

export function isTerminalPhase(phase: PodPhase | string | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/** What changes in a status that a person would want to hear about. */
export function statusSummary(status: IPodStatus): string {
  const parts = [status.phase ?? ''];
  // Ephemeral containers too: a debug container starting or ending is a change the pod's watchers see.
  for (const c of [
    ...(status.initContainerStatuses ?? []),
    ...(status.containerStatuses ?? []),
    ...(status.ephemeralContainerStatuses ?? []),
  ]) {
    const state = c.state?.running
      ? 'running'
      : c.state?.terminated
        ? `terminated:${c.state.terminated.exitCode}`
        : `waiting:${c.state?.waiting?.reason ?? ''}`;
    parts.push(`${c.name}=${state}/${c.restartCount}/${c.ready}`);
  }
  return parts.join(' ');
}
