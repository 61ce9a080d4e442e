/** One resource the node serves, as discovery describes it. */
export interface ResourceInfo {
  name: string;
  singularName: string;
  kind: string;
  namespaced: boolean;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: { name: string; kind: string; verbs: string[] }[];
}

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** The core group's resources this node serves: the API server's names, verbs, short names and categories for each. */
export const CORE_RESOURCES: ResourceInfo[] = [
  {
    name: 'pods',
    singularName: 'pod',
    kind: 'Pod',
    namespaced: true,
    verbs: ALL_VERBS,
    shortNames: ['po'],
    categories: ['all'],
    subresources: [
      { name: 'attach', kind: 'PodAttachOptions', verbs: ['create', 'get'] },
      { name: 'ephemeralcontainers', kind: 'Pod', verbs: ['get', 'patch', 'update'] },
      { name: 'exec', kind: 'PodExecOptions', verbs: ['create', 'get'] },
      { name: 'log', kind: 'Pod', verbs: ['get'] },
      { name: 'portforward', kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
      { name: 'status', kind: 'Pod', verbs: ['get'] },
    ],
  },
  { name: 'configmaps', singularName: 'configmap', kind: 'ConfigMap', namespaced: true, verbs: ALL_VERBS, shortNames: ['cm'] },
  { name: 'secrets', singularName: 'secret', kind: 'Secret', namespaced: true, verbs: ALL_VERBS },
  { name: 'events', singularName: 'event', kind: 'Event', namespaced: true, verbs: ['get', 'list', 'watch'], shortNames: ['ev'] },
  // Read and always empty: the node proxies no Service (SERVICES_NOT_KEPT). kubectl cluster-info lists them.
  {
    name: 'services',
    singularName: 'service',
    kind: 'Service',
    namespaced: true,
    verbs: ['get', 'list', 'watch'],
    shortNames: ['svc'],
    categories: ['all'],
  },
  { name: 'nodes', singularName: 'node', kind: 'Node', namespaced: false, verbs: ['get', 'list', 'watch'], shortNames: ['no'] },
  {
    name: 'namespaces',
    singularName: 'namespace',
    kind: 'Namespace',
    namespaced: false,
    // As the API server's: no deletecollection of namespaces.
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    shortNames: ['ns'],
  },
];

/** Another group the node serves (metrics.k8s.io for kubectl top). */
export interface GroupInfo {
  group: string;
  version: string;
  resources: ResourceInfo[];
}

/** The media type of aggregated discovery, which kubectl 1.30+ asks /api and /apis for first. */
export const AGGREGATED_DISCOVERY = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** Whether an Accept header asks for aggregated discovery (v2; v2beta1 is answered with v2, which kubectl 1.30+ reads). */
export function wantsAggregated(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((t) => /g=apidiscovery\.k8s\.io/.test(t) && /as=APIGroupDiscoveryList/.test(t) && /v=v2\b/.test(t));
}

/** GET /api: the legacy group's versions. */
export function apiVersions(serverAddress: string): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

/** GET /apis: the named groups. */
export function apiGroupList(groups: GroupInfo[]): Record<string, unknown> {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groups.map((g) => {
      const gv = { groupVersion: `${g.group}/${g.version}`, version: g.version };
      return { name: g.group, versions: [gv], preferredVersion: gv };
    }),
  };
}

/** GET /api/v1 or /apis/G/V: an APIResourceList, subresources as their own entries (`pods/log`). */
export function apiResourceList(groupVersion: string, resources: ResourceInfo[]): Record<string, unknown> {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: resources.flatMap((r) => [
      {
        name: r.name,
        singularName: r.singularName,
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: r.verbs,
        ...(r.shortNames ? { shortNames: r.shortNames } : {}),
        ...(r.categories ? { categories: r.categories } : {}),
      },
      ...(r.subresources ?? []).map((s) => ({
        name: `${r.name}/${s.name}`,
        singularName: '',
        namespaced: r.namespaced,
        kind: s.kind,
        verbs: s.verbs,
      })),
    ]),
  };
}

function discoveryResources(group: string, version: string, resources: ResourceInfo[]): unknown[] {
  return resources.map((r) => ({
    resource: r.name,
    responseKind: { group, version, kind: r.kind },
    scope: r.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: r.singularName,
    verbs: r.verbs,
    ...(r.shortNames ? { shortNames: r.shortNames } : {}),
    ...(r.categories ? { categories: r.categories } : {}),
    ...(r.subresources
      ? {
          subresources: r.subresources.map((s) => ({
            subresource: s.name,
            responseKind: { group, version, kind: s.kind },
            verbs: s.verbs,
          })),
        }
      : {}),
  }));
}

/** Aggregated discovery (apidiscovery.k8s.io/v2): of the core group for /api, of the named groups for /apis. */
export function aggregatedDiscovery(groups: GroupInfo[]): Record<string, unknown> {
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: groups.map((g) => ({
      metadata: g.group ? { name: g.group, creationTimestamp: null } : { creationTimestamp: null },
      versions: [{ version: g.version, resources: discoveryResources(g.group, g.version, g.resources), freshness: 'Current' }],
    })),
  };
}

/** GET /version, as kubectl version prints it (and as gcloud's kubectl dispatcher picks its kubectl.1.<minor> by). */
export function versionInfo(podctlVersion: string, now = new Date()): Record<string, unknown> {
  return {
    major: '1',
    minor: '32',
    gitVersion: `v1.32.0+podctl-${podctlVersion}`,
    gitCommit: '',
    gitTreeState: 'clean',
    buildDate: now.toISOString().replace(/\.\d+Z$/, 'Z'),
    goVersion: `node${process.versions.node}`,
    compiler: 'podctl',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}
