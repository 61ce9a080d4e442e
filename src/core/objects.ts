import type { IConfigMap, ISecret } from 'kubernetes-models/v1';

/** The ConfigMaps and Secrets one source delivered with its pods. */
/** A node.k8s.io/v1 RuntimeClass: the CRI runtime handler a pod's runtimeClassName selects. */
export interface RuntimeClassRef {
  name: string;
  handler: string;
}

export interface SourceObjects {
  configMaps: IConfigMap[];
  secrets: ISecret[];
  /** Cluster-scoped, by name. */
  runtimeClasses?: RuntimeClassRef[];
}

export const NO_OBJECTS: SourceObjects = Object.freeze({ configMaps: [], secrets: [], runtimeClasses: [] }) as SourceObjects;

/**
 * The kubelet's configMap and secret managers, for a node without an API
 * server: the objects come from the documents of the same manifest set, per
 * source, and the latest snapshot of each source replaces its previous one.
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

  runtimeClass(name: string): RuntimeClassRef | undefined {
    for (const s of this.bySource.values()) {
      const r = s.runtimeClasses.get(name);
      if (r) return r;
    }
    return undefined;
  }

  configMap(namespace: string, name: string): IConfigMap | undefined {
    for (const s of this.bySource.values()) {
      const c = s.configMaps.get(`${namespace}/${name}`);
      if (c) return c;
    }
    return undefined;
  }

  secret(namespace: string, name: string): ISecret | undefined {
    for (const s of this.bySource.values()) {
      const c = s.secrets.get(`${namespace}/${name}`);
      if (c) return c;
    }
    return undefined;
  }
}
