import { join } from 'node:path';
import { cpus, totalmem } from 'node:os';
import type { KubeletOptions } from '../kubelet-types.js';
import { EventRecorder } from '../events.js';
import { ObjectStore } from '../objects.js';
import { RuntimeCache } from '../container/runtime-cache.js';
import { TerminationRecords } from '../status/termination-records.js';
import { safeJoin } from '../util/safe-path.js';
import { ImageGCManager } from '../kuberuntime/image-gc.js';
import { ContainerLogManager, DEFAULT_CONTAINER_LOG_MONITOR_INTERVAL_MS } from '../logs/rotation.js';
import { containerLogPath, podLogDirectory } from '../kuberuntime/config.js';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL } from '../kuberuntime/labels.js';
import { VolumeManager } from '../volumes/index.js';
import { RuntimeManager } from '../kuberuntime/manager.js';
import type { PodCache } from '../pleg/cache.js';
import type { PodManagerView } from '../pod-manager/index.js';
import { listForRuntimeCache } from '../housekeeping.js';

/** The Kubelet's parts on the runtime's side: what SyncPod, housekeeping and log rotation act through. */
export function composeRuntimeParts(opts: KubeletOptions, podManager: PodManagerView, podCache: PodCache) {
  const events = new EventRecorder(opts.clock, { journal: opts.eventsJournal });
  const objects = new ObjectStore();
  const runtimeCache = new RuntimeCache(opts.clock);
  const terminations = new TerminationRecords((uid) => {
    if (!opts.rootDir) return undefined;
    try {
      return safeJoin(opts.rootDir, [
        ['pods', 'pods'],
        ['pod UID', uid],
      ]);
    } catch {
      return undefined;
    }
  });
  const imageGC = new ImageGCManager({ runtime: opts.runtime, images: opts.images, clock: opts.clock, policy: opts.imageGC });
  const logMonitorIntervalMs = opts.containerLogs?.monitorIntervalMs ?? DEFAULT_CONTAINER_LOG_MONITOR_INTERVAL_MS;
  const containerLogs = new ContainerLogManager({
    ...opts.containerLogs,
    runtime: {
      // The running containers it checks every 10 s are the runtime cache's (this kubelet's pods are
      // podctl's) when no older than that check's interval: a relist's lists then serve it, where its
      // own ListContainers was most of an idle watch's remaining lists at 5,000 pods. Older lists (an
      // event stream keeps them a minute) would miss a container that started since, whose log must rotate.
      listContainerSummaries: async (filter) =>
        filter?.state?.state === 'CONTAINER_RUNNING' && !filter.id && !filter.podSandboxId && !filter.labelSelector
          ? (await runtimeCache.get(() => listForRuntimeCache(opts.runtime), true, logMonitorIntervalMs)).containers.filter(
              (c) => c.state === 'CONTAINER_RUNNING',
            )
          : opts.runtime.listContainerSummaries(filter),
      containerStatus: (id, verbose) => opts.runtime.containerStatus(id, verbose),
      reopenContainerLog: (id) => opts.runtime.reopenContainerLog(id),
    },
    clock: opts.clock,
    runningContainers: () => runningFromPodCache(opts, podManager, podCache, logMonitorIntervalMs),
    owns: (c) => podManager.pods.has(c.labels[POD_UID_LABEL] ?? ''),
    logPathOf: (c) => {
      const pod = podManager.getPodByUID(c.labels[POD_UID_LABEL] ?? '');
      const name = c.labels[CONTAINER_NAME_LABEL];
      return pod && name ? join(podLogDirectory(opts.logRoot, pod), containerLogPath(name, c.metadata?.attempt ?? 0)) : undefined;
    },
  });
  const node = { nodeName: opts.nodeName, hostIP: opts.hostIP, cpuCores: cpus().length, memoryBytes: totalmem() };
  const volumes = opts.rootDir ? new VolumeManager({ rootDir: opts.rootDir, objects, node }) : undefined;
  const runtimeManager = new RuntimeManager({
    runtime: opts.runtime,
    images: opts.images,
    clock: opts.clock,
    logRoot: opts.logRoot,
    rootDir: opts.rootDir,
    agent: opts.agent,
    events,
    hostIP: opts.hostIP,
    objects,
    runtimeClasses: objects,
    defaultRuntimeHandler: opts.runtimeHandler,
    allowPrivileged: opts.allowPrivileged,
    containerGC: opts.containerGC,
    node,
    volumes,
  });
  return { events, objects, runtimeCache, terminations, imageGC, containerLogs, volumes, runtimeManager };
}

/**
 * The running containers of the desired pods with their log paths, from the pod cache while it is
 * current (a relist, or an event stream's mark, within maxAgeMs): log rotation then lists nothing.
 * A container started since is in it once its PLEG event has refreshed its pod.
 */
function runningFromPodCache(
  opts: KubeletOptions,
  podManager: PodManagerView,
  cache: PodCache,
  maxAgeMs: number,
): { id: string; path: string }[] | undefined {
  // Never marked current (no PLEG fills it, or none has relisted yet): no claim to be the runtime's view.
  if (cache.currentAsOf() === 0 || opts.clock.now() - cache.currentAsOf() >= maxAgeMs) return undefined;
  const out: { id: string; path: string }[] = [];
  for (const uid of podManager.pods.keys()) {
    const status = cache.get(uid);
    if (!status) continue;
    for (const c of status.containers) if (c.state === 'running' && c.logPath) out.push({ id: c.id, path: c.logPath });
    for (const c of status.ephemeral ?? []) if (c.state === 'running' && c.logPath) out.push({ id: c.id, path: c.logPath });
  }
  return out;
}
