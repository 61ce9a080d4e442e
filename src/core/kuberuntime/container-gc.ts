import { newerFirst, type RuntimePodStatus } from '../container/types.js';
import type { RuntimeService } from '../cri/client.js';
import { ignoreNotFound } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import { eachBounded, MAX_KILLS_IN_FLIGHT_PER_POD } from './bounded.js';
import * as L from './labels.js';
import type { PodStatusReader } from './pod-status.js';

/** The kubelet's --maximum-dead-containers-per-container and --maximum-dead-containers (-1: no bound). */
export interface ContainerGCPolicy {
  maxPerPodContainer: number;
  maxContainers: number;
}
export const DEFAULT_CONTAINER_GC: ContainerGCPolicy = { maxPerPodContainer: 1, maxContainers: -1 };

/** The kubelet's containerGC (kuberuntime_gc.go): which dead containers go, and the removal of a pod's. */
export class ContainerGC {
  constructor(
    private readonly runtime: RuntimeService,
    readonly policy: ContainerGCPolicy,
    private readonly statusReader: PodStatusReader,
  ) {}

  /**
   * Keeps only the newest dead instances of a container (MaxPerPodContainer, 1 by default),
   * and removes instances that were created but never started (a start that
   * failed, or a create the runtime finished after podctl's deadline): called
   * once a newer instance runs, they would otherwise stay for ever.
   */
  async pruneDeadContainers(status: RuntimePodStatus, name: string, opts: { neverStarted?: boolean } = {}): Promise<void> {
    const instances = status.containers.filter((c) => c.name === name);
    const dead = instances.filter((c) => c.state === 'exited').sort(newerFirst);
    // Only the pod's own lane, right after a start, knows no start of these is still under way.
    const neverStarted = opts.neverStarted ? instances.filter((c) => c.state === 'created') : [];
    for (const old of [...dead.slice(this.keepPerContainer), ...neverStarted]) {
      await ignoreNotFound(this.runtime.removeContainer(old.id));
    }
  }

  async pruneAllDead(status: RuntimePodStatus): Promise<void> {
    for (const name of new Set(status.containers.map((c) => c.name))) await this.pruneDeadContainers(status, name);
  }

  /** Keeps the newest dead instance per pod and container name; returns how many were removed. */
  async removeDeadContainers(containers: readonly T.ContainerSummary[], keepPod: (uid: string) => boolean): Promise<number> {
    const groups = new Map<string, T.ContainerSummary[]>();
    for (const c of containers) {
      if (c.state !== 'CONTAINER_EXITED') continue;
      const uid = c.labels[L.POD_UID_LABEL];
      if (!uid || !keepPod(uid)) continue;
      const key = `${uid}/${c.labels[L.CONTAINER_NAME_LABEL]}`;
      groups.set(key, [...(groups.get(key) ?? []), c]);
    }
    const doomed: T.ContainerSummary[] = [];
    const kept: T.ContainerSummary[] = [];
    for (const dead of groups.values()) {
      dead.sort((a, b) => b.createdAt - a.createdAt);
      kept.push(...dead.slice(0, this.keepPerContainer));
      doomed.push(...dead.slice(this.keepPerContainer));
    }
    // Over the node-wide bound, the oldest of what is left go too (the kubelet's MaxContainers).
    const max = this.policy.maxContainers;
    if (max >= 0 && kept.length > max) doomed.push(...kept.sort((a, b) => a.createdAt - b.createdAt).slice(0, kept.length - max));
    for (const old of doomed) await ignoreNotFound(this.runtime.removeContainer(old.id));
    return doomed.length;
  }

  /** Every container of a pod that was killed. */
  async removeContainers(status: RuntimePodStatus): Promise<void> {
    // In parallel, as bounded as the kills: one after the other, 200 containers took longer than a delete waits.
    await eachBounded(status.containers, MAX_KILLS_IN_FLIGHT_PER_POD, async (c) => {
      await ignoreNotFound(this.runtime.removeContainer(c.id));
      this.statusReader.forget(c.id);
    });
  }

  /** Dead instances kept per container: a negative setting means no bound, as the kubelet's flag. */
  private get keepPerContainer(): number {
    const n = this.policy.maxPerPodContainer;
    return n < 0 ? Number.MAX_SAFE_INTEGER : n;
  }
}
