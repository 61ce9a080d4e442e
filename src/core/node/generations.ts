import { isDeepStrictEqual } from 'node:util';
import type { IPod, IPodSpec } from 'kubernetes-models/v1';
import type { PodUpdate } from '../loop.js';
import type { PodWorkers } from '../workers/pod-workers.js';
import { podMeta } from '../util/pod-key.js';

/**
 * The config branch's metadata.generation per UID (1 on ADD, one more per UPDATE that changes the
 * spec, as the API server counts: labels and annotations alone are no new generation), and the ADDs
 * of a UID whose previous life is still terminating, held until it is gone.
 */
export class PodGenerations {
  private readonly generations = new Map<string, number>();
  /** The spec of each UID's current generation (the merger's own object, not a copy). */
  private readonly specs = new Map<string, IPodSpec | undefined>();
  /** ADDs of a UID whose previous life is still terminating: replayed once it is gone. */
  private readonly readdAfterTermination = new Map<string, IPod>();

  constructor(private readonly workers: Pick<PodWorkers, 'state' | 'isWorking' | 'forget' | 'idle'>) {}

  /** The generation this node gave the pod's current version (1 for one it does not know yet). */
  of(uid: string): number {
    return this.generations.get(uid) ?? 1;
  }

  /** A pod handed over again that waits for its previous life to end. */
  pending(namespace: string, name: string): IPod | undefined {
    return [...this.readdAfterTermination.values()].find((x) => podMeta(x).namespace === namespace && podMeta(x).name === name);
  }

  /** The update as the loop takes it, with metadata.generation set (a copy: the merger's objects stay as read); undefined for none. */
  next(u: PodUpdate): PodUpdate | undefined {
    const pods: IPod[] = [];
    for (const pod of u.pods) {
      const uid = podMeta(pod).uid;
      const state = this.workers.state(uid);
      if (u.op === 'ADD' && state === 'terminated' && !this.workers.isWorking(uid)) {
        // Its previous life is over (onTerminated has come and gone; housekeeping has not yet dropped
        // the lane): handed over again, it starts anew now, instead of waiting for an end already past.
        this.workers.forget(uid);
      } else if (u.op === 'ADD' && (state === 'terminating' || state === 'terminated')) {
        // Handed over again while its previous life ends: start it once that is gone. Its generation
        // moves on now, so that a waiter takes no status of the life that is ending for the new one.
        const generation = (this.generations.get(uid) ?? 0) + 1;
        this.generations.set(uid, generation);
        this.specs.set(uid, pod.spec);
        this.readdAfterTermination.set(uid, { ...pod, metadata: { ...pod.metadata, generation } });
        continue;
      }
      if (u.op === 'REMOVE' || u.op === 'DELETE') this.readdAfterTermination.delete(uid);
      const previous = this.generations.get(uid) ?? 0;
      const respecified = u.op === 'UPDATE' && !isDeepStrictEqual(this.specs.get(uid), pod.spec);
      const generation = u.op === 'ADD' || respecified || previous === 0 ? previous + 1 : previous;
      this.generations.set(uid, generation);
      this.specs.set(uid, pod.spec);
      pods.push({ ...pod, metadata: { ...pod.metadata, generation } });
    }
    return pods.length ? { ...u, pods } : undefined;
  }

  /** A pod terminated: its generation goes, unless it was handed over again meanwhile; then `readd` gets it once its lane is idle. */
  terminated(uid: string, readd: (pod: IPod) => void): void {
    if (!this.readdAfterTermination.has(uid)) {
      this.generations.delete(uid);
      this.specs.delete(uid);
      return;
    }
    // The lane is still finishing this termination: its UID is free once it is idle.
    void this.workers.idle(uid).then(() => {
      const again = this.readdAfterTermination.get(uid);
      if (!again) return;
      this.readdAfterTermination.delete(uid);
      this.workers.forget(uid);
      readd(again);
    });
  }
}
