import type { Clock } from './clock.js';

/** Normal or Warning, as v1 Event.type. */
export type EventType = 'Normal' | 'Warning';

/** A kubelet event about a pod (or one of its containers), as `kubectl describe` lists them. */
export interface PodEvent {
  uid: string;
  namespace: string;
  name: string;
  /** The container the event is about, as v1 Event.involvedObject.fieldPath `spec.containers{name}`. */
  container?: string;
  type: EventType;
  /** The kubelet's reasons: Pulling, Pulled, Created, Started, Killing, Unhealthy, BackOff, FailedPostStartHook, ... */
  reason: string;
  message: string;
  /** How many times the same reason and message repeated (the event recorder's aggregation). */
  count: number;
  firstTimestamp: number;
  lastTimestamp: number;
}

export interface PodRef {
  uid: string;
  namespace: string;
  name: string;
}

/** Events kept per pod: the newest win, as the API server's TTL would drop the old. */
export const MAX_EVENTS_PER_POD = 100;

/**
 * The kubelet's EventRecorder, kept in memory: a repeat of the last event
 * with the same container, reason and message bumps its count instead of
 * adding a line, so a crash loop stays one row with a growing count.
 */
export class EventRecorder {
  private readonly byPod = new Map<string, PodEvent[]>();
  private readonly listeners = new Set<(e: PodEvent) => void>();

  constructor(private readonly clock: Clock) {}

  record(pod: PodRef, type: EventType, reason: string, message: string, container?: string): PodEvent {
    const now = this.clock.now();
    let list = this.byPod.get(pod.uid);
    if (!list) this.byPod.set(pod.uid, (list = []));
    const same = list.find((e) => e.reason === reason && e.message === message && e.container === container && e.type === type);
    let event: PodEvent;
    if (same) {
      same.count++;
      same.lastTimestamp = now;
      event = same;
    } else {
      event = { uid: pod.uid, namespace: pod.namespace, name: pod.name, container, type, reason, message, count: 1, firstTimestamp: now, lastTimestamp: now };
      list.push(event);
      if (list.length > MAX_EVENTS_PER_POD) list.splice(0, list.length - MAX_EVENTS_PER_POD);
    }
    for (const l of this.listeners) l(event);
    return event;
  }

  /** A pod's events, oldest first by their last occurrence. */
  eventsFor(uid: string): PodEvent[] {
    return [...(this.byPod.get(uid) ?? [])].sort((a, b) => a.lastTimestamp - b.lastTimestamp);
  }

  all(): PodEvent[] {
    return [...this.byPod.values()].flat().sort((a, b) => a.lastTimestamp - b.lastTimestamp);
  }

  /** Called for every event recorded or repeated; returns the unsubscribe. */
  subscribe(listener: (e: PodEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  forget(uid: string): void {
    this.byPod.delete(uid);
  }
}

/** v1 Event.involvedObject.fieldPath for a container. */
export function containerFieldPath(container: string, kind: 'init' | 'sidecar' | 'app' = 'app'): string {
  return kind === 'app' ? `spec.containers{${container}}` : `spec.initContainers{${container}}`;
}

/** A kubelet event as a v1 Event, as the watch serves them on /events and kubectl would print them. */
export function toV1Event(e: PodEvent, host?: string): Record<string, unknown> {
  const first = new Date(e.firstTimestamp).toISOString();
  const last = new Date(e.lastTimestamp).toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${e.name}.${e.firstTimestamp.toString(16)}.${e.reason}`, namespace: e.namespace },
    involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace: e.namespace, name: e.name, uid: e.uid, ...(e.container ? { fieldPath: containerFieldPath(e.container) } : {}) },
    reason: e.reason,
    message: e.message,
    type: e.type,
    count: e.count,
    firstTimestamp: first,
    lastTimestamp: last,
    source: { component: 'kubelet', ...(host ? { host } : {}) },
    reportingComponent: 'kubelet',
  };
}
