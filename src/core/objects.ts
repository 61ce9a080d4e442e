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
  /**
   * When the source last wrote an object, in ms since the epoch (the mtime of the file it keeps it in), so that which of
   * two sources' copies is newer holds across an agent restart. Without it, the time the store sees it change.
   */
  writtenAt?(object: IConfigMap | ISecret): number | undefined;
}

/** The source of the objects the node's Kubernetes API keeps (the kube API publishes them all after each write). */
export const API_OBJECTS_SOURCE = 'kubeapi';

export const NO_OBJECTS: SourceObjects = Object.freeze({ configMaps: [], secrets: [], runtimeClasses: [] }) as SourceObjects;

/** A source's files' objects as its one snapshot, each dated by the mtime of the file it came from. */
export function objectsOfFiles(files: readonly { objects: SourceObjects; mtimeMs?: number }[]): SourceObjects {
  const dates = new Map<object, number>();
  for (const f of files)
    if (f.mtimeMs !== undefined) for (const o of [...f.objects.configMaps, ...f.objects.secrets]) dates.set(o, f.mtimeMs);
  return {
    configMaps: files.flatMap((f) => f.objects.configMaps),
    secrets: files.flatMap((f) => f.objects.secrets),
    runtimeClasses: files.flatMap((f) => f.objects.runtimeClasses ?? []),
    writtenAt: (o) => dates.get(o),
  };
}

type Named = { metadata?: { namespace?: string; name?: string } };
/** An object with when its content was last written, and the order the store saw it in (for equal times). */
type Versioned<T> = { object: T; content: string; written: number; seen: number };
const newer = (a: { written: number; seen: number }, b: { written: number; seen: number }) =>
  a.written > b.written || (a.written === b.written && a.seen > b.seen);

interface SourceEntry {
  configMaps: Map<string, Versioned<IConfigMap>>;
  secrets: Map<string, Versioned<ISecret>>;
  runtimeClasses: Map<string, RuntimeClassRef>;
}

const keyOf = (o: Named) => `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`;
/** What a pod reads of a ConfigMap or Secret: a change of metadata alone (a label) is no newer version. */
const contentOf = (o: IConfigMap | ISecret) => {
  const { data, binaryData, stringData, type, immutable } = o as IConfigMap & ISecret;
  return JSON.stringify([data, binaryData, stringData, type, immutable]);
};

/**
 * The kubelet's configMap and secret managers, for a node without an API
 * server: the objects come from the documents of the manifest sets, per
 * source, and the latest snapshot of each source replaces its previous one.
 * A ConfigMap or Secret is its namespace's, as on a cluster: where two sources
 * hold the same one (a pod's applied file, the node's Kubernetes API), the one
 * written last is read, so that a change reaches a running pod's volumes at
 * its next sync whichever way it came. Written last is by the time the source
 * wrote it (its file's mtime), which an agent restart keeps; a source that
 * cannot say is taken as writing it when the store sees the content change.
 */
export class ObjectStore {
  private readonly bySource = new Map<string, SourceEntry>();
  private seen = 0;

  constructor(private readonly now: () => number = Date.now) {}

  set(source: string, objects: SourceObjects): void {
    const before = this.bySource.get(source);
    const versioned = <T extends IConfigMap | ISecret>(list: T[], previous: Map<string, Versioned<T>> | undefined) => {
      const out = new Map<string, Versioned<T>>();
      for (const object of list) {
        const key = keyOf(object);
        const content = contentOf(object);
        const kept = previous?.get(key);
        const v =
          kept?.content === content
            ? { ...kept, object }
            : { object, content, written: objects.writtenAt?.(object) ?? this.now(), seen: ++this.seen };
        // One source holding it twice (two pods' files): the copy written last.
        const other = out.get(key);
        if (!other || !newer(other, v)) out.set(key, v);
      }
      return out;
    };
    this.bySource.set(source, {
      configMaps: versioned(objects.configMaps, before?.configMaps),
      secrets: versioned(objects.secrets, before?.secrets),
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
    return this.latest((s) => s.configMaps.get(`${namespace}/${name}`));
  }

  secret(namespace: string, name: string): ISecret | undefined {
    return this.latest((s) => s.secrets.get(`${namespace}/${name}`));
  }

  private latest<T>(pick: (s: SourceEntry) => Versioned<T> | undefined): T | undefined {
    let found: Versioned<T> | undefined;
    for (const s of this.bySource.values()) {
      const v = pick(s);
      if (v && (!found || newer(v, found))) found = v;
    }
    return found?.object;
  }
}
