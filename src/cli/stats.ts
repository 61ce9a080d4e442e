import type * as T from '../core/cri/types.js';
import type { DiskReport } from '../core/stats/disk.js';
import { humanBytes, plainTable } from './table.js';
import { podKey } from '../core/util/pod-key.js';

/** One row per pod (LOGS, EMPTYDIR, WRITABLE and their inodes), then the image filesystem. */
export function renderDiskReport(report: DiskReport, opts: { noHeaders?: boolean; allNamespaces?: boolean } = {}): string {
  const rows = report.pods.map((p) => [
    opts.allNamespaces ? podKey(p) : p.name,
    humanBytes(p.logs.bytes),
    humanBytes(p.emptyDirs.bytes),
    humanBytes(p.writableLayers.bytes),
    humanBytes(p.logs.bytes + p.emptyDirs.bytes + p.writableLayers.bytes),
    String(p.logs.inodes + p.emptyDirs.inodes + p.writableLayers.inodes),
  ]);
  const lines = rows.length
    ? [plainTable(['POD', 'LOGS', 'EMPTYDIR', 'WRITABLE', 'TOTAL', 'INODES'], rows, { noHeaders: opts.noHeaders })]
    : [];
  const fs = report.imageFilesystem;
  if (fs) {
    const inUse = fs.capacityBytes ? (100 - ((fs.availableBytes ?? 0) * 100) / fs.capacityBytes).toFixed(0) : '';
    const of = fs.capacityBytes ? ` of ${humanBytes(fs.capacityBytes)} (${inUse}% of the disk in use)` : '';
    lines.push(`Image filesystem ${fs.mountpoint}: images ${humanBytes(fs.usedBytes)}, ${fs.inodesUsed} inodes${of}`);
  }
  return lines.join('\n');
}

/** CPU use between two samples, in percent of one core (as crictl stats computes it). */
export function cpuPercent(before: T.ContainerStats | undefined, after: T.ContainerStats): number | undefined {
  const a = before?.cpu;
  const b = after.cpu;
  if (!a?.usageCoreNanoSeconds || !b?.usageCoreNanoSeconds || !b.timestamp || b.timestamp <= a.timestamp) return undefined;
  return ((b.usageCoreNanoSeconds.value - a.usageCoreNanoSeconds.value) / (b.timestamp - a.timestamp)) * 100;
}
