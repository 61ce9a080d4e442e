import { dirname } from 'node:path';
import type { IContainerStatus, IPod } from 'kubernetes-models/v1';
import { containerLogFiles, readLogFile, restartCountOfLog } from '../logs/index.js';
import { getFromStatusSocket } from '../status/client.js';
import { newerFirst, type RuntimeContainerStatus, type RuntimePodStatus } from '../container/types.js';
import { crashBackoffMs } from '../kuberuntime/crash-backoff.js';
import type { RuntimePod } from './index.js';

/** A kubelet event as describe shows it (from the watch's /events, a v1 EventList). */
export interface DescribedEvent {
  type: string;
  reason: string;
  message: string;
  count: number;
  first: number;
  last: number;
  container?: string;
}

interface V1Event {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  involvedObject?: { fieldPath?: string; namespace?: string; name?: string; uid?: string };
}

/** An event with the pod it is about. */
export interface PodEventRow extends DescribedEvent {
  namespace: string;
  pod: string;
  uid: string;
}

function fromV1(e: V1Event): PodEventRow {
  return {
    namespace: e.involvedObject?.namespace ?? '',
    pod: e.involvedObject?.name ?? '',
    uid: e.involvedObject?.uid ?? '',
    type: e.type ?? 'Normal',
    reason: e.reason ?? '',
    message: e.message ?? '',
    count: e.count ?? 1,
    first: Date.parse(e.firstTimestamp ?? '') || 0,
    last: Date.parse(e.lastTimestamp ?? '') || 0,
    container: /\{(.+)\}$/.exec(e.involvedObject?.fieldPath ?? '')?.[1],
  };
}

/** The running watch's events (all pods, or one pod's by UID); undefined when no watch answers. */
export async function fetchEvents(socket: string, uid?: string): Promise<PodEventRow[] | undefined> {
  try {
    const list = await getFromStatusSocket<{ items: V1Event[] }>(socket, uid ? `/events?uid=${encodeURIComponent(uid)}` : '/events');
    return list.items.map(fromV1);
  } catch {
    return undefined;
  }
}

/** The pod's events from the running watch; undefined when no watch answers. */
export async function fetchPodEvents(socket: string, uid: string): Promise<DescribedEvent[] | undefined> {
  const rows = await fetchEvents(socket, uid);
  return rows?.map(({ namespace: _n, pod: _p, uid: _u, ...e }) => e);
}

/**
 * Without a watch, the events the runtime's records still imply: each
 * container instance it holds Created, Started and (when it exited) died,
 * as the PLEG names it (ContainerDied).
 */
export function eventsFromRuntime(runtime: RuntimePodStatus): PodEventRow[] {
  const out: PodEventRow[] = [];
  const base = { namespace: runtime.namespace, pod: runtime.name, uid: runtime.uid, count: 1 };
  for (const c of runtime.containers) {
    const at = (t: number) => ({ first: t, last: t });
    out.push({ ...base, ...at(c.createdAt), container: c.name, type: 'Normal', reason: 'Created', message: `Created container ${c.name}` });
    if (c.startedAt)
      out.push({
        ...base,
        ...at(c.startedAt),
        container: c.name,
        type: 'Normal',
        reason: 'Started',
        message: `Started container ${c.name}`,
      });
    if (c.state === 'exited' && c.finishedAt) {
      out.push({
        ...base,
        ...at(c.finishedAt),
        container: c.name,
        type: c.exitCode ? 'Warning' : 'Normal',
        reason: 'ContainerDied',
        message: `Container ${c.name} ${exitText(c.exitCode, c.reason)}`,
      });
    }
  }
  return out;
}

export interface TimelineEntry {
  at: number;
  container?: string;
  what: string;
  warning?: boolean;
  /** Not happened yet (a backoff's end). */
  future?: boolean;
}

function exitText(code: number | undefined, reason?: string): string {
  return `exited with code ${code ?? '?'}${reason && reason !== 'Error' && reason !== 'Completed' ? ` (${reason})` : ''}`;
}

/**
 * The pod's lifecycle in time order, from what the runtime records (sandboxes
 * and the container instances it still holds), the log files of instances it
 * no longer holds, the watch's events (kills, backoffs, probe failures,
 * failures), and the next start a backoff waits for.
 */
export async function podTimeline(pod: IPod, rp: RuntimePod | undefined, events: DescribedEvent[]): Promise<TimelineEntry[]> {
  const out: TimelineEntry[] = [];
  for (const s of rp?.runtime.sandboxes ?? []) {
    out.push({
      at: s.createdAt,
      what: `sandbox created${s.attempt ? ` (attempt ${s.attempt})` : ''}${s.state === 'ready' ? '' : ', now stopped'}`,
    });
  }
  const byName = new Map<string, RuntimeContainerStatus[]>();
  for (const c of rp?.runtime.containers ?? []) byName.set(c.name, [...(byName.get(c.name) ?? []), c]);
  for (const [name, instances] of byName) {
    const held = new Set<number>();
    for (const c of instances.sort(newerFirst)) {
      held.add(c.restartCount);
      const n = c.restartCount ? ` (restart ${c.restartCount})` : '';
      out.push({ at: c.createdAt, container: name, what: `created${n}` });
      if (c.startedAt) out.push({ at: c.startedAt, container: name, what: `started${n}` });
      if (c.state === 'exited' && c.finishedAt)
        out.push({ at: c.finishedAt, container: name, what: `${exitText(c.exitCode, c.reason)}${n}`, warning: c.exitCode !== 0 });
    }
    // Instances the runtime pruned still left their log files: when they wrote.
    const logPath = instances[0]?.logPath;
    if (logPath) {
      for (const file of await containerLogFiles(dirname(logPath))) {
        const n = restartCountOfLog(file)!;
        if (held.has(n)) continue;
        const lines = await readLogFile(file);
        if (!lines.length) continue;
        out.push({ at: lines[0]!.timeMs, container: name, what: `instance ${n} (no longer in the runtime) wrote its first line` });
        out.push({ at: lines.at(-1)!.timeMs, container: name, what: `instance ${n} wrote its last line (${lines.length} lines)` });
      }
    }
  }
  for (const e of events) {
    // The runtime's own times cover Created and Started more exactly.
    if (e.reason === 'Created' || e.reason === 'Started') continue;
    const times = e.count > 1 ? ` (x${e.count} since ${new Date(e.first).toISOString().slice(11, 19)})` : '';
    out.push({ at: e.last, container: e.container, what: `${e.reason}: ${e.message}${times}`, warning: e.type === 'Warning' });
  }
  for (const s of pod.status?.containerStatuses ?? []) {
    const next = nextStart(s);
    if (next !== undefined) out.push({ at: next, container: s.name, what: 'next start, when its CrashLoopBackOff ends', future: true });
  }
  return out.sort((a, b) => a.at - b.at);
}

/** When a container in CrashLoopBackOff starts again (epoch ms), from its last exit and the delay. */
export function nextStart(s: IContainerStatus): number | undefined {
  if (s.state?.waiting?.reason !== 'CrashLoopBackOff') return undefined;
  const finished = Date.parse(s.lastState?.terminated?.finishedAt ?? '');
  if (Number.isNaN(finished)) return undefined;
  const said = /back-off (\d+)s/.exec(s.state.waiting.message ?? '');
  const delay = said ? Number(said[1]) * 1000 : crashBackoffMs(s.restartCount);
  return finished + delay;
}

const quote = (line: string | undefined) =>
  line === undefined ? 'no output' : `last log line: ${JSON.stringify(line.length > 200 ? `${line.slice(0, 200)}…` : line)}`;

/**
 * One line saying why a pod is not running (or not ready) and what would
 * change it; undefined for a pod that runs with every container ready.
 */
export function whyNotRunning(
  pod: IPod,
  lastLogLine: (container: string) => string | undefined,
  now: number,
  readinessUnknown: string[] = [],
): string | undefined {
  const status = pod.status;
  if (!status) return 'no status yet: the pod has not been synced';
  if (status.phase === 'Unknown' && status.reason === 'RuntimeError') {
    return (
      `${status.message ?? 'the runtime could not report this pod'}; podctl's housekeeping keeps retrying ` +
      `its removal once no source wants it, and \`podctl delete pod ${pod.metadata?.name}\` retries now`
    );
  }
  const policy = pod.spec?.restartPolicy ?? 'Always';
  const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  for (const s of all) {
    const w = s.state?.waiting;
    if (!w) continue;
    if (w.reason === 'CrashLoopBackOff') {
      const t = s.lastState?.terminated;
      const exits = s.restartCount + 1;
      const next = nextStart(s);
      const wait = next === undefined ? '' : next > now ? `; next start in ${Math.ceil((next - now) / 1000)} s` : '; next start due now';
      return (
        `container ${s.name} is in CrashLoopBackOff: exited with ` +
        `code ${t?.exitCode ?? '?'}${t?.reason && t.reason !== 'Error' ? ` (${t.reason})` : ''}, ` +
        `${exits} exit${exits === 1 ? '' : 's'} so ` +
        `far${wait}; ${quote(lastLogLine(s.name))}`
      );
    }
    if (w.reason === 'ImagePullBackOff' || w.reason === 'ErrImagePull' || w.reason === 'InvalidImageName') {
      return (
        `container ${s.name} cannot start: image "${s.image}" could not be pulled (${w.message ?? w.reason}); fix ` +
        `the image reference, or make the image available to the runtime (podctl's embedded runtime pulls from 127.0.0.1:5000 only)`
      );
    }
    if (w.reason && w.reason !== 'PodInitializing')
      return `container ${s.name} is waiting: ${w.reason}${w.message ? `: ${w.message}` : ''}`;
  }
  if (status.phase === 'Failed' || status.phase === 'Succeeded') {
    const exited = all.filter((s) => s.state?.terminated);
    const failed = exited.find((s) => s.state!.terminated!.exitCode !== 0);
    if (status.phase === 'Failed' && failed) {
      return (
        `pod Failed: container ${failed.name} exited with code ${failed.state!.terminated!.exitCode} and ` +
        `restartPolicy ${policy} does not start it again; ${quote(lastLogLine(failed.name))}; ` +
        `fix the cause and delete the pod so its source starts it anew`
      );
    }
    return (
      `pod ${status.phase}: its containers ran to completion ` +
      `(restartPolicy ${policy}); delete it (or change its manifest) to run it again`
    );
  }
  const stopped = all.find((s) => s.state?.terminated && pod.spec?.containers.some((c) => c.name === s.name));
  if (stopped)
    return (
      `container ${stopped.name} exited with code ${stopped.state!.terminated!.exitCode} and ` +
      `waits to be started again; ${quote(lastLogLine(stopped.name))}`
    );
  const notReady = (status.containerStatuses ?? []).filter((s) => s.state?.running && !s.ready);
  if (notReady.length) {
    const unknown = notReady.filter((s) => readinessUnknown.includes(s.name));
    if (unknown.length === notReady.length)
      return (
        `container ${unknown.map((s) => s.name).join(', ')} runs, but its ` +
        `readiness probe's result is unknown: no running watch probes it`
      );
    return (
      `container ${notReady.map((s) => s.name).join(', ')} runs but is ` + `not ready: its readiness probe fails (see the Unhealthy events)`
    );
  }
  if (status.phase === 'Pending') return 'pod Pending: its sandbox or containers are being created';
  return undefined;
}
