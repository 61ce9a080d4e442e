import { isDeepStrictEqual } from 'node:util';
import { realClock, type Clock, type TimerHandle } from '../clock.js';
import { CORE_RESOURCES } from './discovery.js';
import { NamespaceCounts } from './namespaces.js';
import { parseFieldSelector, parseLabelSelector, type FieldMatcher, type LabelMatcher } from './selectors.js';
import { KubeStatusError } from './status.js';

/**
 * The API server's watch cache, for one agent: every kind's objects under one resourceVersion counter (as etcd's revision),
 * a ring of the last changes for watches from an older version, and lists paged with continue tokens at a fixed version.
 * Objects are shared, never copied: what put() takes and get()/list()/watch() give must not be mutated.
 */

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    managedFields?: unknown[];
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
export interface WatchEvent {
  type: WatchEventType;
  object: KubeObject;
}

export interface WatchCacheOptions {
  /** The version of the empty cache: the first change gets startVersion + 1. */
  startVersion: number;
  /** How many changes are kept for watches and continued lists from an older version. */
  historySize?: number;
  clock?: Clock;
  /** How often a watch that allows bookmarks gets one (the API server: about a minute). */
  bookmarkIntervalMs?: number;
  /**
   * Called before a version above those reserved so far is handed out, to make `upTo` durable (ObjectFiles.saveVersion),
   * so that a restarted agent starts above every version it ever gave. Reserved reserveBlock at a time.
   */
  reserveVersions?: (upTo: number) => void;
  reserveBlock?: number;
  /** kind and apiVersion of resources beyond the core ones, for bookmarks. */
  kinds?: Record<string, { kind: string; apiVersion: string }>;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  /** Set as the API server does: only when the list is cut by limit and has no selector. */
  remainingItemCount?: number;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  /** Defaults as the API server's: true for no resourceVersion or "0", else false. */
  sendInitialEvents?: boolean;
  allowBookmarks?: boolean;
}

export interface WatchHandle {
  stop(): void;
}

type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';
/** One change in the history: the object as it became (DELETED: as it was, at the deletion's version) and as it was. */
interface Change {
  type: ChangeType;
  resource: string;
  key: string;
  object: KubeObject;
  prev?: KubeObject;
  version: number;
}

interface Watcher {
  resource: string;
  namespace?: string;
  labels: LabelMatcher;
  fields: FieldMatcher;
  bookmarks: boolean;
  onEvent: (e: WatchEvent) => void;
  /** The last version this watcher was brought up to: a change at or below it is not sent again. */
  seen: number;
  stopped: boolean;
}

/** The core group's kinds by resource, as discovery serves them. */
const CORE_KINDS: Record<string, string> = Object.fromEntries(CORE_RESOURCES.map((r) => [r.name, r.kind]));

const CONTINUE_TOO_OLD =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue ' +
  'parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided ' +
  'token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was ' +
  'returned and now may show up in the list.';

/** 410 Expired for a continue token older than the history, carrying the token that continues inconsistently (metadata.continue). */
export class ContinueExpiredError extends KubeStatusError {
  constructor(readonly continueToken: string) {
    super(410, 'Expired', CONTINUE_TOO_OLD);
  }
  override toStatus(): Record<string, unknown> {
    return { ...super.toStatus(), metadata: { continue: this.continueToken } };
  }
}

const keyOf = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

/** The object without what changes on every write: its resourceVersion and the times of its managedFields entries. */
function comparable(o: KubeObject): unknown {
  const { resourceVersion: _rv, managedFields, ...meta } = o.metadata ?? {};
  const mf = Array.isArray(managedFields)
    ? managedFields.map((f) => {
        if (!f || typeof f !== 'object') return f;
        const { time: _t, ...rest } = f as Record<string, unknown>;
        return rest;
      })
    : managedFields;
  return { ...o, metadata: { ...meta, ...(mf !== undefined ? { managedFields: mf } : {}) } };
}

const atVersion = (o: KubeObject, version: number): KubeObject => ({ ...o, metadata: { ...o.metadata, resourceVersion: String(version) } });

/** A resourceVersion as the API server parses it (ParseUint, with Go's words); "" and "0" are 0. */
function parseVersion(rv: string): number {
  if (rv === '' || rv === '0') return 0;
  const why = !/^\d+$/.test(rv) ? 'invalid syntax' : !Number.isSafeInteger(Number(rv)) ? 'value out of range' : '';
  if (!why) return Number(rv);
  const q = JSON.stringify(rv);
  throw new KubeStatusError(400, 'BadRequest', `resourceVersion: Invalid value: ${q}: strconv.ParseUint: parsing ${q}: ${why}`);
}

interface ContinueToken {
  rv: number;
  start: string;
}

function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: t.rv, start: t.start })).toString('base64url');
}

const badContinue = (why: string) => new KubeStatusError(400, 'BadRequest', `invalid continue token: continue key is not valid: ${why}`);

function decodeContinue(token: string): ContinueToken {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw badContinue('not a base64url-encoded JSON object');
  }
  const p = parsed as { v?: unknown; rv?: unknown; start?: unknown } | null;
  if (!p || typeof p !== 'object' || p.v !== 'meta.k8s.io/v1') throw badContinue('server does not recognize this encoded version');
  if (typeof p.rv !== 'number' || !Number.isSafeInteger(p.rv) || (p.rv < 1 && p.rv !== -1)) {
    throw badContinue('incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
  if (typeof p.start !== 'string' || p.start === '') throw badContinue('encoded start key is empty');
  return { rv: p.rv, start: p.start };
}

export class WatchCache {
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  readonly namespaces = new NamespaceCounts(); // in use: counted as objects are put and removed, so that no list is needed
  private readonly ring: (Change | undefined)[];
  private head = 0;
  private count = 0;
  /** Watches from this version on can be served from the ring: every change after it is still there. */
  private floor: number;
  private version: number;
  private reserved: number;
  private readonly watchers = new Set<Watcher>();
  private readonly queue: Change[] = [];
  private dispatching = false;
  private bookmarkTimer?: TimerHandle;
  private readonly clock: Clock;
  private readonly bookmarkIntervalMs: number;

  constructor(private readonly opts: WatchCacheOptions) {
    if (!Number.isSafeInteger(opts.startVersion) || opts.startVersion < 0) {
      throw new Error(`startVersion: expected a non-negative integer, got ${opts.startVersion}`);
    }
    this.ring = new Array<Change | undefined>(Math.max(1, opts.historySize ?? 1000));
    this.version = this.floor = this.reserved = opts.startVersion;
    this.clock = opts.clock ?? realClock;
    this.bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 60_000;
  }

  /** The current version: the last change's, or startVersion before any. */
  get resourceVersion(): string {
    return String(this.version);
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objects.get(resource)?.get(keyOf(namespace, name));
  }

  /**
   * Stores obj (ADDED, or MODIFIED when its namespace/name is there) at the next version and returns it as stored. An
   * object equal to the stored one but for resourceVersion and managedFields times is no change: no event, the stored one back.
   */
  put(resource: string, obj: KubeObject): KubeObject {
    const name = obj.metadata?.name;
    if (!name) throw new Error(`${resource}: an object without metadata.name cannot be stored`);
    const key = keyOf(obj.metadata?.namespace, name);
    let byKey = this.objects.get(resource);
    const prev = byKey?.get(key);
    if (prev && isDeepStrictEqual(comparable(prev), comparable(obj))) return prev;
    const version = this.nextVersion();
    const stored = atVersion(obj, version);
    if (!byKey) this.objects.set(resource, (byKey = new Map()));
    byKey.set(key, stored);
    if (!prev) this.namespaces.add(resource, obj.metadata?.namespace, 1);
    this.record({ type: prev ? 'MODIFIED' : 'ADDED', resource, key, object: stored, prev, version });
    return stored;
  }

  /** Removes an object (DELETED, with the object at a new, final version) and returns that; undefined when absent. */
  remove(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const key = keyOf(namespace, name);
    const byKey = this.objects.get(resource);
    const prev = byKey?.get(key);
    if (!byKey || !prev) return undefined;
    const version = this.nextVersion();
    const final = atVersion(prev, version);
    byKey.delete(key);
    this.namespaces.add(resource, prev.metadata?.namespace, -1);
    this.record({ type: 'DELETED', resource, key, object: final, prev, version });
    return final;
  }

  list(resource: string, opts: ListOptions = {}): ListResult {
    const labels = parseLabelSelector(opts.labelSelector ?? '');
    const fields = parseFieldSelector(opts.fieldSelector ?? '', resource);
    if (opts.limit !== undefined && (!Number.isInteger(opts.limit) || opts.limit < 0)) {
      throw new KubeStatusError(400, 'BadRequest', 'list limit must not be negative');
    }
    const limit = opts.limit || Infinity;
    let at = this.version;
    let start = '';
    if (opts.continue) {
      const token = decodeContinue(opts.continue);
      start = token.start;
      if (token.rv !== -1) {
        // -1: the inconsistent continuation a 410 hands out, read at the current version.
        if (token.rv < this.floor) throw new ContinueExpiredError(encodeContinue({ rv: -1, start }));
        if (token.rv > this.version) throw badContinue('its resourceVersion is in the future');
        at = token.rv;
      }
    }
    const state = this.snapshot(resource, at);
    const prefix = opts.namespace ? `${opts.namespace}/` : '';
    const keys = [...state.keys()].filter((k) => k.startsWith(prefix) && k >= start).sort();
    const items: KubeObject[] = [];
    let i = 0;
    for (; i < keys.length && items.length < limit; i++) {
      const o = state.get(keys[i]!)!;
      if (this.matchesFilters(o, undefined, labels, fields)) items.push(o);
    }
    const result: ListResult = { items, resourceVersion: String(at) };
    if (i < keys.length) {
      result.continue = encodeContinue({ rv: at, start: `${keys[i - 1]!}\0` });
      if (!opts.labelSelector && !opts.fieldSelector) result.remainingItemCount = keys.length - i;
    }
    return result;
  }

  /**
   * Watches one resource. No resourceVersion (or "0"): an ADDED for each current match, then the changes. A version: every
   * change after it, then the changes; older than the history keeps: 410 Expired, as the API server's watch cache answers.
   * A change that makes an object match is sent as ADDED, one that makes it stop matching as DELETED.
   */
  watch(resource: string, opts: WatchOptions, onEvent: (e: WatchEvent) => void): WatchHandle {
    const w: Watcher = {
      resource,
      namespace: opts.namespace || undefined,
      labels: parseLabelSelector(opts.labelSelector ?? ''),
      fields: parseFieldSelector(opts.fieldSelector ?? '', resource),
      bookmarks: !!opts.allowBookmarks,
      onEvent,
      seen: this.version,
      stopped: false,
    };
    const rvText = opts.resourceVersion ?? '';
    const rv = parseVersion(rvText);
    const initial = opts.sendInitialEvents ?? (rvText === '' || rvText === '0');
    if (rv > this.version) throw tooLarge(rv, this.version);
    if (rv > 0 && !initial && rv < this.floor) {
      throw new KubeStatusError(410, 'Expired', `too old resource version: ${rv} (${this.floor})`);
    }
    const handle = { stop: () => this.stopWatcher(w) };
    if (initial) {
      for (const [, o] of [...this.snapshot(resource, this.version)].sort(([a], [b]) => (a < b ? -1 : 1))) {
        if (this.matchesFilters(o, w.namespace, w.labels, w.fields) && !this.send(w, { type: 'ADDED', object: o })) return handle;
      }
      if (opts.sendInitialEvents && w.bookmarks) {
        const end = this.bookmark(resource, { 'k8s.io/initial-events-end': 'true' });
        if (!this.send(w, end)) return handle;
      }
    } else if (rv > 0) {
      w.seen = rv;
      for (const c of this.history()) if (c.version > rv && !this.deliver(w, c)) return handle;
      w.seen = this.version;
    }
    this.watchers.add(w);
    if (w.bookmarks) this.armBookmarks();
    return handle;
  }

  // ---- internals ----

  private nextVersion(): number {
    const v = this.version + 1;
    if (v > this.reserved && this.opts.reserveVersions) {
      const upTo = v + Math.max(1, this.opts.reserveBlock ?? 10_000) - 1;
      this.opts.reserveVersions(upTo);
      this.reserved = upTo;
    }
    this.version = v;
    return v;
  }

  private record(c: Change): void {
    const size = this.ring.length;
    if (this.count === size) {
      this.floor = this.ring[this.head]!.version;
      this.ring[this.head] = c;
      this.head = (this.head + 1) % size;
    } else {
      this.ring[(this.head + this.count) % size] = c;
      this.count++;
    }
    this.queue.push(c);
    if (this.dispatching) return;
    // A listener that writes from its callback queues its change behind the one being sent: every listener sees them in order.
    this.dispatching = true;
    try {
      for (let i = 0; i < this.queue.length; i++) {
        for (const w of this.watchers) this.deliver(w, this.queue[i]!);
      }
    } finally {
      this.queue.length = 0;
      this.dispatching = false;
    }
  }

  /** The changes kept, oldest first. */
  private *history(): Generator<Change> {
    for (let i = 0; i < this.count; i++) yield this.ring[(this.head + i) % this.ring.length]!;
  }

  /** The resource's objects at version `at` (not below floor): the current ones with every later change undone. */
  private snapshot(resource: string, at: number): Map<string, KubeObject> {
    const current = this.objects.get(resource) ?? new Map<string, KubeObject>();
    if (at >= this.version) return current;
    const undo = new Map<string, KubeObject | undefined>();
    for (let i = this.count - 1; i >= 0; i--) {
      const c = this.ring[(this.head + i) % this.ring.length]!;
      if (c.version <= at) break;
      if (c.resource === resource) undo.set(c.key, c.type === 'ADDED' ? undefined : c.prev);
    }
    const state = new Map(current);
    for (const [k, o] of undo) {
      if (o) state.set(k, o);
      else state.delete(k);
    }
    return state;
  }

  private matchesFilters(o: KubeObject, namespace: string | undefined, labels: LabelMatcher, fields: FieldMatcher): boolean {
    return (!namespace || o.metadata?.namespace === namespace) && labels(o.metadata?.labels) && fields(o);
  }

  /** Sends one change to a watcher as its filter sees it; false when the watcher is (now) stopped. */
  private deliver(w: Watcher, c: Change): boolean {
    if (w.stopped) return false;
    if (c.resource !== w.resource || c.version <= w.seen) return true;
    w.seen = c.version;
    const now = c.type !== 'DELETED' && this.matchesFilters(c.object, w.namespace, w.labels, w.fields);
    const before = c.prev !== undefined && this.matchesFilters(c.prev, w.namespace, w.labels, w.fields);
    if (now) return this.send(w, { type: before ? c.type : 'ADDED', object: c.object });
    // No longer matching: DELETED with the object as it last matched, at this change's version (as the watch cache sends it).
    if (before) return this.send(w, { type: 'DELETED', object: c.type === 'DELETED' ? c.object : atVersion(c.prev!, c.version) });
    return true;
  }

  private send(w: Watcher, e: WatchEvent): boolean {
    if (w.stopped) return false;
    try {
      w.onEvent(e);
      return true;
    } catch {
      // A listener that throws is dropped; the others go on.
      this.stopWatcher(w);
      return false;
    }
  }

  private stopWatcher(w: Watcher): void {
    w.stopped = true;
    this.watchers.delete(w);
    if (this.bookmarkTimer && ![...this.watchers].some((x) => x.bookmarks)) {
      this.clock.clearTimeout(this.bookmarkTimer);
      this.bookmarkTimer = undefined;
    }
  }

  private bookmark(resource: string, annotations?: Record<string, string>): WatchEvent {
    const kind = this.opts.kinds?.[resource] ?? { kind: CORE_KINDS[resource] ?? '', apiVersion: 'v1' };
    const metadata = { resourceVersion: this.resourceVersion, ...(annotations ? { annotations } : {}) };
    return { type: 'BOOKMARK', object: { kind: kind.kind, apiVersion: kind.apiVersion, metadata } };
  }

  private armBookmarks(): void {
    if (this.bookmarkTimer) return;
    this.bookmarkTimer = this.clock.setTimeout(() => {
      this.bookmarkTimer = undefined;
      for (const w of [...this.watchers]) if (w.bookmarks) this.send(w, this.bookmark(w.resource));
      if ([...this.watchers].some((x) => x.bookmarks)) this.armBookmarks();
    }, this.bookmarkIntervalMs);
  }
}

function tooLarge(rv: number, current: number): KubeStatusError {
  return new KubeStatusError(504, 'Timeout', `Timeout: Too large resource version: ${rv}, current: ${current}`, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  });
}
