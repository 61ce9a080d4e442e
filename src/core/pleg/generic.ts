import type { Clock, TimerHandle } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import type * as T from '../cri/types.js';
import { errorMessage } from '../errors.js';
import * as L from '../kuberuntime/labels.js';

export type PodLifecycleEventType = 'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved' | 'ContainerChanged' | 'PodSync';

export interface PodLifecycleEvent {
  type: PodLifecycleEventType;
  /** Pod UID. */
  id: string;
  /** Container ID (or sandbox ID for sandbox events). */
  data: string;
  namespace: string;
  name: string;
  containerName?: string;
  time: number;
}

type PlegState = 'running' | 'exited' | 'unknown' | 'non-existent';

interface RelistRecord {
  uid: string;
  namespace: string;
  name: string;
  containerName?: string;
  state: PlegState;
}

function containerState(state: T.ContainerState | undefined): PlegState {
  switch (state) {
    case 'CONTAINER_RUNNING':
      return 'running';
    case 'CONTAINER_EXITED':
      return 'exited';
    case 'CONTAINER_CREATED':
      // A created-but-not-started container counts as unknown, as in the kubelet.
      return 'unknown';
    default:
      return 'unknown';
  }
}

function sandboxState(state: T.PodSandboxState | undefined): PlegState {
  return state === 'SANDBOX_READY' ? 'running' : 'exited';
}

/**
 * The events a move from old to new state produces (generic.go
 * generateEvents): ContainerChanged stays internal.
 */
function eventsFor(oldState: PlegState, newState: PlegState): PodLifecycleEventType[] {
  if (oldState === newState) return [];
  switch (newState) {
    case 'running':
      return ['ContainerStarted'];
    case 'exited':
      return ['ContainerDied'];
    case 'unknown':
      return ['ContainerChanged'];
    case 'non-existent':
      return oldState === 'exited' ? ['ContainerRemoved'] : ['ContainerDied', 'ContainerRemoved'];
  }
}

export interface GenericPlegOptions {
  runtime: RuntimeService;
  clock: Clock;
  relistPeriodMs?: number;
  /** Only podctl's own sandboxes and containers are watched. */
  labelSelector?: Record<string, string>;
  onError?: (err: unknown) => void;
}

/**
 * The generic PLEG: relists the runtime's sandboxes and containers and turns
 * the differences into pod lifecycle events. One relist costs two list calls,
 * whatever the number of pods.
 */
export class GenericPleg {
  private previous = new Map<string, RelistRecord>();
  private listeners = new Set<(e: PodLifecycleEvent) => void>();
  private timer?: TimerHandle;
  private stopped = true;
  private relisting = false;
  lastRelistAt?: number;
  readonly relistPeriodMs: number;

  constructor(private readonly opts: GenericPlegOptions) {
    this.relistPeriodMs = opts.relistPeriodMs ?? 1000;
  }

  watch(listener: (e: PodLifecycleEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      void this.relist()
        .catch((err) => this.opts.onError?.(err))
        .finally(() => this.schedule(this.relistPeriodMs));
    }, ms);
  }

  /** One relist: list, compare with the last one, emit the events. */
  async relist(): Promise<PodLifecycleEvent[]> {
    if (this.relisting) return [];
    this.relisting = true;
    try {
      const selector = this.opts.labelSelector ?? { [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
      const [sandboxes, containers] = await Promise.all([
        this.opts.runtime.listPodSandbox({ labelSelector: selector }),
        this.opts.runtime.listContainers({ labelSelector: selector }),
      ]);
      const current = new Map<string, RelistRecord>();
      for (const s of sandboxes) {
        const uid = s.labels[L.POD_UID_LABEL] ?? s.metadata?.uid;
        if (!uid) continue;
        current.set(s.id, { uid, namespace: s.metadata?.namespace ?? '', name: s.metadata?.name ?? '', state: sandboxState(s.state) });
      }
      for (const c of containers) {
        const uid = c.labels[L.POD_UID_LABEL];
        if (!uid) continue;
        current.set(c.id, {
          uid,
          namespace: c.labels[L.POD_NAMESPACE_LABEL] ?? '',
          name: c.labels[L.POD_NAME_LABEL] ?? '',
          containerName: c.labels[L.CONTAINER_NAME_LABEL],
          state: containerState(c.state),
        });
      }
      const now = this.opts.clock.now();
      const events: PodLifecycleEvent[] = [];
      const ids = new Set([...this.previous.keys(), ...current.keys()]);
      for (const id of ids) {
        const before = this.previous.get(id);
        const after = current.get(id);
        const rec = (after ?? before)!;
        for (const type of eventsFor(before?.state ?? 'non-existent', after?.state ?? 'non-existent')) {
          events.push({ type, id: rec.uid, data: id, namespace: rec.namespace, name: rec.name, containerName: rec.containerName, time: now });
        }
      }
      this.previous = current;
      this.lastRelistAt = now;
      for (const e of events) {
        if (e.type === 'ContainerChanged') continue;
        for (const l of this.listeners) l(e);
      }
      return events;
    } catch (err) {
      throw new Error(`PLEG relist failed: ${errorMessage(err)}`, { cause: err });
    } finally {
      this.relisting = false;
    }
  }
}
