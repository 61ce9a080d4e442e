import type { IPod } from 'kubernetes-models/v1';
import { canonicalJSON } from '../kuberuntime/hash.js';
import type { PodUpdate } from '../loop.js';
import { CONFIG_HASH_ANNOTATION } from '../pod/index.js';

/** What decides UPDATE rather than RECONCILE: the content, not when it was seen. */
function contentKey(pod: IPod): string {
  return pod.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] ?? canonicalJSON({ spec: pod.spec, labels: pod.metadata?.labels });
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
    private readonly onConflict?: (source: string, pod: IPod, owner: string) => void,
  ) {}

  merge(source: string, snapshot: IPod[]): void {
    const previous = this.bySource.get(source) ?? new Map<string, IPod>();
    const next = new Map<string, IPod>();
    const adds: IPod[] = [];
    const updates: IPod[] = [];
    const reconciles: IPod[] = [];
    const deletes: IPod[] = [];
    for (const pod of snapshot) {
      const uid = pod.metadata!.uid!;
      const owner = this.ownerOfName(pod, source);
      if (owner) {
        this.onConflict?.(source, pod, owner);
        continue;
      }
      next.set(uid, pod);
      const old = previous.get(uid);
      if (!old) adds.push(pod);
      else if (pod.metadata?.deletionTimestamp && !old.metadata?.deletionTimestamp) deletes.push(pod);
      else if (contentKey(old) !== contentKey(pod)) updates.push(pod);
      else if (canonicalJSON(old) !== canonicalJSON(pod)) reconciles.push(pod);
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
    const key = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
    for (const [other, pods] of this.bySource) {
      if (other === source) continue;
      for (const p of pods.values()) if (`${p.metadata!.namespace}/${p.metadata!.name}` === key) return other;
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
