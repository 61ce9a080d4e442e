import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import type { Clock } from './clock.js';
import { errorMessage } from './errors.js';
import type { Kubelet } from './kubelet.js';
import type { RuntimePodStatus } from './container/types.js';

/** The kubelet's RunOnce constants (runonce.go). */
export const RUN_ONCE_MAX_RETRIES = 10;
export const RUN_ONCE_RETRY_DELAY_MS = 1000;

export interface RunOnceOptions {
  maxRetries?: number;
  retryDelayMs?: number;
  /** Bounds the whole run. */
  timeoutMs?: number;
  clock: Clock;
  onProgress?: (pod: IPod, status: IPodStatus, attempt: number) => void;
  /**
   * Why the pod can never start in this run (a ConfigMap or Secret no
   * document provides): checked after the first sync, so the status and the
   * events carry it, and then failed at once instead of retried to the end.
   */
  neverStarts?: (pod: IPod) => { reason: string; message: string } | undefined;
}

export interface RunOnceResult {
  pod: IPod;
  status?: IPodStatus;
  ok: boolean;
  /** For a failure: why, in the kubelet's words where it has some. */
  reason?: string;
  message?: string;
  attempts: number;
}

function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/** Every app container running (the kubelet's isPodRunning). */
export function allContainersRunning(pod: IPod, status: IPodStatus): boolean {
  const statuses = status.containerStatuses ?? [];
  return pod.spec!.containers.every((c) => statuses.find((s) => s.name === c.name)?.state?.running !== undefined);
}

/** The containers that are not running, with why: the failure's explanation. */
export function notRunningReasons(status: IPodStatus | undefined): { reason: string; message: string } {
  const parts: string[] = [];
  let reason = '';
  for (const s of [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? [])]) {
    if (s.state?.running) continue;
    const waiting = s.state?.waiting;
    const term = s.state?.terminated ?? s.lastState?.terminated;
    if (waiting?.reason && waiting.reason !== 'PodInitializing') {
      reason ||= waiting.reason;
      parts.push(`${s.name}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`);
    } else if (term && term.exitCode !== 0) {
      reason ||= term.reason ?? 'Error';
      parts.push(`${s.name}: exited with code ${term.exitCode}`);
    }
  }
  return { reason, message: parts.join('; ') };
}

/**
 * RunOnce: run every pod concurrently and wait until each runs, with the
 * kubelet's retries (10, from 1 s doubling). Unlike the kubelet, a pod that
 * runs to completion (Succeeded) counts as done, and a Failed pod fails at
 * once instead of using up its retries. A pod whose containers run another
 * version of it (its namespace/name run before from another file) is not done
 * until SyncPod has replaced them.
 */
export async function runOnce(kubelet: Kubelet, pods: IPod[], opts: RunOnceOptions): Promise<RunOnceResult[]> {
  // Imported here: run --detach's waiter reads allContainersRunning from this module, and loads no SyncPod.
  const { computePodActions } = await import('./kuberuntime/actions.js');
  const specChanged = (pod: IPod, runtime: RuntimePodStatus): boolean => {
    const a = computePodActions(pod, runtime);
    return a.createSandbox || a.containersToKill.length > 0 || a.containersToStart.length > 0;
  };
  const maxRetries = opts.maxRetries ?? RUN_ONCE_MAX_RETRIES;
  const deadline = opts.timeoutMs === undefined ? Infinity : opts.clock.now() + opts.timeoutMs;

  const runPod = async (pod: IPod): Promise<RunOnceResult> => {
    let delay = opts.retryDelayMs ?? RUN_ONCE_RETRY_DELAY_MS;
    let lastError: string | undefined;
    let status: IPodStatus | undefined;
    for (let attempt = 0; ; attempt++) {
      const runtime = await kubelet.getRuntimeStatus(pod);
      status = kubelet.updateStatus(pod, runtime);
      opts.onProgress?.(pod, status, attempt);
      // Running, and as this spec says: run before from another file with another spec, its containers are that version's.
      if (status.phase === 'Succeeded' || (allContainersRunning(pod, status) && !specChanged(pod, runtime)))
        return { pod, status, ok: true, attempts: attempt };
      if (status.phase === 'Failed') return { pod, status, ok: false, ...failure(status, 'pod failed'), attempts: attempt };
      const blocked = attempt > 0 ? opts.neverStarts?.(pod) : undefined;
      if (blocked)
        return { pod, status, ok: false, reason: blocked.reason, message: `can never start: ${blocked.message}`, attempts: attempt };
      if (attempt >= maxRetries) {
        return {
          pod,
          status,
          ok: false,
          ...failure(status, `containers not running after ${maxRetries} retries`, lastError),
          attempts: attempt,
        };
      }
      if (opts.clock.now() >= deadline) return { pod, status, ok: false, ...failure(status, 'timed out', lastError), attempts: attempt };
      try {
        await kubelet.syncPod(pod, 'sync');
        lastError = undefined;
      } catch (err) {
        lastError = errorMessage(err);
      }
      // As the kubelet, look again only after the delay: a container that
      // crashes right after starting must not count as running.
      await sleep(opts.clock, Math.max(0, Math.min(delay, deadline - opts.clock.now())));
      delay *= 2;
    }
  };
  return Promise.all(pods.map(runPod));
}

function failure(status: IPodStatus, summary: string, lastError?: string): { reason: string; message: string } {
  const why = notRunningReasons(status);
  // ContainerCreating says only that the sandbox is not there yet: the last sync's error says why.
  const generic = !why.reason || why.reason === 'ContainerCreating';
  const message = [summary, why.message, generic ? lastError : undefined].filter(Boolean).join(': ');
  return { reason: why.reason || (status.phase === 'Failed' ? 'Failed' : 'NotRunning'), message };
}
