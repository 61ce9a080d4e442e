import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DiskReport } from './stats/disk.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The kubelet's metrics that matter on one node, under podctl_ names, in a registry of their own. */
export class Metrics {
  readonly registry = new Registry();
  readonly syncDuration = new Histogram({
    name: 'podctl_pod_worker_duration_seconds',
    help: 'Duration of one SyncPod by a pod worker.',
    labelNames: ['outcome'],
    buckets: BUCKETS,
    registers: [this.registry],
  });
  readonly relistDuration = new Histogram({
    name: 'podctl_pleg_relist_duration_seconds',
    help: 'Duration of one PLEG relist.',
    buckets: BUCKETS,
    registers: [this.registry],
  });
  readonly relistInterval = new Histogram({
    name: 'podctl_pleg_relist_interval_seconds',
    help: 'Interval between the starts of two PLEG relists.',
    buckets: BUCKETS,
    registers: [this.registry],
  });
  readonly podStartDuration = new Histogram({
    name: 'podctl_pod_start_duration_seconds',
    help: 'From a pod being added to all its containers running.',
    buckets: BUCKETS,
    registers: [this.registry],
  });
  readonly runtimeOperations = new Counter({
    name: 'podctl_runtime_operations_total',
    help: 'CRI calls, by method.',
    labelNames: ['operation_type'],
    registers: [this.registry],
  });
  readonly runtimeErrors = new Counter({
    name: 'podctl_runtime_operations_errors_total',
    help: 'Failed CRI calls, by method.',
    labelNames: ['operation_type'],
    registers: [this.registry],
  });
  readonly runtimeDuration = new Histogram({
    name: 'podctl_runtime_operations_duration_seconds',
    help: 'Duration of CRI calls, by method.',
    labelNames: ['operation_type'],
    buckets: BUCKETS,
    registers: [this.registry],
  });

  /** podctl_pleg_source{source}: 1 for the source the PLEG's events come from now, 0 for the others. */
  watchPlegSource(read: () => string): void {
    new Gauge({
      name: 'podctl_pleg_source',
      help: "Where the PLEG's events come from now: 1 for the live source (cri-events, containerd-events or relist).",
      labelNames: ['source'],
      registers: [this.registry],
      collect() {
        const live = read();
        for (const source of ['cri-events', 'containerd-events', 'relist']) this.set({ source }, source === live ? 1 : 0);
      },
    });
  }

  /**
   * Disk gauges, computed when /metrics is read: per pod and source (logs,
   * emptydir, writable), and the image filesystem.
   */
  watchDisk(report: () => Promise<DiskReport>): void {
    let last: Promise<DiskReport> | undefined;
    // Both gauges are collected for one scrape: one walk of the disk serves them.
    const once = () => (last ??= report().finally(() => setTimeout(() => (last = undefined), 1000).unref()));
    new Gauge({
      name: 'podctl_pod_ephemeral_storage_bytes',
      help: "Disk a pod uses, by source: its container logs, emptyDir volumes and containers' writable layers.",
      labelNames: ['namespace', 'pod', 'source'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const p of (await once()).pods) {
          this.set({ namespace: p.namespace, pod: p.name, source: 'logs' }, p.logs.bytes);
          this.set({ namespace: p.namespace, pod: p.name, source: 'emptydir' }, p.emptyDirs.bytes);
          this.set({ namespace: p.namespace, pod: p.name, source: 'writable' }, p.writableLayers.bytes);
        }
      },
    });
    new Gauge({
      name: 'podctl_pod_ephemeral_storage_inodes',
      help: 'Inodes a pod uses, by source.',
      labelNames: ['namespace', 'pod', 'source'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const p of (await once()).pods) {
          this.set({ namespace: p.namespace, pod: p.name, source: 'logs' }, p.logs.inodes);
          this.set({ namespace: p.namespace, pod: p.name, source: 'emptydir' }, p.emptyDirs.inodes);
          this.set({ namespace: p.namespace, pod: p.name, source: 'writable' }, p.writableLayers.inodes);
        }
      },
    });
    new Gauge({
      name: 'podctl_image_filesystem_bytes',
      help: "The image filesystem: what images use, the disk's capacity and what is available.",
      labelNames: ['kind'],
      registers: [this.registry],
      async collect() {
        this.reset();
        const fs = (await once()).imageFilesystem;
        if (!fs) return;
        this.set({ kind: 'used' }, fs.usedBytes);
        if (fs.capacityBytes !== undefined) this.set({ kind: 'capacity' }, fs.capacityBytes);
        if (fs.availableBytes !== undefined) this.set({ kind: 'available' }, fs.availableBytes);
      },
    });
  }

  /** A CriClient observer. */
  observeCall = (call: { method: string; durationMs: number; error?: unknown }): void => {
    this.runtimeOperations.inc({ operation_type: call.method });
    this.runtimeDuration.observe({ operation_type: call.method }, call.durationMs / 1000);
    if (call.error) this.runtimeErrors.inc({ operation_type: call.method });
  };
}
