import { statfs } from 'node:fs/promises';
import type { Clock } from '../clock.js';
import type { ImageService, RuntimeService } from '../cri/client.js';
import type * as T from '../cri/types.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, POD_SPEC_ANNOTATION } from './labels.js';
import { SpecCopies, withPodSpecCopy } from './spec-copy.js';

/** The kubelet's image GC defaults (--image-gc-high-threshold, --image-gc-low-threshold, --image-minimum-gc-age). */
export const DEFAULT_IMAGE_GC_HIGH_THRESHOLD = 85;
export const DEFAULT_IMAGE_GC_LOW_THRESHOLD = 80;
export const DEFAULT_IMAGE_MINIMUM_GC_AGE_MS = 120_000;
/** The kubelet's ImageGCPeriod. */
export const IMAGE_GC_PERIOD_MS = 300_000;

export interface ImageGCPolicy {
  /** Disk usage (%) of the image filesystem at which GC starts; 100 turns it off. */
  highThresholdPercent: number;
  /** Disk usage (%) GC frees down to. */
  lowThresholdPercent: number;
  /** An image is not removed before it has been known this long. */
  minAgeMs: number;
}

export interface FsStats {
  capacityBytes: number;
  availableBytes: number;
}

export interface ImageGCOptions {
  runtime: Pick<RuntimeService, 'listContainers' | 'status'>;
  images: ImageService;
  clock: Clock;
  policy?: Partial<ImageGCPolicy>;
  /** Capacity and free space of the filesystem images live on (statfs of ImageFsInfo's mountpoint). */
  fsStats?: (mountpoint: string) => Promise<FsStats>;
}

export interface ImageGCResult {
  /** Usage of the image filesystem when GC looked, in %; undefined when by hand. */
  usagePercent?: number;
  /** What GC meant to free (bytes). */
  wanted: number;
  freed: number;
  removed: { id: string; tags: string[]; size: number }[];
  /** Images kept because a container uses them or the runtime pins them (the sandbox image). */
  inUse: number;
}

interface ImageRecord {
  firstDetected: number;
  lastUsed: number;
  size: number;
}

async function statfsStats(mountpoint: string): Promise<FsStats> {
  const s = await statfs(mountpoint);
  return { capacityBytes: s.blocks * s.bsize, availableBytes: s.bavail * s.bsize };
}

/** The sandbox image the runtime uses, from containerd's verbose Status (config.sandboxImage). */
function sandboxImageOf(status: T.StatusResponse): string | undefined {
  try {
    const config = JSON.parse(status.info?.config ?? '{}') as { sandboxImage?: string };
    return config.sandboxImage || undefined;
  } catch {
    return undefined;
  }
}

/** docker.io/library/busybox:1.36 and busybox:1.36 name one image. */
export function normalizeImageName(ref: string): string {
  let r = ref;
  if (!r.includes('/')) r = `docker.io/library/${r}`;
  else if (!/^[^/]+[.:]/.test(r.split('/')[0]!) && r.split('/')[0] !== 'localhost') r = `docker.io/${r}`;
  if (!/[:@][^/]+$/.test(r)) r = `${r}:latest`;
  return r;
}

/**
 * The kubelet's realImageGCManager: remembers when each image was first seen
 * and last used by a container; when the image filesystem is fuller than the
 * high threshold, removes unused images, least recently used first, until
 * usage is down to the low threshold. Never an image a container (of any
 * agent, in any state) uses, nor the runtime's sandbox image.
 */
export class ImageGCManager {
  readonly policy: ImageGCPolicy;
  private readonly records = new Map<string, ImageRecord>();
  private readonly fsStats: (mountpoint: string) => Promise<FsStats>;
  private lastRun = -Infinity;

  constructor(private readonly opts: ImageGCOptions) {
    this.policy = {
      highThresholdPercent: opts.policy?.highThresholdPercent ?? DEFAULT_IMAGE_GC_HIGH_THRESHOLD,
      lowThresholdPercent: opts.policy?.lowThresholdPercent ?? DEFAULT_IMAGE_GC_LOW_THRESHOLD,
      minAgeMs: opts.policy?.minAgeMs ?? DEFAULT_IMAGE_MINIMUM_GC_AGE_MS,
    };
    this.fsStats = opts.fsStats ?? statfsStats;
  }

  /** Runs GC when its period has passed since the last run (housekeeping asks every 2 s). */
  async maybeGarbageCollect(): Promise<ImageGCResult | undefined> {
    const now = this.opts.clock.now();
    if (now - this.lastRun < IMAGE_GC_PERIOD_MS) return undefined;
    this.lastRun = now;
    return this.garbageCollect();
  }

  /** Updates first-seen and last-used times; returns the images and which are in use or pinned. */
  private async detectImages(): Promise<{ images: T.Image[]; kept: Set<string> }> {
    const now = this.opts.clock.now();
    const [images, containers, status] = await Promise.all([
      this.opts.images.listImages(),
      this.opts.runtime.listContainers(),
      this.opts.runtime.status(true).catch(() => undefined),
    ]);
    const usedRefs = new Set<string>();
    for (const c of containers) {
      if (c.imageRef) usedRefs.add(c.imageRef);
      if (c.image?.image) usedRefs.add(c.image.image);
    }
    const sandboxImage = status ? sandboxImageOf(status) : undefined;
    const kept = new Set<string>();
    for (const image of images) {
      const names = [image.id, ...image.repoTags, ...image.repoDigests];
      const used = names.some((n) => usedRefs.has(n) || usedRefs.has(normalizeImageName(n)));
      const pinned =
        image.pinned ||
        (sandboxImage !== undefined && image.repoTags.some((t) => normalizeImageName(t) === normalizeImageName(sandboxImage)));
      const record = this.records.get(image.id) ?? { firstDetected: now, lastUsed: 0, size: Number(image.size) };
      record.size = Number(image.size);
      if (used) record.lastUsed = now;
      this.records.set(image.id, record);
      if (used || pinned) kept.add(image.id);
    }
    const present = new Set(images.map((i) => i.id));
    for (const id of this.records.keys()) if (!present.has(id)) this.records.delete(id);
    return { images, kept };
  }

  /** The threshold-driven pass (the kubelet's GarbageCollect). */
  async garbageCollect(): Promise<ImageGCResult> {
    const fs = (await this.opts.images.imageFsInfo()).imageFilesystems[0];
    const detected = await this.detectImages();
    if (!fs?.fsId?.mountpoint || this.policy.highThresholdPercent >= 100)
      return { wanted: 0, freed: 0, removed: [], inUse: detected.kept.size };
    const { capacityBytes, availableBytes } = await this.fsStats(fs.fsId.mountpoint);
    if (capacityBytes <= 0) return { wanted: 0, freed: 0, removed: [], inUse: detected.kept.size };
    const usagePercent = 100 - (availableBytes * 100) / capacityBytes;
    if (usagePercent < this.policy.highThresholdPercent)
      return { usagePercent, wanted: 0, freed: 0, removed: [], inUse: detected.kept.size };
    const wanted = Math.ceil((capacityBytes * (100 - this.policy.lowThresholdPercent)) / 100 - availableBytes);
    return { usagePercent, ...(await this.free(detected, wanted, this.policy.minAgeMs)) };
  }

  /**
   * By hand (podctl image prune): every unused image old enough, or with
   * `keep` an image is spared too (images a pod's spec still names).
   */
  async prune(opts: { minAgeMs?: number; keep?: (image: T.Image) => boolean } = {}): Promise<ImageGCResult> {
    const detected = await this.detectImages();
    for (const image of detected.images) if (opts.keep?.(image)) detected.kept.add(image.id);
    return this.free(detected, Infinity, opts.minAgeMs ?? 0);
  }

  private async free(
    detected: { images: T.Image[]; kept: Set<string> },
    wanted: number,
    minAgeMs: number,
  ): Promise<Omit<ImageGCResult, 'usagePercent'>> {
    const now = this.opts.clock.now();
    const candidates = detected.images
      .filter((i) => !detected.kept.has(i.id))
      .map((i) => ({ image: i, record: this.records.get(i.id)! }))
      .filter((c) => now - c.record.firstDetected >= minAgeMs)
      // Least recently used first; never used ones by when they were first seen.
      .sort((a, b) => a.record.lastUsed - b.record.lastUsed || a.record.firstDetected - b.record.firstDetected);
    const result: Omit<ImageGCResult, 'usagePercent'> = {
      wanted: Number.isFinite(wanted) ? wanted : 0,
      freed: 0,
      removed: [],
      inUse: detected.kept.size,
    };
    for (const { image, record } of candidates) {
      if (result.freed >= wanted) break;
      await this.opts.images.removeImage(image.id);
      this.records.delete(image.id);
      result.freed += record.size;
      result.removed.push({ id: image.id, tags: image.repoTags, size: record.size });
    }
    return result;
  }
}

/**
 * What `podctl image prune` keeps without --all: every image a podctl pod's
 * recorded spec names, so a pod whose dead container GC removed can still
 * start again without a pull.
 */
export async function imagesNamedByPods(runtime: Pick<RuntimeService, 'listPodSandbox'>): Promise<(image: T.Image) => boolean> {
  const named = new Set<string>();
  const copies = new SpecCopies();
  for (const listed of await runtime.listPodSandbox({ labelSelector: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } })) {
    const s = await withPodSpecCopy(listed, copies);
    try {
      const spec = JSON.parse(s.annotations[POD_SPEC_ANNOTATION] ?? '{}') as {
        containers?: { image?: string }[];
        initContainers?: { image?: string }[];
      };
      for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) if (c.image) named.add(normalizeImageName(c.image));
    } catch {
      // A sandbox without a readable spec copy names nothing.
    }
  }
  return (image) => image.repoTags.some((t) => named.has(normalizeImageName(t)));
}
