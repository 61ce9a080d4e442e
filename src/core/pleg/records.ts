import { STATE_ORDER, type PlegState, type PodObjectState, type Seen } from './events.js';

/**
 * The generic PLEG's podRecords: what it last saw of each sandbox and container, indexed by pod
 * UID so that a pod's refresh touches its own, not every one.
 */
export class PodRecords {
  readonly previous = new Map<string, Seen>();
  readonly byPod = new Map<string, Set<string>>();

  /** Records what was seen of a sandbox or container, with its pod's index. */
  see(id: string, seen: Seen): void {
    const before = this.previous.get(id);
    if (before && before.uid !== seen.uid) this.byPod.get(before.uid)?.delete(id);
    this.previous.set(id, seen);
    let ids = this.byPod.get(seen.uid);
    if (!ids) this.byPod.set(seen.uid, (ids = new Set()));
    ids.add(id);
  }

  forget(id: string): void {
    const before = this.previous.get(id);
    if (!before) return;
    this.previous.delete(id);
    const ids = this.byPod.get(before.uid);
    ids?.delete(id);
    if (ids?.size === 0) this.byPod.delete(before.uid);
  }

  /** The pod a sandbox or container belongs to, as the last relist or refresh saw it. */
  podOf(id: string): { uid: string; name: string; namespace: string } | undefined {
    const seen = this.previous.get(id);
    return seen && { uid: seen.uid, name: seen.name, namespace: seen.namespace };
  }

  /** The state a sandbox or container was last seen in; undefined when it is not known (or gone). */
  stateOf(id: string): PlegState | undefined {
    return this.previous.get(id)?.state;
  }

  /**
   * Whether a runtime event's view of a pod (its sandbox and containers, with their states) is
   * known already, or overtaken: an event that says nothing new needs no read. (A runtime's stream
   * can lag well behind: 5,000 starting pods send 30,000 events, most of them overtaken by a relist
   * or an earlier read by the time they arrive.) Only objects and states are compared: an object
   * not known, or known in an earlier state, is news.
   */
  knows(uid: string, objects: readonly PodObjectState[]): boolean {
    if (objects.length === 0) return false;
    for (const o of objects) {
      const seen = this.previous.get(o.id);
      // A state never goes back (created, running, exited): one at or past the event's is newer news.
      if (!seen || seen.uid !== uid || STATE_ORDER[seen.state] < STATE_ORDER[o.state]) return false;
    }
    return true;
  }
}
