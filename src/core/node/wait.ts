import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import type { Clock, TimerHandle } from '../clock.js';
import { notRunningReasons } from '../runonce.js';
import type { AgentClient } from './client.js';
import type { AppliedPodRef } from './node.js';
import { podKey } from '../util/pod-key.js';

export type WaitFor = 'running' | 'ready' | 'none';

/** Waiting reasons that mean the pod cannot start as it is: waiting longer changes nothing. */
export const CANNOT_START = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
  'CrashLoopBackOff',
]);

export interface PodWaitResult {
  ref: AppliedPodRef;
  pod?: IPod;
  ok: boolean;
  /** The pod ran to completion (phase Succeeded): done, but not running. */
  completed?: boolean;
  /** Why not: a waiting reason such as ErrImagePull, Failed, or NotRunning. */
  reason?: string;
  message?: string;
}

function ready(status: IPodStatus): boolean {
  return (status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/**
 * Why a pod in phase Failed failed: the pod's own reason (DeadlineExceeded, Evicted, …), else each
 * container that exited non-zero, with its exit code and termination message.
 */
export function failedPodReason(status: IPodStatus): { reason: string; message: string } {
  if (status.reason) return { reason: status.reason, message: status.message || `the pod failed (${status.reason})` };
  const parts: string[] = [];
  let reason = '';
  for (const s of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
    const t = s.state?.terminated ?? s.lastState?.terminated;
    if (!t || t.exitCode === 0) continue;
    reason ||= t.reason || 'Error';
    const message = t.message?.trim();
    parts.push(`${s.name}: exited with code ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${message ? `: ${message}` : ''}`);
  }
  return { reason: reason || 'Failed', message: parts.join('; ') || status.message || 'the pod failed' };
}

/**
 * Where one pod stands against what is awaited: done, failed (with why), or not yet. Judged on the
 * pod's phase as the kubelet computes it (running: Running; ready: the Ready condition), so that a
 * pod one of whose containers has already exited counts as running; a pod that ran to completion
 * (Succeeded) is done, one that failed (Failed) is not.
 */
export function podProgress(ref: AppliedPodRef, pod: IPod | undefined, waitFor: WaitFor): PodWaitResult | undefined {
  const status = pod?.status as (IPodStatus & { observedGeneration?: number }) | undefined;
  // A status from before this version of the pod was synced says nothing about it.
  if (!pod || !status || (status.observedGeneration ?? 0) < ref.generation) return undefined;
  if (status.phase === 'Succeeded') return { ref, pod, ok: true, completed: true };
  if (status.phase === 'Failed') return { ref, pod, ok: false, ...failedPodReason(status) };
  for (const c of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
    const w = c.state?.waiting;
    if (w?.reason && CANNOT_START.has(w.reason))
      return { ref, pod, ok: false, reason: w.reason, message: `${c.name}: ${w.reason}${w.message ? `: ${w.message}` : ''}` };
  }
  if (waitFor === 'running' && status.phase === 'Running') return { ref, pod, ok: true };
  if (waitFor === 'ready' && ready(status)) return { ref, pod, ok: true };
  return undefined;
}

/**
 * How long a Running (or Ready) status of a pod that its containers' exit can end (restartPolicy
 * Never or OnFailure) must stand, counted from its containers' latest start, before it settles the
 * wait. A container that exits at once is first published running: containerd reports an exit 60-75
 * ms late, a relisting PLEG up to its period (1 s) later. Such a pod is judged on its end instead.
 */
export const SETTLE_MS = 2000;

/** Until when a settling Running status of this pod must stand; 0 when its phase needs no confirming. */
function standsUntil(pod: IPod, settleMs: number, now: number): number {
  if ((pod.spec?.restartPolicy ?? 'Always') === 'Always') return 0;
  const starts = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]
    .map((c) => Date.parse(c.state?.running?.startedAt ?? ''))
    .filter((t) => Number.isFinite(t));
  const until = (starts.length ? Math.max(...starts) : now) + settleMs;
  return until > now ? until : 0;
}

/**
 * Follows the agent's watch until every pod handed over is running (or ready), has completed or
 * failed, cannot start, or the time is up: each pod is judged on the first status that settles it,
 * as the agent publishes it (a pod that can end when its containers exit: once its Running status
 * has stood SETTLE_MS). Should the watch break, the agent's pods are polled instead (every pollMs).
 */
export async function waitForPods(
  client: AgentClient,
  refs: AppliedPodRef[],
  opts: { waitFor: WaitFor; timeoutMs: number; clock: Clock; pollMs?: number; settleMs?: number },
): Promise<PodWaitResult[]> {
  const results = new Map<string, PodWaitResult>();
  const key = (r: { namespace?: string; name?: string }) => podKey(r);
  if (opts.waitFor === 'none') return refs.map((ref) => ({ ref, ok: true }));
  const deadline = opts.clock.now() + opts.timeoutMs;
  const last = new Map<string, IPod>();
  // Running statuses that settle the wait once they have stood until `until` with nothing newer.
  const standing = new Map<string, { result: PodWaitResult; until: number }>();
  let onStanding: () => void = () => undefined;
  const judge = (pod: IPod) => {
    const k = key(pod.metadata ?? {});
    last.set(k, pod);
    const ref = refs.find((r) => key(r) === k);
    if (!ref || results.has(k)) return;
    const r = podProgress(ref, pod, opts.waitFor);
    const until = r?.ok && !r.completed ? standsUntil(pod, opts.settleMs ?? SETTLE_MS, opts.clock.now()) : 0;
    if (r && until) {
      standing.set(k, { result: r, until });
      onStanding();
      return;
    }
    standing.delete(k);
    if (r) results.set(k, r);
  };
  /** The standing statuses whose time has come settle their pods. */
  const promote = () => {
    for (const [k, s] of standing) {
      if (s.until > opts.clock.now()) continue;
      standing.delete(k);
      results.set(k, s.result);
    }
  };
  const settled = () => results.size === refs.length;

  // The watch: every status the agent publishes, none missed between two polls.
  const broke = await new Promise<boolean>((resolve) => {
    const timer = opts.clock.setTimeout(() => finish(false), Math.max(0, deadline - opts.clock.now()));
    let standTimer: TimerHandle | undefined;
    onStanding = () => {
      if (standTimer) opts.clock.clearTimeout(standTimer);
      const next = Math.min(...[...standing.values()].map((s) => s.until));
      standTimer = opts.clock.setTimeout(
        () => {
          standTimer = undefined;
          promote();
          if (settled()) finish(false);
          else if (standing.size) onStanding();
        },
        Math.max(0, next - opts.clock.now()),
      );
    };
    const watch = client.watchPods(
      (e) => {
        if (e.type === 'DELETED' || !e.object) return;
        judge(e.object);
        if (settled()) finish(false);
      },
      () => finish(true),
    );
    function finish(brokeOff: boolean) {
      opts.clock.clearTimeout(timer);
      if (standTimer) opts.clock.clearTimeout(standTimer);
      onStanding = () => undefined;
      watch.cancel();
      resolve(brokeOff);
    }
  });
  while (broke && !settled() && opts.clock.now() < deadline) {
    for (const p of await client.pods()) judge(p);
    promote();
    if (settled()) break;
    await new Promise((r) => opts.clock.setTimeout(() => r(undefined), opts.pollMs ?? 250));
  }
  return Promise.all(
    refs.map(async (ref) => {
      // A Running status still standing when the time is up is what the pod is.
      const done = results.get(key(ref)) ?? standing.get(key(ref))?.result;
      if (done) return done;
      const pod = last.get(key(ref));
      const why = notRunningReasons(pod?.status);
      // What the kubelet last warned about says why (FailedCreatePodSandBox, FailedMount, …).
      const warning = await lastWarning(client, pod?.metadata?.uid ?? ref.uid);
      const message = why.message || `not ${opts.waitFor} yet`;
      return {
        ref,
        pod,
        ok: false,
        reason: why.reason || (opts.waitFor === 'ready' ? 'NotReady' : 'NotRunning'),
        message: warning ? `${message}; last warning: ${warning}` : message,
      };
    }),
  );
}

async function lastWarning(client: AgentClient, uid: string | undefined): Promise<string | undefined> {
  if (!uid) return undefined;
  const events = await client.events(uid).catch(() => []);
  const w = events
    .filter((e) => e.type === 'Warning')
    .sort((a, b) => (a.lastTimestamp ?? '').localeCompare(b.lastTimestamp ?? ''))
    .at(-1);
  return w ? `${w.reason}: ${w.message}` : undefined;
}
