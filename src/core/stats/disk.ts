import { lstat, readdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { ImageService, RuntimeService } from '../cri/client.js';
import * as L from '../kuberuntime/labels.js';
import { podKey } from '../util/pod-key.js';

export interface Usage {
  bytes: number;
  inodes: number;
}

/** A pod's use of the node's disk, by where it goes (the kubelet's ephemeral-storage accounting). */
export interface PodDiskUsage {
  namespace: string;
  name: string;
  uid: string;
  logs: Usage;
  emptyDirs: Usage;
  writableLayers: Usage;
}

export interface ImageFsUsage {
  mountpoint: string;
  usedBytes: number;
  inodesUsed: number;
  capacityBytes?: number;
  availableBytes?: number;
}

export interface DiskReport {
  pods: PodDiskUsage[];
  imageFilesystem?: ImageFsUsage;
}

const EMPTY_DIRS = join('volumes', 'kubernetes.io~empty-dir');

/** Bytes (allocated blocks) and inodes below a directory, without following symlinks; a missing one uses nothing. */
export async function dirUsage(path: string): Promise<Usage> {
  const usage: Usage = { bytes: 0, inodes: 0 };
  const walk = async (p: string): Promise<void> => {
    const st = await lstat(p).catch(() => undefined);
    if (!st) return;
    usage.inodes++;
    usage.bytes += st.blocks * 512;
    if (!st.isDirectory()) return;
    for (const name of await readdir(p).catch(() => [] as string[])) await walk(join(p, name));
  };
  await walk(path);
  return usage;
}

const add = (a: Usage, b: Usage): Usage => ({ bytes: a.bytes + b.bytes, inodes: a.inodes + b.inodes });

/**
 * Disk used by podctl's pods: their logs and emptyDirs (from the directories
 * each sandbox records), their containers' writable layers (CRI container
 * stats), and the image filesystem as a whole.
 */
export async function diskReport(
  runtime: Pick<RuntimeService, 'listPodSandbox' | 'listContainerStats'>,
  images: Pick<ImageService, 'imageFsInfo'>,
  query: { namespace?: string; name?: string } = {},
): Promise<DiskReport> {
  const selector: Record<string, string> = { [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
  if (query.namespace !== undefined) selector[L.POD_NAMESPACE_LABEL] = query.namespace;
  if (query.name !== undefined) selector[L.POD_NAME_LABEL] = query.name;
  const [sandboxes, stats, fsInfo] = await Promise.all([
    runtime.listPodSandbox({ labelSelector: selector }),
    runtime.listContainerStats({ labelSelector: selector }).catch(() => []),
    images.imageFsInfo().catch(() => undefined),
  ]);
  const newest = new Map<string, (typeof sandboxes)[number]>();
  for (const s of sandboxes) {
    const uid = s.labels[L.POD_UID_LABEL];
    if (uid && (!newest.has(uid) || newest.get(uid)!.createdAt < s.createdAt)) newest.set(uid, s);
  }
  const writable = new Map<string, Usage>();
  for (const s of stats) {
    const uid = s.attributes?.labels?.[L.POD_UID_LABEL];
    if (!uid) continue;
    const u = { bytes: Number(s.writableLayer?.usedBytes?.value ?? 0), inodes: Number(s.writableLayer?.inodesUsed?.value ?? 0) };
    writable.set(uid, add(writable.get(uid) ?? { bytes: 0, inodes: 0 }, u));
  }
  const pods: PodDiskUsage[] = [];
  for (const [uid, s] of newest) {
    const podDir = s.annotations[L.POD_DIR_ANNOTATION];
    const logDir = s.annotations[L.POD_LOG_DIR_ANNOTATION];
    pods.push({
      namespace: s.labels[L.POD_NAMESPACE_LABEL] ?? '',
      name: s.labels[L.POD_NAME_LABEL] ?? '',
      uid,
      logs: logDir ? await dirUsage(logDir) : { bytes: 0, inodes: 0 },
      emptyDirs: podDir ? await dirUsage(join(podDir, EMPTY_DIRS)) : { bytes: 0, inodes: 0 },
      writableLayers: writable.get(uid) ?? { bytes: 0, inodes: 0 },
    });
  }
  pods.sort((a, b) => podKey(a).localeCompare(podKey(b)));
  const fs = fsInfo?.imageFilesystems[0];
  let imageFilesystem: ImageFsUsage | undefined;
  if (fs?.fsId?.mountpoint) {
    const sf = await statfs(fs.fsId.mountpoint).catch(() => undefined);
    imageFilesystem = {
      mountpoint: fs.fsId.mountpoint,
      usedBytes: Number(fs.usedBytes?.value ?? 0),
      inodesUsed: Number(fs.inodesUsed?.value ?? 0),
      ...(sf ? { capacityBytes: sf.blocks * sf.bsize, availableBytes: sf.bavail * sf.bsize } : {}),
    };
  }
  return { pods, imageFilesystem };
}
