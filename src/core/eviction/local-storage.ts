import type { IPod } from 'kubernetes-models/v1';
import { dirUsage } from '../stats/disk.js';
import { bytes } from '../util/quantity.js';

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

/**
 * The kubelet's local storage eviction for emptyDir (eviction manager, emptyDirLimitEviction):
 * the first disk emptyDir whose usage exceeds its sizeLimit, in the kubelet's words; undefined
 * when each is within its limit.
 */
export async function emptyDirOverLimit(pod: IPod, dirOf: (volume: string) => string): Promise<string | undefined> {
  for (const v of limitedEmptyDirs(pod)) {
    const used = (await dirUsage(dirOf(v.name))).bytes;
    if (used > v.bytes) return `Usage of EmptyDir volume "${v.name}" exceeds the limit "${v.limit}". `;
  }
  return undefined;
}
