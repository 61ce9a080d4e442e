import type { IContainer, IPod } from 'kubernetes-models/v1';
import { dirUsage } from '../stats/disk.js';
import { bytes } from '../util/quantity.js';

/** The kubelet eviction manager's monitoring interval (--eviction-monitoring-period default). */
export const EVICTION_MONITORING_PERIOD_MS = 10_000;

/** A pod's disk emptyDirs with a sizeLimit: what the kubelet's eviction manager measures. */
export function limitedEmptyDirs(pod: IPod): { name: string; limit: string; bytes: number }[] {
  const out: { name: string; limit: string; bytes: number }[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    if (!v.emptyDir || (v.emptyDir.medium ?? '') !== '' || v.emptyDir.sizeLimit === undefined) continue;
    const limit = bytes(v.emptyDir.sizeLimit);
    if (limit !== undefined) out.push({ name: v.name, limit: String(v.emptyDir.sizeLimit), bytes: limit });
  }
  return out;
}

const ephemeralLimit = (c: IContainer): string | undefined => {
  const v = (c.resources?.limits as Record<string, string | number> | undefined)?.['ephemeral-storage'];
  return v === undefined ? undefined : String(v);
};

/** Whether the eviction manager has anything to measure for this pod: a limited disk emptyDir or an ephemeral-storage limit. */
export function hasLocalStorageLimits(pod: IPod): boolean {
  return (
    limitedEmptyDirs(pod).length > 0 ||
    [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].some((c) => ephemeralLimit(c) !== undefined)
  );
}

/** What a pod uses of the node's ephemeral storage, as the kubelet's stats provider counts it. */
export interface PodStorageUsage {
  /** Disk emptyDirs, by volume name. */
  emptyDirs: Map<string, number>;
  /** Per container name: its writable layer (CRI ContainerStats) and its log directory. */
  containers: Map<string, { rootfs: number; logs: number }>;
}

/**
 * A sum of byte limits as resource.Quantity prints it: the largest binary suffix that
 * divides it (3Mi), else a decimal one (1500k), else plain bytes.
 */
export function formatBytesQuantity(n: number): string {
  for (const [suffix, size] of [
    ['Ei', 2 ** 60],
    ['Pi', 2 ** 50],
    ['Ti', 2 ** 40],
    ['Gi', 2 ** 30],
    ['Mi', 2 ** 20],
    ['Ki', 2 ** 10],
  ] as const) {
    if (n >= size && n % size === 0) return `${n / size}${suffix}`;
  }
  for (const [suffix, size] of [
    ['E', 1e18],
    ['P', 1e15],
    ['T', 1e12],
    ['G', 1e9],
    ['M', 1e6],
    ['k', 1e3],
  ] as const) {
    if (n >= size && n % size === 0) return `${n / size}${suffix}`;
  }
  return String(n);
}

/**
 * The kubelet's localStorageEviction for one pod, its three checks in its order, each in its
 * words: a disk emptyDir over its sizeLimit; the pod's whole usage (writable layers, logs and
 * emptyDirs) over the sum of its containers' ephemeral-storage limits; one container's writable
 * layer and logs over its own limit. Undefined when the pod is within every limit.
 */
export function localStorageEviction(pod: IPod, usage: PodStorageUsage): string | undefined {
  for (const v of limitedEmptyDirs(pod)) {
    if ((usage.emptyDirs.get(v.name) ?? 0) > v.bytes) return `Usage of EmptyDir volume "${v.name}" exceeds the limit "${v.limit}". `;
  }
  const limited = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
    .map((c) => ({ name: c.name, limit: ephemeralLimit(c) }))
    .filter((c): c is { name: string; limit: string } => c.limit !== undefined && bytes(c.limit) !== undefined);
  if (limited.length === 0) return undefined;
  // The kubelet's PodLimits: app containers summed, an init container counted when larger.
  const appLimit = (pod.spec?.containers ?? []).reduce((sum, c) => sum + (bytes(ephemeralLimit(c)) ?? 0), 0);
  const initLimit = Math.max(0, ...(pod.spec?.initContainers ?? []).map((c) => bytes(ephemeralLimit(c)) ?? 0));
  const podLimit = Math.max(appLimit, initLimit);
  let total = 0;
  for (const used of usage.emptyDirs.values()) total += used;
  for (const c of usage.containers.values()) total += c.rootfs + c.logs;
  if (podLimit > 0 && total > podLimit)
    return `Pod ephemeral local storage usage exceeds the total limit of containers ${formatBytesQuantity(podLimit)}. `;
  for (const c of limited) {
    const used = usage.containers.get(c.name);
    if (used && used.rootfs + used.logs > bytes(c.limit)!)
      return `Container ${c.name} exceeded its local ephemeral storage limit "${c.limit}". `;
  }
  return undefined;
}

/** Where a pod's storage is, for measurePodStorage. */
export interface PodStorageSources {
  /** A disk emptyDir's directory. */
  emptyDirPath(volume: string): string;
  /** A container's log directory (all its instances' logs, rotated ones too). */
  logDir(container: string): string;
  /** Writable layer bytes of the pod's containers, by container name (CRI ListContainerStats). */
  writableLayers(): Promise<Map<string, number>>;
}

/** Measures what localStorageEviction judges: the disk emptyDirs, each container's writable layer and logs. */
export async function measurePodStorage(pod: IPod, from: PodStorageSources): Promise<PodStorageUsage> {
  const emptyDirs = new Map<string, number>();
  for (const v of pod.spec?.volumes ?? []) {
    if (!v.emptyDir || (v.emptyDir.medium ?? '') !== '') continue;
    emptyDirs.set(v.name, (await dirUsage(from.emptyDirPath(v.name))).bytes);
  }
  const layers = await from.writableLayers();
  const containers = new Map<string, { rootfs: number; logs: number }>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    containers.set(c.name, { rootfs: layers.get(c.name) ?? 0, logs: (await dirUsage(from.logDir(c.name))).bytes });
  }
  return { emptyDirs, containers };
}
