import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { podKey } from '../core/util/pod-key.js';

/**
 * A pod's status as kubectl's columns say it, and the status line run, watch and the agent print:
 * without the plan and YAML renderers of src/cli/render.ts, so that `run --detach` loads neither.
 */

/** kubectl's READY column: ready/total app containers. */
export function readyColumn(pod: IPod, status: IPodStatus | undefined): string {
  const total = pod.spec?.containers.length ?? 0;
  const ready = (status?.containerStatuses ?? []).filter((c) => c.ready).length;
  return `${ready}/${total}`;
}

export function restartsColumn(status: IPodStatus | undefined): number {
  return (status?.containerStatuses ?? []).reduce((n, c) => n + (c.restartCount ?? 0), 0);
}

/** kubectl's STATUS column: the waiting or terminated reason when there is one, else the phase. */
export function displayStatus(pod: IPod, status: IPodStatus | undefined): string {
  // As kubectl: a pod being deleted that has not finished is Terminating, whatever its containers say.
  if (pod.metadata?.deletionTimestamp && status?.phase !== 'Succeeded' && status?.phase !== 'Failed') return 'Terminating';
  return containerReason(pod, status);
}

function containerReason(pod: IPod, status: IPodStatus | undefined): string {
  if (!status) return 'Unknown';
  const inits = status.initContainerStatuses ?? [];
  const total = pod.spec?.initContainers?.length ?? 0;
  for (let i = 0; i < inits.length; i++) {
    const s = inits[i]!;
    if (s.state?.terminated?.exitCode === 0) continue;
    if (pod.spec?.initContainers?.[i]?.restartPolicy === 'Always' && s.started) continue;
    if (s.state?.terminated)
      return s.state.terminated.reason ? `Init:${s.state.terminated.reason}` : `Init:ExitCode:${s.state.terminated.exitCode}`;
    if (s.state?.waiting?.reason && s.state.waiting.reason !== 'PodInitializing') return `Init:${s.state.waiting.reason}`;
    return `Init:${i}/${total}`;
  }
  let reason: string = status.phase ?? 'Unknown';
  for (const c of status.containerStatuses ?? []) {
    if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
    else if (c.state?.terminated) reason = c.state.terminated.reason ?? `ExitCode:${c.state.terminated.exitCode}`;
  }
  if (reason === 'Completed' && status.phase === 'Running') reason = 'Running';
  return reason;
}

/** One line per state change, as run and watch print them. */
export function statusLine(pod: IPod, status: IPodStatus, now = new Date()): string {
  const containers = (status.containerStatuses ?? [])
    .map((c) => {
      const state = c.state?.running
        ? 'running'
        : c.state?.terminated
          ? `exited(${c.state.terminated.exitCode})`
          : (c.state?.waiting?.reason ?? 'waiting');
      return `${c.name}=${state}${c.restartCount ? ` restarts=${c.restartCount}` : ''}`;
    })
    .join(' ');
  return `${now.toISOString().slice(11, 19)} ${podKey(pod)}  ${displayStatus(pod, status)}  ${readyColumn(pod, status)}  ${containers}`;
}
