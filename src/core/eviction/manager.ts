import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import type { EventRecorder } from '../events.js';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL } from '../kuberuntime/labels.js';
import { podLogDirectory } from '../kuberuntime/config.js';
import { podRef } from '../kuberuntime/manager.js';
import { isTerminalPhase } from '../status/phase.js';
import { EVICTED } from '../status/generate.js';
import { PLUGIN_DIRS, type VolumeManager } from '../volumes/index.js';
import { podMeta } from '../util/pod-key.js';
import {
  EVICTION_MONITORING_PERIOD_MS,
  hasLocalStorageLimits,
  localStorageEviction,
  measurePodStorage,
  type PodStorageUsage,
} from './local-storage.js';

export interface EvictionManagerOptions {
  clock: Clock;
  events: EventRecorder;
  /** How often pods' local storage is measured (10 s, as the kubelet). */
  monitoringPeriodMs?: number;
  measure: (pod: IPod) => Promise<PodStorageUsage>;
  /** The phase of the pod's last status: a finished pod is not measured. */
  phaseOf: (uid: string) => string | undefined;
  /** A pod was evicted: its worker syncs it (kills it; its status says Evicted). */
  onEvicted: (uid: string) => void;
}

/**
 * The kubelet's eviction manager, for local storage: every 10 s, a pod whose disk emptyDir outgrows
 * its sizeLimit, or whose writable layers and logs outgrow its ephemeral-storage limits, is evicted
 * (killed, Failed with reason Evicted and the kubelet's message). The status manager asks it which.
 */
export class EvictionManager {
  private readonly evictions = new Map<string, string>();
  private lastCheck = -Infinity;

  constructor(private readonly opts: EvictionManagerOptions) {}

  /** The message of a pod this manager evicted. */
  evicted(uid: string): string | undefined {
    return this.evictions.get(uid);
  }

  /** One pass of the monitoring loop (called from housekeeping; measures only once per period). */
  async synchronize(pods: ReadonlyMap<string, IPod>): Promise<void> {
    const now = this.opts.clock.now();
    if (now - this.lastCheck < (this.opts.monitoringPeriodMs ?? EVICTION_MONITORING_PERIOD_MS)) return;
    this.lastCheck = now;
    for (const [uid, pod] of pods) {
      if (this.evictions.has(uid) || !hasLocalStorageLimits(pod)) continue;
      const phase = this.opts.phaseOf(uid);
      if (phase !== undefined && isTerminalPhase(phase)) continue;
      const usage = await this.opts.measure(pod).catch(() => undefined);
      const message = usage && localStorageEviction(pod, usage);
      if (!message) continue;
      this.evictions.set(uid, message);
      this.opts.events.record(podRef(pod), 'Warning', EVICTED, message);
      this.opts.onEvicted(uid);
    }
  }

  forget(uid: string): void {
    this.evictions.delete(uid);
  }
}

/** A pod's local storage as the kubelet measures it: its emptyDirs and log dirs on disk, writable layers from ListContainerStats. */
export function localStorageMeter(o: {
  runtime: Pick<RuntimeService, 'listContainerStats'>;
  logRoot: string;
  volumes?: VolumeManager;
}): (pod: IPod) => Promise<PodStorageUsage> {
  return (pod) => {
    const uid = podMeta(pod).uid;
    const volumes = o.volumes;
    return measurePodStorage(pod, {
      emptyDirPath: (name) => (volumes ? join(volumes.volumesDir(uid), PLUGIN_DIRS.emptyDir, name) : ''),
      logDir: (container) => join(podLogDirectory(o.logRoot, pod), container),
      writableLayers: async () => {
        const out = new Map<string, number>();
        for (const s of await o.runtime.listContainerStats({ labelSelector: { [POD_UID_LABEL]: uid } })) {
          const name = s.attributes?.labels?.[CONTAINER_NAME_LABEL] ?? s.attributes?.metadata?.name;
          if (name) out.set(name, Math.max(out.get(name) ?? 0, Number(s.writableLayer?.usedBytes?.value ?? 0)));
        }
        return out;
      },
    });
  };
}
