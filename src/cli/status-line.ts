import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { podColumns } from '../core/printers/pod.js';
import { podKey } from '../core/util/pod-key.js';

/**
 * A pod's status as kubectl's columns say it, and the status line run, watch and the agent print:
 * without the plan and YAML renderers of src/cli/render.ts, so that `run --detach` loads neither.
 */

/** kubectl's READY column: ready/total containers, sidecars included (the API server's printPod). */
export function readyColumn(pod: IPod, status: IPodStatus | undefined): string {
  return podColumns(pod, status).ready;
}

/** The RESTARTS count, as printPod counts it (init containers' while the pod initializes, else sidecars' and app containers'). */
export function restartsColumn(pod: IPod, status: IPodStatus | undefined): number {
  return podColumns(pod, status).restarts;
}

/** kubectl's STATUS column (the API server's printPod): Init:…, a container's reason, Terminating, the pod's reason or phase. */
export function displayStatus(pod: IPod, status: IPodStatus | undefined): string {
  return podColumns(pod, status).status;
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
