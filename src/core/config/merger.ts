import type { IPod } from 'kubernetes-models/v1';
import { canonicalJSON } from '../util/canonical-json.js';
import type { PodUpdate } from '../loop.js';
import { CONFIG_FILE_ANNOTATION, CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION } from '../pod/index.js';
import { podKey, podMeta } from '../util/pod-key.js';

const fileOf = (pod: IPod): string | undefined => pod.metadata?.annotations?.[CONFIG_FILE_ANNOTATION];

/** What decides UPDATE rather than RECONCILE: the content, not when it was seen. */
function contentKey(pod: IPod): string {
  return pod.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] ?? canonicalJSON({ spec: pod.spec, labels: pod.metadata?.labels });
}

/** The pod with the first-seen time of the one it replaces: a local annotation, never a change (kubelet's checkAndUpdatePod). */
function keepFirstSeen(pod: IPod, old: IPod): IPod {
  const seen = old.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION];
  if (seen === undefined || pod.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION] === seen) return pod;
  return { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata?.annotations, [CONFIG_SEEN_ANNOTATION]: seen } } };
}

/**
 * The kubelet's podStorage.Merge in incremental mode: each source hands over
 * its whole set (a snapshot); the merger emits ADD, UPDATE, REMOVE, RECONCILE
 * and DELETE for what changed, per source.
 */
export class PodConfigMerger {
  private readonly bySource = new Map<string, Map<string, IPod>>();

  constructor(
    private readonly onUpdate: (u: PodUpdate) => void,
    /** A pod refused: `owner` is the source that keeps its namespace/name or UID, `why` says which pod and how. */
    private readonly onConflict?: (source: string, pod: IPod, owner: string, why: string) => void,
  ) {}

  merge(source: string, snapshot: IPod[]): void {
    const previous = this.bySource.get(source) ?? new Map<string, IPod>();
    const next = new Map<string, IPod>();
    const adds: IPod[] = [];
    const updates: IPod[] = [];
    const reconciles: IPod[] = [];
    const deletes: IPod[] = [];
    // The kubelet's filterInvalidPods: within a snapshot, the first pod of a namespace/name (or UID) wins.
    const keys = new Map<string, IPod>();
    for (const pod of snapshot) {
      const uid = podMeta(pod).uid;
      const owner = this.ownerOfName(pod, source);
      if (owner) {
        this.onConflict?.(source, pod, owner, `is already defined by the ${owner} source`);
        continue;
      }
      const first = keys.get(podKey(pod)) ?? next.get(uid);
      if (first) {
        const why =
          podKey(first) === podKey(pod)
            ? `is defined twice (also in ${fileOf(first) ?? `the ${source} source`}); the first is kept`
            : `has metadata.uid ${uid}, which pod ${podKey(first)} already holds (${fileOf(first) ?? `the ${source} source`})`;
        this.onConflict?.(source, pod, source, why);
        continue;
      }
      const holder = this.holderOfUID(uid, podKey(pod), source);
      if (holder) {
        this.onConflict?.(
          source,
          pod,
          holder.source,
          `has metadata.uid ${uid}, which pod ${podKey(holder.pod)} of the ${holder.source} source already holds`,
        );
        continue;
      }
      keys.set(podKey(pod), pod);
      const old = previous.get(uid);
      if (!old) {
        next.set(uid, pod);
        adds.push(pod);
        continue;
      }
      // A re-read of an unchanged file only moves the seen time: keep the object, emit nothing.
      const current = keepFirstSeen(pod, old);
      next.set(uid, current);
      if (current.metadata?.deletionTimestamp && !old.metadata?.deletionTimestamp) deletes.push(current);
      else if (contentKey(old) !== contentKey(current)) updates.push(current);
      else if (canonicalJSON(old) !== canonicalJSON(current)) reconciles.push(current);
      else next.set(uid, old);
    }
    const removes = [...previous].filter(([uid]) => !next.has(uid)).map(([, pod]) => pod);
    this.bySource.set(source, next);
    const emit = (op: PodUpdate['op'], pods: IPod[]) => pods.length && this.onUpdate({ op, source, pods });
    emit('ADD', adds);
    emit('UPDATE', updates);
    emit('DELETE', deletes);
    emit('REMOVE', removes);
    emit('RECONCILE', reconciles);
  }

  /** Another source that already holds this namespace/name. */
  private ownerOfName(pod: IPod, source: string): string | undefined {
    const key = podKey(pod);
    for (const [other, pods] of this.bySource) {
      if (other === source) continue;
      for (const p of pods.values()) if (podKey(p) === key) return other;
    }
    return undefined;
  }

  /** A pod of another source, of another namespace/name, with this UID: two pods in one sandbox. */
  private holderOfUID(uid: string, key: string, source: string): { source: string; pod: IPod } | undefined {
    for (const [other, pods] of this.bySource) {
      if (other === source) continue;
      const p = pods.get(uid);
      if (p && podKey(p) !== key) return { source: other, pod: p };
    }
    return undefined;
  }

  /** The source that holds this namespace/name, if any. */
  sourceOfName(namespace: string, name: string): string | undefined {
    for (const [source, pods] of this.bySource) {
      for (const p of pods.values()) if (podMeta(p).namespace === namespace && podMeta(p).name === name) return source;
    }
    return undefined;
  }

  /** Housekeeping waits until every expected source delivered its first snapshot. */
  allSourcesReady(expected: string[]): boolean {
    return expected.every((s) => this.bySource.has(s));
  }

  pods(): IPod[] {
    return [...this.bySource.values()].flatMap((m) => [...m.values()]);
  }
}
