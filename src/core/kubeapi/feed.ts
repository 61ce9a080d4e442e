import { createHash } from 'node:crypto';
import type { IConfigMap, IPod, ISecret } from 'kubernetes-models/v1';
import { toV1Event, type PodEvent } from '../events.js';
import type { NodeAgent } from '../node/agent.js';
import { namespaceObjects } from './namespaces.js';
import type { WatchCache } from './store.js';
import type { ObjectFiles } from './object-files.js';

type Meta = Record<string, unknown> & { name?: string; namespace?: string; creationTimestamp?: string; deletionTimestamp?: string };
type Obj = Record<string, unknown> & { metadata?: Meta };

/**
 * The hidden resource that keeps, per pod, what the API server would keep and the agent does not
 * (managedFields, creationTimestamp): written with each API write, read back at a restart.
 */
export const POD_META = 'podmeta';

/** Events kept in the API's store: the newest, as the API server keeps events for an hour. */
const EVENTS_KEPT = 2000;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * The pods, events, namespaces and Node the kube API serves, kept in its store from the agent's own
 * (its pods with their status, its events), so that every client reads the one truth the agent has.
 */
export class KubeFeed {
  private readonly stops: (() => void)[] = [];
  private readonly eventNames: string[] = [];
  private namespacesSeen = new Set<string>();

  constructor(
    private readonly opts: {
      agent: NodeAgent;
      cache: WatchCache;
      files: ObjectFiles;
      now: () => number;
      /** The Namespaces clients made: shown whether in use or not. */
      declared?: ReadonlySet<string>;
      /** The Node as the kubelet would post it now. */
      node: () => Obj;
      /** How often the Node's heartbeat moves (the kubelet's nodeStatusReportFrequency). */
      nodeEveryMs?: number;
      setInterval?: (fn: () => void, ms: number) => { unref?: () => void } | number;
      clearInterval?: (t: unknown) => void;
    },
  ) {}

  start(): void {
    const { agent, cache } = this.opts;
    for (const pod of agent.pods()) this.putPod(pod);
    this.stops.push(
      agent.watchPods((e) => {
        const [ns, name] = [e.object.metadata?.namespace ?? 'default', e.object.metadata?.name ?? ''];
        if (e.type === 'DELETED') {
          cache.remove('pods', ns, name);
          if (cache.remove(POD_META, ns, name)) this.opts.files.delete(POD_META, ns, name);
        } else this.putPod(e.object);
        this.syncNamespaces();
      }),
    );
    this.publishObjects();
    for (const e of agent.events()) this.putEvent(e);
    this.stops.push(agent.watchEvents((e) => this.putEvent(e)));
    this.syncNamespaces();
    cache.put('nodes', this.opts.node());
    const every = this.opts.nodeEveryMs ?? 60_000;
    const set = this.opts.setInterval ?? setInterval;
    const timer = set(() => cache.put('nodes', this.opts.node()), every);
    if (typeof timer === 'object') timer.unref?.();
    this.stops.push(() => (this.opts.clearInterval ?? clearInterval)(timer as never));
  }

  stop(): void {
    for (const stop of this.stops.splice(0)) stop();
  }

  /** The API's ConfigMaps and Secrets handed to the agent's kubelet: at start and after each write of one. */
  publishObjects(): void {
    const { agent, cache, files } = this.opts;
    const dates = new Map<object, number>();
    const list = (resource: 'configmaps' | 'secrets') =>
      cache.list(resource).items.map((o) => {
        const at = files.writtenAt(resource, o.metadata?.namespace, o.metadata?.name ?? '');
        if (at !== undefined) dates.set(o, at);
        return o;
      });
    agent.setApiObjects({
      configMaps: list('configmaps') as IConfigMap[],
      secrets: list('secrets') as ISecret[],
      // When each was written, which a restart keeps: a pod's applied copy written since is newer.
      writtenAt: (o) => dates.get(o),
    });
  }

  /**
   * A namespace in use or made by a client appears, one neither in use nor made any longer goes (default stays, and a
   * deleted one once its content is gone); called after every write too. One already there is left as it is.
   */
  syncNamespaces(): void {
    const { cache } = this.opts;
    const used = cache.namespaces.inUse(['pods', 'configmaps', 'secrets']).add('default');
    for (const ns of this.opts.declared ?? []) used.add(ns);
    // The same namespaces as last time (most pod changes): nothing to put or remove.
    if (used.size === this.namespacesSeen.size && [...used].every((ns) => this.namespacesSeen.has(ns))) return;
    this.namespacesSeen = used;
    for (const ns of cache.list('namespaces').items) {
      const name = ns.metadata!.name!;
      if (!used.has(name)) cache.remove('namespaces', undefined, name);
    }
    const missing = [...used].filter((name) => !cache.get('namespaces', undefined, name));
    for (const ns of namespaceObjects(missing, this.opts.now()) as unknown as Obj[])
      if (missing.includes(ns.metadata!.name!)) cache.put('namespaces', ns);
  }

  private putPod(pod: IPod): void {
    const { cache } = this.opts;
    const meta = (pod.metadata ?? {}) as Meta;
    const ns = meta.namespace ?? 'default';
    const previous = cache.get('pods', ns, meta.name ?? '') as Obj | undefined;
    const kept = cache.get(POD_META, ns, meta.name ?? '') as Obj | undefined;
    const api = kept && (!kept.metadata?.['uid'] || kept.metadata['uid'] === meta['uid']) ? kept.metadata! : undefined;
    const managedFields = (meta['managedFields'] ?? api?.['managedFields']) as unknown[] | undefined;
    const created =
      meta.creationTimestamp ??
      (api?.creationTimestamp as string | undefined) ??
      (previous?.metadata?.creationTimestamp as string | undefined) ??
      (pod.metadata?.annotations?.['kubernetes.io/config.seen'] as string | undefined) ??
      pod.status?.startTime ??
      iso(this.opts.now());
    // A deletion the API asked for stays on the pod until it is gone, whatever its later statuses say.
    const deletion = meta.deletionTimestamp
      ? {}
      : previous?.metadata?.deletionTimestamp
        ? {
            deletionTimestamp: previous.metadata.deletionTimestamp,
            deletionGracePeriodSeconds: previous.metadata['deletionGracePeriodSeconds'],
            // and the generation the deletion gave it, which the agent's statuses do not count.
            generation: Math.max(Number(previous.metadata['generation'] ?? 0), Number(meta['generation'] ?? 0)) || undefined,
          }
        : {};
    cache.put('pods', {
      ...pod,
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...meta, namespace: ns, creationTimestamp: created, ...(managedFields ? { managedFields } : {}), ...deletion },
    });
  }

  private putEvent(e: PodEvent): void {
    const { cache } = this.opts;
    const v1 = toV1Event(e) as Obj;
    const meta = v1.metadata!;
    cache.put('events', {
      ...v1,
      metadata: { ...meta, uid: uidOf(`event/${meta.namespace}/${meta.name}`), creationTimestamp: iso(e.firstTimestamp) },
    });
    const key = `${meta.namespace}/${meta.name}`;
    if (!this.eventNames.includes(key)) this.eventNames.push(key);
    while (this.eventNames.length > EVENTS_KEPT) {
      const [ns, name] = this.eventNames.shift()!.split('/') as [string, string];
      cache.remove('events', ns, name);
    }
  }
}

/** A stable UID for an object the agent derives (an event, a namespace): the same every time it is served. */
export function uidOf(key: string): string {
  const h = createHash('sha256').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
