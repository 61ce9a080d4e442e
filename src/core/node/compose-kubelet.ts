import { Kubelet } from '../kubelet.js';
import type { KubeletOptions } from '../kubelet-types.js';
import { ProberManager } from '../prober/index.js';
import { PodWorkers } from '../workers/pod-workers.js';
import { PodManager } from '../pod-manager/index.js';
import { PodCache } from '../pleg/cache.js';
import { StatusManager } from '../status/manager.js';
import { EvictionManager, localStorageMeter } from '../eviction/manager.js';
import { PodCleanups } from '../housekeeping.js';
import { composeRuntimeParts } from './compose-runtime.js';

/**
 * The kubelet's NewMainKubelet: the Kubelet and its parts, wired to one another. The pod cache is
 * the one the PLEG built on this Kubelet fills (see createPleg). Nothing is started.
 */
export function newKubelet(opts: KubeletOptions): Kubelet {
  const podManager = new PodManager(opts.nodeName);
  const podCache = new PodCache();
  const rt = composeRuntimeParts(opts, podManager, podCache);
  // The parts that call one another back (the status manager the prober, the workers the Kubelet) reach
  // them in callbacks, which run only once all exist.
  const statusManager: StatusManager = new StatusManager({
    clock: opts.clock,
    hostIP: opts.hostIP,
    runtimeName: opts.runtimeName,
    ready: (id, container) => prober.ready(id, container),
    started: (id, container) => prober.started(id, container),
    terminations: rt.terminations,
    evicted: (uid) => evictionManager.evicted(uid),
  });
  const prober: ProberManager = new ProberManager({
    clock: opts.clock,
    runtime: opts.runtime,
    events: rt.events,
    pod: (uid) => podManager.getPodByUID(uid),
    status: (uid) => statusManager.get(uid),
  });
  const workers = new PodWorkers(
    {
      syncPod: (pod, type) => kubelet.syncPod(pod, type),
      syncTerminatingPod: (pod, grace) => kubelet.syncTerminatingPod(pod, grace),
      syncTerminatedPod: (pod) => kubelet.syncTerminatedPod(pod),
    },
    {
      clock: opts.clock,
      backOffPeriodMs: opts.backOffPeriodMs,
      resyncIntervalMs: opts.resyncIntervalMs,
      onSyncError: (pod, err) => kubelet.reportSyncError(pod, err),
      trace: opts.trace,
      admit: opts.runtime.admitSync && ((sync) => opts.runtime.admitSync!(sync)),
      onSyncDone: (_pod, durationMs, err) => opts.metrics?.syncDuration.observe({ outcome: err ? 'error' : 'success' }, durationMs / 1000),
    },
  );
  const evictionManager: EvictionManager = new EvictionManager({
    clock: opts.clock,
    events: rt.events,
    monitoringPeriodMs: opts.evictionMonitoringPeriodMs,
    measure: opts.measureLocalStorage ?? localStorageMeter({ runtime: opts.runtime, logRoot: opts.logRoot, volumes: rt.volumes }),
    phaseOf: (uid) => statusManager.get(uid)?.phase,
    onEvicted: (uid) => workers.requeueAfter(uid, 0),
  });
  const cleanups = new PodCleanups({
    clock: opts.clock,
    runtime: opts.runtime,
    runtimeManager: rt.runtimeManager,
    runtimeCache: rt.runtimeCache,
    imageGC: rt.imageGC,
    events: rt.events,
    workers,
    pods: podManager.pods,
    removeOrphans: opts.removeOrphans,
    sourceClaim: opts.sourceClaim,
    evict: () => evictionManager.synchronize(podManager.pods),
  });
  const kubelet: Kubelet = new Kubelet({
    options: opts,
    podManager,
    podCache,
    statusManager,
    evictionManager,
    events: rt.events,
    prober,
    objects: rt.objects,
    runtimeManager: rt.runtimeManager,
    runtimeCache: rt.runtimeCache,
    imageGC: rt.imageGC,
    containerLogs: rt.containerLogs,
    workers,
    cleanups,
    terminations: rt.terminations,
  });
  return kubelet;
}
