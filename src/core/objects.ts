import type { IConfigMap, ISecret } from 'kubernetes-models/v1';

/** A node.k8s.io/v1 RuntimeClass: the CRI runtime handler a pod's runtimeClassName selects. */
export interface RuntimeClassRef {
  name: string;
  handler: string;
}

/** The ConfigMaps and Secrets one source delivered with its pods. */
export interface SourceObjects {
  configMaps: IConfigMap[];
  secrets: ISecret[];
  /** Cluster-scoped, by name. */
  runtimeClasses?: RuntimeClassRef[];
}

/**
 * The source of the objects the node's Kubernetes API keeps: namespace-wide, as a cluster's, so they are read
 * before the copies a pod's manifest set or applied file carries (which date from when the pod was handed over).
 */
export const API_OBJECTS_SOURCE = 'kubeapi';

export const NO_OBJECTS: SourceObjects = Object.freeze({ configMaps: [], secrets: [], runtimeClasses: [] }) as SourceObjects;

/**
 * The kubelet's configMap and secret managers, for a node without an API
 * server: the objects come from the documents of the same manifest set, per
 * source, and the latest snapshot of each source replaces its previous one.
 * With the node's Kubernetes API, its objects come first (API_OBJECTS_SOURCE):
 * a change there reaches a running pod's volumes at the pod's next sync, as
 * the kubelet's managers read the API server's.
 */
export class ObjectStore {
  private readonly bySource = new Map<
    string,
    { configMaps: Map<string, IConfigMap>; secrets: Map<string, ISecret>; runtimeClasses: Map<string, RuntimeClassRef> }
  >();

  set(source: string, objects: SourceObjects): void {
    const key = (o: { metadata?: { namespace?: string; name?: string } }) =>
      `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`;
    this.bySource.set(source, {
      configMaps: new Map(objects.configMaps.map((c) => [key(c), c])),
      secrets: new Map(objects.secrets.map((s) => [key(s), s])),
      runtimeClasses: new Map((objects.runtimeClasses ?? []).map((r) => [r.name, r])),
    });
  }

  /** The sources in the order a lookup reads them: the API's first. */
  private *sources() {
    const api = this.bySource.get(API_OBJECTS_SOURCE);
    if (api) yield api;
    for (const [name, s] of this.bySource) if (name !== API_OBJECTS_SOURCE) yield s;
  }

  runtimeClass(name: string): RuntimeClassRef | undefined {
    for (const s of this.sources()) {
      const r = s.runtimeClasses.get(name);
      if (r) return r;
    }
    return undefined;
  }

  configMap(namespace: string, name: string): IConfigMap | undefined {
    for (const s of this.sources()) {
      const c = s.configMaps.get(`${namespace}/${name}`);
      if (c) return c;
    }
    return undefined;
  }

  secret(namespace: string, name: string): ISecret | undefined {
    for (const s of this.sources()) {
      const c = s.secrets.get(`${namespace}/${name}`);
      if (c) return c;
    }
    return undefined;
  }
}
