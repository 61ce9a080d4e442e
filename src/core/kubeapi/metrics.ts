import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { RuntimeService } from '../cri/client.js';
import type * as T from '../cri/types.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../kuberuntime/labels.js';
import { KubeStatusError } from './status.js';

/**
 * The metrics.k8s.io/v1beta1 group (what metrics-server serves and `kubectl top` reads): PodMetrics
 * from the CRI container stats that `podctl stats` reads, NodeMetrics from the host's /proc. CPU is
 * a rate, so it takes two samples: as metrics-server does, the previous sample of each container is
 * kept, and the first time a container is seen a second sample follows a short interval later.
 */
export const METRICS_GROUP = 'metrics.k8s.io';
export const METRICS_VERSION = 'v1beta1';
export const METRICS_GROUP_VERSION = `${METRICS_GROUP}/${METRICS_VERSION}`;

/** One container's (or the node's) usage over a window ending at `timestampNs`. */
export interface Usage {
  nanoCores: number;
  memoryBytes: number;
  timestampNs: number;
  windowNs: number;
}

export interface CpuSample {
  timestampNs: number;
  usageCoreNanoSeconds: number;
}

interface Rate {
  nanoCores: number;
  windowNs: number;
  timestampNs: number;
}

export interface CpuRateOptions {
  /** Samples closer than this to the kept one leave it (and its rate) as they are: no rate over a jiffy. */
  minWindowNs?: number;
  /** A kept sample older than this is too old for a rate that says anything of now. */
  maxWindowNs?: number;
}

/** The last CPU sample of each container (by ID) and the rate it gave. */
export class CpuRates {
  private readonly kept = new Map<string, { last: CpuSample; rate?: Rate }>();
  private readonly minWindowNs: number;
  private readonly maxWindowNs: number;

  constructor(opts: CpuRateOptions = {}) {
    this.minWindowNs = opts.minWindowNs ?? 500e6;
    this.maxWindowNs = opts.maxWindowNs ?? 120e9;
  }

  /** The rate from the kept sample to this one, or undefined until there are two samples to tell it. */
  observe(key: string, sample: CpuSample): Rate | undefined {
    const entry = this.kept.get(key);
    const since = entry ? sample.timestampNs - entry.last.timestampNs : 0;
    if (entry?.rate && since >= 0 && since < this.minWindowNs) return entry.rate;
    const used = entry ? sample.usageCoreNanoSeconds - entry.last.usageCoreNanoSeconds : -1;
    if (!entry || since <= 0 || since > this.maxWindowNs || used < 0) {
      this.kept.set(key, { last: sample });
      return undefined;
    }
    const rate = { nanoCores: Math.round((used * 1e9) / since), windowNs: since, timestampNs: sample.timestampNs };
    this.kept.set(key, { last: sample, rate });
    return rate;
  }

  /** Forgets what is not in `keys` (containers gone). */
  retain(keys: ReadonlySet<string>): void {
    for (const k of this.kept.keys()) if (!keys.has(k)) this.kept.delete(k);
  }
}

/** The node's CPU time and memory working set at one moment. */
export interface NodeSample extends CpuSample {
  workingSetBytes: number;
}

/**
 * The host's CPU time (/proc/stat: all but idle and iowait, in USER_HZ ticks) and working set
 * (/proc/meminfo: used memory less the inactive file cache, as cAdvisor counts the root cgroup).
 */
export async function readNodeSample(procRoot = '/proc', nowMs = Date.now(), userHz = 100): Promise<NodeSample> {
  const [stat, meminfo] = await Promise.all([readFile(join(procRoot, 'stat'), 'utf8'), readFile(join(procRoot, 'meminfo'), 'utf8')]);
  const cpu = /^cpu\s+(.+)$/m.exec(stat)?.[1]?.trim().split(/\s+/).map(Number);
  if (!cpu || cpu.length < 4 || cpu.some((n) => !Number.isFinite(n)))
    throw new Error(`${join(procRoot, 'stat')}: no "cpu" line of numbers`);
  // user nice system idle iowait irq softirq steal (guest time is already in user).
  const busy = cpu.slice(0, 8).reduce((sum, n, i) => (i === 3 || i === 4 ? sum : sum + n), 0);
  const kib = (key: string) => {
    const m = new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+) kB$`, 'm').exec(meminfo);
    if (!m) throw new Error(`${join(procRoot, 'meminfo')}: no ${key}`);
    return Number(m[1]) * 1024;
  };
  const used = kib('MemTotal') - kib('MemFree');
  return {
    timestampNs: nowMs * 1e6,
    usageCoreNanoSeconds: (busy * 1e9) / userHz,
    workingSetBytes: Math.max(0, used - kib('Inactive(file)')),
  };
}

export interface MetricsSamplerOptions extends CpuRateOptions {
  cri: Pick<RuntimeService, 'listContainerStats'>;
  readNode?: () => Promise<NodeSample>;
  sleep?: (ms: number) => Promise<void>;
  /** How long to wait for the second sample when there is no kept one. */
  intervalMs?: number;
}

/** Samples the runtime and the host for usage, keeping what a rate needs between calls. */
export class MetricsSampler {
  private readonly containers: CpuRates;
  private readonly node: CpuRates;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly opts: MetricsSamplerOptions) {
    this.containers = new CpuRates(opts);
    this.node = new CpuRates(opts);
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  /** Usage of each of podctl's containers with CPU stats, by container ID. */
  async containerUsage(): Promise<Map<string, Usage>> {
    let usage = await this.sampleContainers();
    if (usage.missing) {
      await this.sleep(this.opts.intervalMs ?? 1000);
      usage = await this.sampleContainers();
    }
    return usage.byId;
  }

  private async sampleContainers(): Promise<{ byId: Map<string, Usage>; missing: boolean }> {
    const stats = await this.opts.cri.listContainerStats({ labelSelector: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } });
    const byId = new Map<string, Usage>();
    let missing = false;
    const seen = new Set<string>();
    for (const s of stats) {
      const id = s.attributes?.id;
      const cpu = s.cpu?.usageCoreNanoSeconds;
      if (!id || !cpu || !s.cpu?.timestamp) continue;
      seen.add(id);
      const rate = this.containers.observe(id, { timestampNs: s.cpu.timestamp, usageCoreNanoSeconds: cpu.value });
      if (!rate) missing = true;
      else byId.set(id, { ...rate, memoryBytes: workingSet(s) });
    }
    this.containers.retain(seen);
    return { byId, missing };
  }

  async nodeUsage(): Promise<Usage> {
    const read = this.opts.readNode ?? (() => readNodeSample());
    let sample = await read();
    let rate = this.node.observe('node', sample);
    if (!rate) {
      await this.sleep(this.opts.intervalMs ?? 1000);
      sample = await read();
      rate = this.node.observe('node', sample);
    }
    if (!rate) throw new KubeStatusError(503, 'ServiceUnavailable', 'the node CPU usage could not be sampled twice');
    return { ...rate, memoryBytes: sample.workingSetBytes };
  }
}

function workingSet(s: T.ContainerStats): number {
  return s.memory?.workingSetBytes?.value ?? 0;
}

export interface ContainerMetrics {
  name: string;
  usage: { cpu: string; memory: string };
}

export interface PodMetrics {
  kind: 'PodMetrics';
  apiVersion: typeof METRICS_GROUP_VERSION;
  metadata: { name: string; namespace: string; creationTimestamp: string; labels?: Record<string, string> };
  timestamp: string;
  window: string;
  containers: ContainerMetrics[];
}

export interface NodeMetrics {
  kind: 'NodeMetrics';
  apiVersion: typeof METRICS_GROUP_VERSION;
  metadata: { name: string; creationTimestamp: string; labels?: Record<string, string> };
  timestamp: string;
  window: string;
  usage: { cpu: string; memory: string };
}

/**
 * PodMetrics for the pods with usage: each running container (by the containerID of its status)
 * that has a rate. A pod none of whose containers has one is left out, as metrics-server leaves it.
 */
export function podMetrics(pods: readonly IPod[], usage: ReadonlyMap<string, Usage>, now = new Date()): PodMetrics[] {
  const out: PodMetrics[] = [];
  for (const pod of pods) {
    const containers: ContainerMetrics[] = [];
    let latest: Usage | undefined;
    for (const status of pod.status?.containerStatuses ?? []) {
      if (!status.state?.running || !status.containerID) continue;
      const u = usage.get(status.containerID.replace(/^[a-z0-9-]+:\/\//, ''));
      if (!u) continue;
      containers.push({ name: status.name, usage: { cpu: cpuQuantity(u.nanoCores), memory: memoryQuantity(u.memoryBytes) } });
      if (!latest || u.timestampNs > latest.timestampNs) latest = u;
    }
    if (!latest) continue;
    const { name = '', namespace = 'default', labels } = pod.metadata ?? {};
    out.push({
      kind: 'PodMetrics',
      apiVersion: METRICS_GROUP_VERSION,
      metadata: { name, namespace, creationTimestamp: rfc3339(now.getTime() * 1e6), ...(labels ? { labels } : {}) },
      timestamp: rfc3339(latest.timestampNs),
      window: goDuration(latest.windowNs),
      containers,
    });
  }
  return out;
}

export function nodeMetrics(node: { name: string; labels?: Record<string, string> }, usage: Usage, now = new Date()): NodeMetrics {
  return {
    kind: 'NodeMetrics',
    apiVersion: METRICS_GROUP_VERSION,
    metadata: { name: node.name, creationTimestamp: rfc3339(now.getTime() * 1e6), ...(node.labels ? { labels: node.labels } : {}) },
    timestamp: rfc3339(usage.timestampNs),
    window: goDuration(usage.windowNs),
    usage: { cpu: cpuQuantity(usage.nanoCores), memory: memoryQuantity(usage.memoryBytes) },
  };
}

export function metricsList<M extends PodMetrics | NodeMetrics>(kind: 'PodMetricsList' | 'NodeMetricsList', items: M[]) {
  return { kind, apiVersion: METRICS_GROUP_VERSION, metadata: {}, items };
}

/** metrics-server's answer for a pod or node it has no metrics of. */
export function metricsNotFound(resource: 'pods' | 'nodes', name: string): KubeStatusError {
  const singular = resource === 'pods' ? 'podmetrics' : 'nodemetrics';
  return new KubeStatusError(404, 'NotFound', `${singular}.${METRICS_GROUP} "${name}" not found`, {
    name,
    group: METRICS_GROUP,
    kind: resource,
  });
}

/** GET /apis/metrics.k8s.io/v1beta1. */
export function metricsAPIResourceList() {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: METRICS_GROUP_VERSION,
    resources: [
      { name: 'nodes', singularName: '', namespaced: false, kind: 'NodeMetrics', verbs: ['get', 'list'] },
      { name: 'pods', singularName: '', namespaced: true, kind: 'PodMetrics', verbs: ['get', 'list'] },
    ],
  };
}

/** The group's entry in /apis as application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList. */
export function metricsGroupDiscovery() {
  const resource = (name: string, kind: string, scope: 'Cluster' | 'Namespaced') => ({
    resource: name,
    responseKind: { group: METRICS_GROUP, version: METRICS_VERSION, kind },
    scope,
    singularResource: kind.toLowerCase(),
    verbs: ['get', 'list'],
  });
  return {
    metadata: { name: METRICS_GROUP, creationTimestamp: null },
    versions: [
      {
        version: METRICS_VERSION,
        resources: [resource('nodes', 'NodeMetrics', 'Cluster'), resource('pods', 'PodMetrics', 'Namespaced')],
        freshness: 'Current',
      },
    ],
  };
}

/** The group in a plain APIGroupList (/apis without aggregated discovery). */
export function metricsAPIGroup() {
  const version = { groupVersion: METRICS_GROUP_VERSION, version: METRICS_VERSION };
  return { name: METRICS_GROUP, versions: [version], preferredVersion: version };
}

/** A CPU quantity as the API server writes one: the largest decimal suffix that keeps it whole. */
export function cpuQuantity(nanoCores: number): string {
  const n = Math.max(0, Math.round(nanoCores));
  if (n === 0) return '0';
  if (n % 1e9 === 0) return String(n / 1e9);
  if (n % 1e6 === 0) return `${n / 1e6}m`;
  if (n % 1e3 === 0) return `${n / 1e3}u`;
  return `${n}n`;
}

/** A memory quantity in binary SI: the largest power of 1024 that keeps it whole (bytes otherwise). */
export function memoryQuantity(bytes: number): string {
  const n = Math.max(0, Math.round(bytes));
  if (n === 0) return '0';
  const suffixes = ['Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
  for (let i = suffixes.length; i >= 1; i--) {
    const unit = 1024 ** i;
    if (n % unit === 0) return `${n / unit}${suffixes[i - 1]}`;
  }
  return String(n);
}

function rfc3339(ns: number): string {
  return new Date(Math.floor(ns / 1e6)).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A duration as Go's time.Duration.String writes it (metav1.Duration): 10.5s, 1m0.25s, 750ms. */
export function goDuration(ns: number): string {
  let n = Math.max(0, Math.round(ns));
  if (n === 0) return '0s';
  if (n < 1e3) return `${n}ns`;
  if (n < 1e6) return `${trim(n / 1e3)}µs`;
  if (n < 1e9) return `${trim(n / 1e6)}ms`;
  const h = Math.floor(n / 3600e9);
  n -= h * 3600e9;
  const m = Math.floor(n / 60e9);
  n -= m * 60e9;
  const s = `${trim(n / 1e9)}s`;
  return h ? `${h}h${m}m${s}` : m ? `${m}m${s}` : s;
}

function trim(x: number): string {
  return x.toFixed(9).replace(/0+$/, '').replace(/\.$/, '');
}
