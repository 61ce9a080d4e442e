import type { IPod } from 'kubernetes-models/v1';
import type { Clock } from './clock.js';
import type { RuntimeService } from './cri/client.js';
import { duplicateSandboxes } from './duplicate-sandboxes.js';
import type { EventRecorder } from './events.js';
import type { RuntimeCache, RuntimeSnapshot } from './container/runtime-cache.js';
import { AGENT_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, podIdentityFromLabels } from './kuberuntime/labels.js';
import type { ImageGCManager } from './kuberuntime/image-gc.js';
import { graceFromRuntime, type RuntimeManager } from './kuberuntime/manager.js';
import type { HousekeepingResult } from './kubelet-types.js';
import type { PodWorkers } from './workers/pod-workers.js';
import { Backoff } from './util/backoff.js';
import { podKey } from './util/pod-key.js';

/** Retry of an orphan the runtime would not remove: 10 s doubling to 5 min. */
const ORPHAN_RETRY_INITIAL_MS = 10_000;
const ORPHAN_RETRY_MAX_MS = 300_000;

/** podctl's sandboxes and containers, as a relist lists them: what the runtime cache holds. */
export async function listForRuntimeCache(runtime: RuntimeService): Promise<Omit<RuntimeSnapshot, 'at'>> {
  const selector = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
  const [sandboxes, containers] = await Promise.all([
    runtime.listPodSandboxSummaries({ labelSelector: selector }),
    runtime.listContainerSummaries({ labelSelector: selector }),
  ]);
  return { sandboxes, containers };
}

export interface PodCleanupsOptions {
  clock: Clock;
  runtime: RuntimeService;
  runtimeManager: RuntimeManager;
  runtimeCache: RuntimeCache;
  imageGC: ImageGCManager;
  events: EventRecorder;
  workers: PodWorkers;
  /** The pod manager's desired pods. */
  pods: ReadonlyMap<string, IPod>;
  /** Whether pods of this agent that no source wants are killed (see KubeletOptions.removeOrphans). */
  removeOrphans?: boolean;
  sourceClaim?: (namespace: string, name: string) => string | undefined;
  /** The eviction manager's pass, run at the end of each. */
  evict?: () => Promise<void>;
}

/**
 * The kubelet's HandlePodCleanups: kill and remove pods podctl labelled that no source wants,
 * garbage-collect dead containers beyond the newest one per container name, forget finished
 * lanes, image GC, then the eviction manager's pass.
 */
export class PodCleanups {
  /** Orphans whose removal failed, by UID: retried after a delay that doubles (a stuck netns can fail for ever). */
  private readonly orphanBackoff: Backoff;
  private readonly orphanFailedAt = new Map<string, number>();
  /** The problem last recorded as an event on each pod kept for a source's claim: said once, not every pass. */
  private readonly claimedSaid = new Map<string, string>();
  /** The lists housekeeping last acted on. */
  private lastHousekept?: RuntimeSnapshot;

  constructor(private readonly opts: PodCleanupsOptions) {
    this.orphanBackoff = new Backoff(opts.clock, ORPHAN_RETRY_INITIAL_MS, ORPHAN_RETRY_MAX_MS);
  }

  async run(): Promise<HousekeepingResult> {
    const { clock, runtimeManager, workers, pods } = this.opts;
    const started = clock.now();
    const result: HousekeepingResult = { removedPods: [], removedContainers: 0, durationMs: 0 };
    const removeOrphans = this.opts.removeOrphans ?? runtimeManager.agent === 'watch';
    const agent = runtimeManager.agent;
    // It lists what a relist does (its own agent's sandboxes are picked below), so the cache may keep it.
    const snapshot = await this.opts.runtimeCache.get(() => listForRuntimeCache(this.opts.runtime), true);
    // Lists already acted on (an event-driven PLEG's cache lives a minute) hold nothing new for the
    // cleanups below; a pod removed since is its worker's to kill.
    const fresh = snapshot !== this.lastHousekept;
    this.lastHousekept = snapshot;
    const { sandboxes, containers } = fresh ? snapshot : { sandboxes: [], containers: [] };
    const orphans = new Map<string, { name: string; namespace: string }>();
    const claimed = new Set<string>();
    for (const s of removeOrphans ? sandboxes : []) {
      if (s.labels[AGENT_LABEL] !== agent) continue;
      const id = podIdentityFromLabels(s.labels);
      if (!id || pods.has(id.uid) || workers.isWorking(id.uid)) continue;
      const claim = this.opts.sourceClaim?.(id.namespace, id.name);
      if (claim !== undefined) {
        claimed.add(id.uid);
        if (this.claimedSaid.get(id.uid) !== claim)
          this.opts.events.record({ uid: id.uid, namespace: id.namespace, name: id.name }, 'Warning', 'FailedValidation', claim);
        this.claimedSaid.set(id.uid, claim);
        continue;
      }
      orphans.set(id.uid, id);
    }
    if (fresh) for (const uid of [...this.claimedSaid.keys()]) if (!claimed.has(uid)) this.claimedSaid.delete(uid);
    if (removeOrphans)
      for (const [uid, id] of duplicateSandboxes(sandboxes, pods.values(), agent)) if (!workers.isWorking(uid)) orphans.set(uid, id);
    for (const [uid, id] of orphans) {
      const failedAt = this.orphanFailedAt.get(uid);
      if (failedAt !== undefined && this.orphanBackoff.isInBackOffSince(uid, failedAt)) continue;
      try {
        const status = await runtimeManager.getPodStatus(uid, id.name, id.namespace);
        // The lists may be a relist's of up to 3 s ago: a pod removed since is no orphan to report.
        if (status.sandboxes.length === 0 && status.containers.length === 0) continue;
        const grace = graceFromRuntime(status);
        await runtimeManager.killPodByStatus(status, grace);
        await runtimeManager.removePod(status);
        result.removedPods.push(podKey(id));
        this.orphanFailedAt.delete(uid);
        this.orphanBackoff.reset(uid);
      } catch (err) {
        // One pod the runtime cannot remove must not stop the cleanup of the others.
        const now = clock.now();
        const retryInMs = this.orphanBackoff.next(uid, now);
        this.orphanFailedAt.set(uid, now);
        (result.failedPods ??= []).push({ pod: podKey(id), error: (err as Error).message, retryInMs });
      }
    }
    for (const uid of fresh ? this.orphanFailedAt.keys() : []) {
      if (orphans.has(uid)) continue;
      this.orphanFailedAt.delete(uid);
      this.orphanBackoff.reset(uid);
    }
    result.removedContainers = await runtimeManager.removeDeadContainers(containers, (uid) => !orphans.has(uid));
    for (const uid of workers.knownPods()) if (!pods.has(uid)) workers.forget(uid);
    runtimeManager.crashBackoff.gc();
    runtimeManager.imagePuller.gc();
    // A failed image GC (no statfs of the image filesystem, say) must not stop housekeeping.
    const images = await this.opts.imageGC.maybeGarbageCollect().catch((err: unknown) => {
      result.imageGCError = (err as Error).message;
      return undefined;
    });
    if (images?.removed.length) result.images = images;
    await this.opts.evict?.();
    result.durationMs = clock.now() - started;
    return result;
  }
}
