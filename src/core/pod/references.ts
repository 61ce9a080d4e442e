import type { IConfigMap, IPod, IPodSpec, ISecret } from 'kubernetes-models/v1';
import type { RuntimeClassRef } from '../objects.js';

/** Where the ConfigMaps and Secrets of a pod's namespace come from (the ObjectStore, or a manifest set). */
export interface ObjectLookup {
  configMap(namespace: string, name: string): IConfigMap | undefined;
  secret(namespace: string, name: string): ISecret | undefined;
  /** RuntimeClasses by name; a lookup without it cannot tell a missing one. */
  runtimeClass?(name: string): RuntimeClassRef | undefined;
}

/** A reference the set does not provide, in the kubelet's words. */
export interface MissingReference {
  /** The field path, e.g. spec.containers[0].env[1].valueFrom.configMapKeyRef. */
  field: string;
  /** configmap "NAME" not found, couldn't find key X in ConfigMap NS/NAME, … */
  message: string;
  /**
   * What the kubelet makes of it: the container waits (CreateContainerConfigError),
   * the volume is never set up (FailedMount), or the pull goes without the
   * credentials (FailedToRetrieveImagePullSecret, which does not stop the pod).
   */
  reason: 'CreateContainerConfigError' | 'FailedMount' | 'FailedToRetrieveImagePullSecret' | 'CreatePodSandboxError';
}

const keysOf = (o: { data?: Record<string, unknown>; binaryData?: Record<string, unknown> } | undefined) =>
  new Set([...Object.keys(o?.data ?? {}), ...Object.keys(o?.binaryData ?? {})]);

/**
 * Every ConfigMap, Secret or key the pod needs that the objects do not hold
 * and that is not optional: a pod with one of these (other than an image pull
 * secret) never starts, as on a cluster node until the object appears.
 */
export function missingReferences(pod: IPod, objects: ObjectLookup): MissingReference[] {
  const out: MissingReference[] = [];
  const ns = pod.metadata?.namespace ?? 'default';
  const spec = pod.spec;
  if (!spec) return out;
  if (spec.runtimeClassName && objects.runtimeClass && !objects.runtimeClass(spec.runtimeClassName)) {
    out.push({ field: 'spec.runtimeClassName', message: runtimeClassNotFound(spec.runtimeClassName), reason: 'CreatePodSandboxError' });
  }
  const containers = [
    ...(spec.initContainers ?? []).map((c, i) => [c, `spec.initContainers[${i}]`] as const),
    ...(spec.containers ?? []).map((c, i) => [c, `spec.containers[${i}]`] as const),
  ];
  for (const [c, path] of containers) {
    (c.envFrom ?? []).forEach((from, i) => {
      if (from.configMapRef?.name && !from.configMapRef.optional && !objects.configMap(ns, from.configMapRef.name)) {
        out.push({
          field: `${path}.envFrom[${i}].configMapRef`,
          message: `configmap "${from.configMapRef.name}" not found`,
          reason: 'CreateContainerConfigError',
        });
      }
      if (from.secretRef?.name && !from.secretRef.optional && !objects.secret(ns, from.secretRef.name)) {
        out.push({
          field: `${path}.envFrom[${i}].secretRef`,
          message: `secret "${from.secretRef.name}" not found`,
          reason: 'CreateContainerConfigError',
        });
      }
    });
    (c.env ?? []).forEach((e, i) => {
      const cm = e.valueFrom?.configMapKeyRef;
      if (cm?.name && !cm.optional) {
        const obj = objects.configMap(ns, cm.name);
        const field = `${path}.env[${i}].valueFrom.configMapKeyRef`;
        if (!obj) out.push({ field, message: `configmap "${cm.name}" not found`, reason: 'CreateContainerConfigError' });
        else if (!keysOf(obj).has(cm.key))
          out.push({ field, message: `couldn't find key ${cm.key} in ConfigMap ${ns}/${cm.name}`, reason: 'CreateContainerConfigError' });
      }
      const sec = e.valueFrom?.secretKeyRef;
      if (sec?.name && !sec.optional) {
        const obj = objects.secret(ns, sec.name);
        const field = `${path}.env[${i}].valueFrom.secretKeyRef`;
        if (!obj) out.push({ field, message: `secret "${sec.name}" not found`, reason: 'CreateContainerConfigError' });
        else if (!keysOf(obj).has(sec.key))
          out.push({ field, message: `couldn't find key ${sec.key} in Secret ${ns}/${sec.name}`, reason: 'CreateContainerConfigError' });
      }
    });
  }
  const volumeSource = (
    kind: 'configMap' | 'secret',
    name: string | undefined,
    optional: boolean | undefined,
    items: { key: string }[] | undefined,
    field: string,
    volume: string,
  ) => {
    if (!name || optional) return;
    const obj = kind === 'configMap' ? objects.configMap(ns, name) : objects.secret(ns, name);
    const mount = (detail: string) =>
      out.push({ field, message: `MountVolume.SetUp failed for volume "${volume}" : ${detail}`, reason: 'FailedMount' });
    if (!obj) return mount(`${kind === 'configMap' ? 'configmap' : 'secret'} "${name}" not found`);
    const keys = keysOf(obj);
    for (const item of items ?? []) {
      if (!keys.has(item.key))
        mount(
          kind === 'configMap'
            ? `configmap references non-existent config key: ${item.key}`
            : `references non-existent secret key: ${item.key}`,
        );
    }
  };
  (spec.volumes ?? []).forEach((v, i) => {
    const path = `spec.volumes[${i}]`;
    if (v.configMap) volumeSource('configMap', v.configMap.name, v.configMap.optional, v.configMap.items, `${path}.configMap`, v.name);
    if (v.secret) volumeSource('secret', v.secret.secretName, v.secret.optional, v.secret.items, `${path}.secret`, v.name);
    (v.projected?.sources ?? []).forEach((s, j) => {
      if (s.configMap)
        volumeSource(
          'configMap',
          s.configMap.name,
          s.configMap.optional,
          s.configMap.items,
          `${path}.projected.sources[${j}].configMap`,
          v.name,
        );
      if (s.secret)
        volumeSource('secret', s.secret.name, s.secret.optional, s.secret.items, `${path}.projected.sources[${j}].secret`, v.name);
    });
  });
  (spec.imagePullSecrets ?? []).forEach((ref, i) => {
    if (ref.name && !objects.secret(ns, ref.name)) {
      out.push({
        field: `spec.imagePullSecrets[${i}]`,
        message: `Unable to retrieve some image pull secrets (${ref.name}); attempting to pull the image may not succeed.`,
        reason: 'FailedToRetrieveImagePullSecret',
      });
    }
  });
  return out;
}

/**
 * The names of the ConfigMaps and Secrets of its namespace a pod spec uses: env, envFrom, volumes,
 * projected sources and imagePullSecrets. What goes with a pod wherever it is carried alone
 * (its applied file, a debug copy).
 */
export function referencedObjects(spec: IPodSpec): { configMaps: Set<string>; secrets: Set<string> } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
    for (const e of c.env ?? []) {
      if (e.valueFrom?.configMapKeyRef?.name) configMaps.add(e.valueFrom.configMapKeyRef.name);
      if (e.valueFrom?.secretKeyRef?.name) secrets.add(e.valueFrom.secretKeyRef.name);
    }
    for (const e of c.envFrom ?? []) {
      if (e.configMapRef?.name) configMaps.add(e.configMapRef.name);
      if (e.secretRef?.name) secrets.add(e.secretRef.name);
    }
  }
  for (const v of spec.volumes ?? []) {
    if (v.configMap?.name) configMaps.add(v.configMap.name);
    if (v.secret?.secretName) secrets.add(v.secret.secretName);
    for (const s of v.projected?.sources ?? []) {
      if (s.configMap?.name) configMaps.add(s.configMap.name);
      if (s.secret?.name) secrets.add(s.secret.name);
    }
  }
  for (const ref of spec.imagePullSecrets ?? []) if (ref.name) secrets.add(ref.name);
  return { configMaps, secrets };
}

/** The kubelet's words when a pod's RuntimeClass does not exist (its runtimeClassManager lookup). */
export function runtimeClassNotFound(name: string): string {
  return `failed to lookup RuntimeClass ${name}: runtimeclass.node.k8s.io "${name}" not found`;
}

/** A lookup over the documents of one manifest set. */
export function setLookup(configMaps: IConfigMap[], secrets: ISecret[], runtimeClasses: RuntimeClassRef[] = []): ObjectLookup {
  const classes = new Map(runtimeClasses.map((r) => [r.name, r]));
  const key = (o: { metadata?: { namespace?: string; name?: string } }) =>
    `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`;
  const cms = new Map(configMaps.map((c) => [key(c), c]));
  const secs = new Map(secrets.map((s) => [key(s), s]));
  return {
    configMap: (ns, name) => cms.get(`${ns}/${name}`),
    secret: (ns, name) => secs.get(`${ns}/${name}`),
    runtimeClass: (name) => classes.get(name),
  };
}
