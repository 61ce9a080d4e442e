import { AsyncLocalStorage } from 'node:async_hooks';
import type { IPod } from 'kubernetes-models/v1';
import type { Clock } from './clock.js';
import { errorMessage } from './errors.js';
import type { HousekeepingResult, SyncObserver } from './kubelet-types.js';
import type { SyncStepResult } from './kuberuntime/manager.js';
import type { LoopTrace, PodUpdate, ProbeResultTrace } from './loop.js';
import type { PodLifecycleEvent, PodLifecycleEventType } from './pleg/generic.js';
import type { UpdateType, WorkKind, WorkerTrace } from './workers/pod-workers.js';
import { podKey, podMeta } from './util/pod-key.js';

export interface PodTraceRef {
  namespace: string;
  name: string;
  uid: string;
}

export interface CriCallTrace {
  method: string;
  durationMs: number;
  error?: string;
}

/** One line of `--trace -o json`; `type` says which branch or which worker. */
export type TraceEvent =
  | { time: string; type: 'config'; op: PodUpdate['op']; source: string; pods: PodTraceRef[] }
  | {
      time: string;
      type: 'pleg';
      event: PodLifecycleEventType;
      pod: PodTraceRef;
      container?: string;
      exitCode?: number;
      dispatched: boolean;
    }
  | { time: string; type: 'sync'; due: PodTraceRef[] }
  | { time: string; type: 'pleg-source'; source: string; reason?: string }
  | {
      time: string;
      type: 'housekeeping';
      removedPods: string[];
      removedContainers: number;
      durationMs: number;
      error?: string;
      calls: CriCallTrace[];
    }
  | ({ time: string; type: 'probe'; pod: PodTraceRef } & Omit<ProbeResultTrace, 'uid'>)
  | {
      time: string;
      type: 'worker';
      pod: PodTraceRef;
      work: WorkKind;
      update: UpdateType;
      outcome: 'ok' | 'error';
      error?: string;
      durationMs: number;
      steps: SyncStepResult[];
      calls: CriCallTrace[];
    };

interface Span {
  steps: SyncStepResult[];
  calls: CriCallTrace[];
}

export interface TracerOptions {
  clock: Clock;
  emit: (e: TraceEvent) => void;
  /** A ContainerDied's exit code, when the PLEG's cache knows it. */
  exitCode?: (e: PodLifecycleEvent) => number | undefined;
  /**
   * Leave out what moves nothing here: housekeeping passes that cleaned
   * nothing, RECONCILE updates (metadata only, no sync), and PLEG events of
   * pods this agent does not run (other agents' pods on the same runtime).
   */
  quiet?: boolean;
}

/** What the tracer follows of the Kubelet: its desired pods and its SyncPod results. */
interface TracedKubelet {
  readonly pods: ReadonlyMap<string, IPod>;
  observe(observer: SyncObserver): () => void;
}

/**
 * Turns the loop's and the workers' hooks into TraceEvents. Each worker's
 * unit of work and each housekeeping pass runs in an async context of its
 * own, so the CRI calls made inside it (observeCall, given to the CRI
 * client) and its SyncPod steps are attributed to it even when lanes overlap.
 */
export class Tracer implements LoopTrace, WorkerTrace {
  private readonly spans = new AsyncLocalStorage<Span>();
  private kubelet?: TracedKubelet;

  constructor(private readonly opts: TracerOptions) {}

  /** Follows the kubelet's SyncPod results, to list each worker's steps. */
  attach(kubelet: TracedKubelet): void {
    this.kubelet = kubelet;
    kubelet.observe({ onSyncResult: (_pod, result) => this.spans.getStore()?.steps.push(...result.steps) });
  }

  /** A CriClient call observer: the call goes to the unit of work that made it (calls outside any are not traced). */
  observeCall = (call: { method: string; durationMs: number; error?: unknown }): void => {
    const span = this.spans.getStore();
    if (!span) return;
    span.calls.push({
      method: call.method,
      durationMs: Math.round(call.durationMs * 10) / 10,
      ...(call.error ? { error: errorMessage(call.error) } : {}),
    });
  };

  configUpdate(u: PodUpdate): void {
    if (this.opts.quiet && u.op === 'RECONCILE') return;
    this.opts.emit({ time: this.time(), type: 'config', op: u.op, source: u.source, pods: u.pods.map(ref) });
  }

  plegEvent(e: PodLifecycleEvent, dispatched: boolean): void {
    if (this.opts.quiet && !this.kubelet?.pods.has(e.id)) return;
    const exitCode = e.type === 'ContainerDied' ? this.opts.exitCode?.(e) : undefined;
    this.opts.emit({
      time: this.time(),
      type: 'pleg',
      event: e.type,
      pod: { namespace: e.namespace, name: e.name, uid: e.id },
      ...(e.containerName ? { container: e.containerName } : {}),
      ...(exitCode === undefined ? {} : { exitCode }),
      dispatched,
    });
  }

  /** Where the PLEG's events come from now (cri-events, containerd-events or relist), at start and at each change. */
  plegSource(source: string, reason?: string): void {
    this.opts.emit({ time: this.time(), type: 'pleg-source', source, ...(reason ? { reason } : {}) });
  }

  syncTick(dueUids: string[]): void {
    this.opts.emit({ time: this.time(), type: 'sync', due: dueUids.map((uid) => this.refOf(uid)) });
  }

  async housekeeping(run: () => Promise<HousekeepingResult>): Promise<HousekeepingResult> {
    const span: Span = { steps: [], calls: [] };
    const started = this.opts.clock.now();
    try {
      const r = await this.spans.run(span, run);
      if (!this.opts.quiet || r.removedPods.length || r.removedContainers) {
        this.opts.emit({
          time: this.time(),
          type: 'housekeeping',
          removedPods: r.removedPods,
          removedContainers: r.removedContainers,
          durationMs: r.durationMs,
          calls: span.calls,
        });
      }
      return r;
    } catch (err) {
      this.opts.emit({
        time: this.time(),
        type: 'housekeeping',
        removedPods: [],
        removedContainers: 0,
        durationMs: this.opts.clock.now() - started,
        error: errorMessage(err),
        calls: span.calls,
      });
      throw err;
    }
  }

  probeResult(r: ProbeResultTrace): void {
    const { uid, ...rest } = r;
    this.opts.emit({ time: this.time(), type: 'probe', pod: this.refOf(uid), ...rest });
  }

  async work<T>(pod: IPod, kind: WorkKind, update: UpdateType, run: () => Promise<T>): Promise<T> {
    const span: Span = { steps: [], calls: [] };
    const started = this.opts.clock.now();
    const done = (err?: unknown) =>
      this.opts.emit({
        time: this.time(),
        type: 'worker',
        pod: ref(pod),
        work: kind,
        update,
        outcome: err === undefined ? 'ok' : 'error',
        ...(err === undefined ? {} : { error: errorMessage(err) }),
        durationMs: this.opts.clock.now() - started,
        steps: span.steps,
        calls: span.calls,
      });
    try {
      const result = await this.spans.run(span, run);
      done();
      return result;
    } catch (err) {
      done(err);
      throw err;
    }
  }

  private refOf(uid: string): PodTraceRef {
    const pod = this.kubelet?.pods.get(uid);
    return pod ? ref(pod) : { namespace: '', name: '', uid };
  }

  private time(): string {
    return new Date(this.opts.clock.now()).toISOString();
  }
}

function ref(pod: IPod): PodTraceRef {
  const m = podMeta(pod);
  return { namespace: m.namespace ?? 'default', name: m.name!, uid: m.uid! };
}

const podName = (p: PodTraceRef) => (p.name ? podKey(p) : p.uid);

/** CRI calls grouped by method in order of first use: `RunPodSandbox 140ms, ContainerStatus×3 6ms`. */
export function formatCalls(calls: CriCallTrace[]): string {
  const groups = new Map<string, { n: number; ms: number; errors: number }>();
  for (const c of calls) {
    const g = groups.get(c.method) ?? { n: 0, ms: 0, errors: 0 };
    g.n++;
    g.ms += c.durationMs;
    if (c.error) g.errors++;
    groups.set(c.method, g);
  }
  return [...groups]
    .map(
      ([m, g]) =>
        `${m}${g.n > 1 ? `×${g.n}` : ''} ${g.ms < 10 ? g.ms.toFixed(1) : Math.round(g.ms)}ms${g.errors ? ` (${g.errors} failed)` : ''}`,
    )
    .join(', ');
}

/** One human line per event (the JSON form is the event itself). */
export function formatTraceEvent(e: TraceEvent): string {
  const t = e.time.slice(11, 23);
  switch (e.type) {
    case 'config':
      return `${t} config ${e.op} (${e.source}) → ${e.pods.map(podName).join(', ') || 'no pods'}`;
    case 'pleg':
      return (
        `${t} pleg ${e.event} ${podName(e.pod)}${e.container ? ` ${e.container}` : ''}` +
        `${e.exitCode === undefined ? '' : ` (exit ${e.exitCode})`}${e.dispatched ? ` → sync ${podName(e.pod)}` : ''}`
      );
    case 'pleg-source':
      return `${t} pleg source ${e.source}${e.reason ? ` (${e.reason})` : ''}`;
    case 'sync':
      return `${t} sync tick → ${e.due.map(podName).join(', ')}`;
    case 'probe':
      return `${t} probe ${e.probe} ${podName(e.pod)} ${e.container}: ${e.result}${e.dispatched ? ` → sync ${podName(e.pod)}` : ''}`;
    case 'housekeeping': {
      const cleaned = [
        ...e.removedPods.map((p) => `removed pod ${p}`),
        ...(e.removedContainers ? [`removed ${e.removedContainers} dead container(s)`] : []),
      ];
      const calls = e.calls.length ? ` | ${formatCalls(e.calls)}` : '';
      return `${t} housekeeping ${e.error ? `error: ${e.error}` : cleaned.join(', ') || 'nothing to clean'} ${e.durationMs}ms${calls}`;
    }
    case 'worker': {
      const steps = e.steps.map((s) => `${s.action} ${s.target}${s.error ? ` (${s.reason ?? 'failed'})` : ''}`).join(', ');
      const what = e.outcome === 'ok' ? 'ok' : `error: ${e.error}`;
      const calls = e.calls.length ? ` | ${formatCalls(e.calls)}` : '';
      return `${t}   worker ${podName(e.pod)} ${e.work}(${e.update}) ${what} ${e.durationMs}ms${steps ? `: ${steps}` : ''}${calls}`;
    }
  }
}
