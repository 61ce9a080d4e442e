import { wantsTable } from './request.js';
import type { ExtraGroup } from './routes.js';
import { notFound } from './status.js';
import type { WatchCache } from './store.js';
import { toTable } from './table.js';

const GROUP = 'apiextensions.k8s.io';

/** The store's name for CRDs and their kind, which its watch bookmarks carry (the store is made before the groups). */
export const CRD_KINDS = {
  customresourcedefinitions: { kind: 'CustomResourceDefinition', apiVersion: `${GROUP}/v1` },
} as const;

/**
 * apiextensions.k8s.io/v1 with no CustomResourceDefinitions: the node serves no custom resources, and says so
 * when asked. kubectl asks while it validates a kind it finds in no OpenAPI document (a Service, a Deployment):
 * with the empty list it reports that kind as unknown for its document alone, as a cluster without the kind does,
 * instead of failing the whole apply on a missing endpoint. A list carries the store's version, so that `kubectl get crd
 * -w` watches from it (the store holds no CRDs: the watch stays open and quiet, as a cluster's with none created).
 */
export function crdGroup({ cache }: { cache: WatchCache }): ExtraGroup {
  return {
    group: GROUP,
    version: 'v1',
    resources: [
      {
        name: 'customresourcedefinitions',
        singularName: 'customresourcedefinition',
        kind: CRD_KINDS.customresourcedefinitions.kind,
        namespaced: false,
        verbs: ['get', 'list', 'watch'],
        shortNames: ['crd', 'crds'],
      },
    ],
    async get(path, _url, accept) {
      if (path.name) throw notFound('customresourcedefinitions', path.name, GROUP);
      const metadata = { resourceVersion: cache.resourceVersion };
      // kubectl get crd asks for a Table: an empty one says "No resources found", with no namespace, as a cluster's.
      if (wantsTable(accept)) return toTable('customresourcedefinitions', [], { now: Date.now(), listMeta: metadata });
      return { kind: 'CustomResourceDefinitionList', apiVersion: CRD_KINDS.customresourcedefinitions.apiVersion, metadata, items: [] };
    },
  };
}
