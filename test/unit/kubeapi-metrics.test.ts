import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { ContainerStats } from '../../src/core/cri/types.js';
import {
  CpuRates,
  cpuQuantity,
  goDuration,
  memoryQuantity,
  metricsAPIResourceList,
  metricsGroupDiscovery,
  metricsNotFound,
  MetricsSampler,
  nodeMetrics,
  podMetrics,
  readNodeSample,
} from '../../src/core/kubeapi/metrics.js';

const S = 1e9;
const T0 = Date.parse('2026-01-02T03:04:05Z') * 1e6;

test('metrics quantities: CPU in the largest decimal suffix that stays whole, memory in binary SI, windows as Go durations', () => {
  assert.deepEqual([0, 1234, 1500, 250e6, 2e9, 7000].map(cpuQuantity), ['0', '1234n', '1500n', '250m', '2', '7u']);
  assert.deepEqual([0, 1000, 5120 * 1024, 5 << 20, 3 * 2 ** 30].map(memoryQuantity), ['0', '1000', '5Mi', '5Mi', '3Gi']);
  assert.equal(memoryQuantity(5121 * 1024), '5121Ki');
  assert.deepEqual([0, 750e6, 10.43 * S, 61.5 * S, 3600 * S, 1500].map(goDuration), ['0s', '750ms', '10.43s', '1m1.5s', '1h0m0s', '1.5µs']);
});

test('CPU rates: none from one sample, the rate from two, the kept one for samples too close, a fresh start when the counter goes back', () => {
  const rates = new CpuRates({ minWindowNs: 0.5 * S, maxWindowNs: 60 * S });
  assert.equal(rates.observe('c', { timestampNs: T0, usageCoreNanoSeconds: 10 * S }), undefined);
  // 0.25 s of CPU in 1 s: a quarter of a core.
  const first = rates.observe('c', { timestampNs: T0 + S, usageCoreNanoSeconds: 10.25 * S });
  assert.deepEqual(first, { nanoCores: 250e6, windowNs: S, timestampNs: T0 + S });
  assert.deepEqual(rates.observe('c', { timestampNs: T0 + 1.1 * S, usageCoreNanoSeconds: 10.3 * S }), first);
  assert.deepEqual(rates.observe('c', { timestampNs: T0 + 3 * S, usageCoreNanoSeconds: 12.25 * S }), {
    nanoCores: 1e9,
    windowNs: 2 * S,
    timestampNs: T0 + 3 * S,
  });
  assert.equal(rates.observe('c', { timestampNs: T0 + 4 * S, usageCoreNanoSeconds: S }), undefined);
  assert.equal(rates.observe('c', { timestampNs: T0 + 100 * S, usageCoreNanoSeconds: 2 * S }), undefined, 'a kept sample too old');
  rates.retain(new Set());
  assert.equal(rates.observe('c', { timestampNs: T0 + 101 * S, usageCoreNanoSeconds: 3 * S }), undefined, 'forgotten');
});

function stats(id: string, tNs: number, cpuNs: number, memory: number): ContainerStats {
  return {
    attributes: { id, metadata: { name: id, attempt: 0 }, labels: {}, annotations: {} },
    cpu: { timestamp: tNs, usageCoreNanoSeconds: { value: cpuNs }, usageNanoCores: null },
    memory: {
      timestamp: tNs,
      workingSetBytes: { value: memory },
      availableBytes: null,
      usageBytes: null,
      rssBytes: null,
      pageFaults: null,
      majorPageFaults: null,
    },
    writableLayer: null,
    swap: null,
  };
}

test('metrics sampler: the first call samples twice an interval apart, the next ones once, from podctl containers only', async () => {
  let now = T0;
  let cpu = 0;
  const filters: unknown[] = [];
  const sleeps: number[] = [];
  const sampler = new MetricsSampler({
    cri: {
      listContainerStats: async (filter) => {
        filters.push(filter);
        return [stats('abc', now, cpu, 5 << 20)];
      },
    },
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms * 1e6;
      cpu += 0.5 * ms * 1e6;
    },
    intervalMs: 1000,
  });
  const first = await sampler.containerUsage();
  assert.deepEqual(sleeps, [1000]);
  assert.deepEqual(first.get('abc'), { nanoCores: 500e6, windowNs: S, timestampNs: T0 + S, memoryBytes: 5 << 20 });
  now += 10 * S;
  cpu += 2.5 * S;
  const second = await sampler.containerUsage();
  assert.deepEqual(sleeps, [1000], 'no second sample once one is kept');
  assert.equal(second.get('abc')?.nanoCores, 250e6);
  assert.equal(second.get('abc')?.windowNs, 10 * S);
  assert.deepEqual(filters[0], { labelSelector: { 'io.podctl.managed-by': 'podctl' } });
  assert.equal(filters.length, 3);
});

const pod = (name: string, statuses: NonNullable<IPod['status']>['containerStatuses']): IPod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'web', uid: `${name}-uid`, labels: { app: name } },
  status: { phase: 'Running', containerStatuses: statuses },
});

test('PodMetrics: each running container by its status containerID, in metrics-server shape; pods without usage left out', () => {
  const running = { running: { startedAt: '2026-01-02T03:00:00Z' } };
  const status = (name: string, id: string, state: object = running) => ({
    name,
    containerID: `containerd://${id}`,
    state,
    ready: true,
    restartCount: 0,
    image: 'busybox',
    imageID: '',
  });
  const pods = [
    pod('two', [status('app', 'a1'), status('sidecar', 's1'), status('done', 'd1', { terminated: { exitCode: 0 } })]),
    pod('fresh', [status('app', 'f1')]),
  ];
  const usage = new Map([
    ['a1', { nanoCores: 1234, memoryBytes: 5120 * 1024, timestampNs: T0, windowNs: 10.5 * S }],
    ['s1', { nanoCores: 25e6, memoryBytes: 4096, timestampNs: T0 - S, windowNs: 9 * S }],
    ['d1', { nanoCores: 9, memoryBytes: 9, timestampNs: T0, windowNs: S }],
  ]);
  const now = new Date('2026-01-02T03:05:00Z');
  assert.deepEqual(podMetrics(pods, usage, now), [
    {
      kind: 'PodMetrics',
      apiVersion: 'metrics.k8s.io/v1beta1',
      metadata: { name: 'two', namespace: 'web', creationTimestamp: '2026-01-02T03:05:00Z', labels: { app: 'two' } },
      timestamp: '2026-01-02T03:04:05Z',
      window: '10.5s',
      containers: [
        { name: 'app', usage: { cpu: '1234n', memory: '5Mi' } },
        { name: 'sidecar', usage: { cpu: '25m', memory: '4Ki' } },
      ],
    },
  ]);
  assert.deepEqual(nodeMetrics({ name: 'node1', labels: { 'kubernetes.io/hostname': 'node1' } }, usage.get('a1')!, now), {
    kind: 'NodeMetrics',
    apiVersion: 'metrics.k8s.io/v1beta1',
    metadata: { name: 'node1', creationTimestamp: '2026-01-02T03:05:00Z', labels: { 'kubernetes.io/hostname': 'node1' } },
    timestamp: '2026-01-02T03:04:05Z',
    window: '10.5s',
    usage: { cpu: '1234n', memory: '5Mi' },
  });
});

test('node sample: busy CPU ticks of /proc/stat and the working set of /proc/meminfo; a file without them is named', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-unit-metrics-'));
  try {
    writeFileSync(join(dir, 'stat'), 'cpu  100 5 20 1000 50 1 2 3 7 0\ncpu0 1 2 3 4\n');
    writeFileSync(join(dir, 'meminfo'), 'MemTotal:       1000 kB\nMemFree:         300 kB\nInactive(file):  200 kB\n');
    // user+nice+system+irq+softirq+steal = 131 ticks of 10 ms.
    assert.deepEqual(await readNodeSample(dir, 5000, 100), {
      timestampNs: 5000e6,
      usageCoreNanoSeconds: 1.31e9,
      workingSetBytes: 500 * 1024,
    });
    writeFileSync(join(dir, 'meminfo'), 'MemTotal:       1000 kB\n');
    await assert.rejects(readNodeSample(dir), /meminfo: no MemFree/);
    writeFileSync(join(dir, 'stat'), 'intr 1 2\n');
    await assert.rejects(readNodeSample(dir), /stat: no "cpu" line of numbers/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('metrics discovery: pods namespaced and nodes cluster-wide, get and list; a missing one is a NotFound in metrics-server words', () => {
  const list = metricsAPIResourceList();
  assert.equal(list.groupVersion, 'metrics.k8s.io/v1beta1');
  assert.deepEqual(
    list.resources.map((r) => [r.name, r.kind, r.namespaced, r.verbs]),
    [
      ['nodes', 'NodeMetrics', false, ['get', 'list']],
      ['pods', 'PodMetrics', true, ['get', 'list']],
    ],
  );
  const group = metricsGroupDiscovery();
  assert.equal(group.metadata.name, 'metrics.k8s.io');
  assert.deepEqual(
    group.versions[0]!.resources.map((r) => [r.resource, r.scope, r.responseKind.kind]),
    [
      ['nodes', 'Cluster', 'NodeMetrics'],
      ['pods', 'Namespaced', 'PodMetrics'],
    ],
  );
  const missing = metricsNotFound('pods', 'web').toStatus();
  assert.equal(missing.code, 404);
  assert.equal(missing.message, 'podmetrics.metrics.k8s.io "web" not found');
});
