import type { IPod } from 'kubernetes-models/v1';
import type { RuntimeService } from '../cri/client.js';
import { MetricsSampler, METRICS_GROUP, METRICS_VERSION, metricsList, metricsNotFound, nodeMetrics, podMetrics } from './metrics.js';
import type { ResourcePath } from './request.js';
import type { ExtraGroup } from './routes.js';
import type { WatchCache } from './store.js';

/**
 * metrics.k8s.io/v1beta1 over the node (what kubectl top reads): PodMetrics of the pods the API serves, from the
 * CRI's container stats, and the NodeMetrics of its one Node, from the host.
 */
export function metricsGroup(o: { cri: Pick<RuntimeService, 'listContainerStats'>; cache: WatchCache }): ExtraGroup {
  const sampler = new MetricsSampler({ cri: o.cri });
  return {
    group: METRICS_GROUP,
    version: METRICS_VERSION,
    resources: [
      { name: 'nodes', singularName: '', kind: 'NodeMetrics', namespaced: false, verbs: ['get', 'list'] },
      { name: 'pods', singularName: '', kind: 'PodMetrics', namespaced: true, verbs: ['get', 'list'] },
    ],
    async get(path: ResourcePath, url: URL) {
      const q = url.searchParams;
      const selectors = { labelSelector: q.get('labelSelector') ?? undefined, fieldSelector: q.get('fieldSelector') ?? undefined };
      if (path.resource === 'pods') {
        const pods = path.name
          ? [o.cache.get('pods', path.namespace, path.name)].filter((p) => p !== undefined)
          : o.cache.list('pods', { namespace: path.namespace, ...selectors }).items;
        const items = podMetrics(pods as unknown as IPod[], await sampler.containerUsage());
        if (!path.name) return metricsList('PodMetricsList', items);
        if (!items[0]) throw metricsNotFound('pods', path.name);
        return items[0];
      }
      if (path.resource === 'nodes') {
        const nodes = o.cache.list('nodes', selectors).items.filter((n) => !path.name || n.metadata?.name === path.name);
        if (path.name && !nodes.length) throw metricsNotFound('nodes', path.name);
        const usage = nodes.length ? await sampler.nodeUsage() : undefined;
        const items = nodes.map((n) => nodeMetrics({ name: String(n.metadata?.name), labels: n.metadata?.labels }, usage!));
        return path.name ? items[0] : metricsList('NodeMetricsList', items);
      }
      throw metricsNotFound('pods', path.name ?? path.resource);
    },
  };
}
