import { appendFileSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Clock } from './clock.js';
import { intern } from './util/intern.js';

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

/** The events journal is rewritten from memory once it grows past this. */
export const EVENTS_JOURNAL_MAX_BYTES = 4 * 1024 * 1024;
/** Events newer than this survive a rewrite even beyond MAX_EVENTS_PER_POD (the API server's event TTL). */
export const EVENTS_TTL_MS = 3_600_000;

export interface EventRecorderOptions {
  /** An append-only journal (JSON lines) the agent keeps under its root dir, reloaded at start. */
  journal?: string;
  maxJournalBytes?: number;
}

/**
 * The kubelet's EventRecorder: a repeat of the last event with the same
 * container, reason and message bumps its count instead of adding a line,
 * so a crash loop stays one row with a growing count. With a journal, the
 * events outlive the agent: every record is appended, and the journal is
 * reloaded at start and rewritten from memory when it grows too big.
 */
export class EventRecorder {
  private readonly byPod = new Map<string, PodEvent[]>();
  private readonly listeners = new Set<(e: PodEvent) => void>();
  private journalBytes = 0;
  /** Size at which the journal is rewritten: its limit, or twice what memory holds if that is more. */
  private rewriteAt: number;
  /** The journal ends mid-line (a crash while appending): the next append starts a new line. */
  private cutShort = false;

  constructor(
    private readonly clock: Clock,
    private readonly opts: EventRecorderOptions = {},
  ) {
    this.rewriteAt = opts.maxJournalBytes ?? EVENTS_JOURNAL_MAX_BYTES;
    if (opts.journal) this.load(opts.journal);
  }

  /** Reads the journal: the last line for an event (same pod, first time, reason, message, container) wins. */
  private load(path: string): void {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      return;
    }
    this.journalBytes = Buffer.byteLength(text);
    this.cutShort = text.length > 0 && !text.endsWith('\n');
    for (const line of text.split('\n')) {
      let e: PodEvent & { forget?: string };
      try {
        e = JSON.parse(line) as PodEvent & { forget?: string };
      } catch {
        continue; // a line cut short by a crash
      }
      if (typeof e?.forget === 'string') {
        this.byPod.delete(e.forget);
        continue;
      }
      if (typeof e?.uid !== 'string' || typeof e.reason !== 'string' || typeof e.firstTimestamp !== 'number') continue;
      let list = this.byPod.get(e.uid);
      if (!list) this.byPod.set(e.uid, (list = []));
      const i = list.findIndex(
        (x) => x.firstTimestamp === e.firstTimestamp && x.reason === e.reason && x.message === e.message && x.container === e.container,
      );
      if (i >= 0) list[i] = e;
      else list.push(e);
      this.trim(list);
    }
  }

  /** At most MAX_EVENTS_PER_POD per pod, except that the last hour's events are all kept. */
  private trim(list: PodEvent[]): void {
    if (list.length <= MAX_EVENTS_PER_POD) return;
    list.sort((a, b) => a.lastTimestamp - b.lastTimestamp);
    const cutoff = this.clock.now() - EVENTS_TTL_MS;
    let drop = list.length - MAX_EVENTS_PER_POD;
    while (drop > 0 && list.length && list[0]!.lastTimestamp < cutoff) {
      list.shift();
      drop--;
    }
    // Never more than this, however recent: a pod with ever-new messages must stay bounded.
    if (list.length > MAX_EVENTS_PER_POD * 10) list.splice(0, list.length - MAX_EVENTS_PER_POD * 10);
  }

  private persist(e: PodEvent | { forget: string }): void {
    const path = this.opts.journal;
    if (!path) return;
    try {
      let line = `${JSON.stringify(e)}\n`;
      if (this.journalBytes + line.length > this.rewriteAt) this.rewrite(path);
      else if (this.cutShort) line = `\n${line}`;
      this.cutShort = false;
      appendFileSync(path, line, { mode: 0o600 });
      this.journalBytes += Buffer.byteLength(line);
    } catch {
      // Events are for people: a full disk must not stop a sync.
    }
  }

  /** The journal again, from memory only (what is bounded), through a rename so a crash leaves one whole file. */
  private rewrite(path: string): void {
    mkdirSync(dirname(path), { recursive: true });
    const text = this.all()
      .map((e) => `${JSON.stringify(e)}\n`)
      .join('');
    writeFileSync(`${path}.tmp`, text, { mode: 0o600 });
    renameSync(`${path}.tmp`, path);
    this.journalBytes = statSync(path).size;
    this.rewriteAt = Math.max(this.opts.maxJournalBytes ?? EVENTS_JOURNAL_MAX_BYTES, 2 * this.journalBytes);
  }

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
      // Most messages recur across pods (Created container app): one copy of each.
      event = {
        uid: pod.uid,
        namespace: pod.namespace,
        name: pod.name,
        container,
        type,
        reason,
        message: intern(message),
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
      };
      list.push(event);
      this.trim(list);
    }
    this.persist(event);
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
    if (this.byPod.delete(uid)) this.persist({ forget: uid });
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
    involvedObject: {
      kind: 'Pod',
      apiVersion: 'v1',
      namespace: e.namespace,
      name: e.name,
      uid: e.uid,
      ...(e.container ? { fieldPath: containerFieldPath(e.container) } : {}),
    },
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
