import type { IConfigMap, ISecret } from 'kubernetes-models/v1';
import type { VolumeObjects } from './types.js';

/**
 * VolumeObjects over the ConfigMaps and Secrets of a manifest set (a ManifestSet has both arrays), by namespace
 * and name; a document without a namespace is in "default", as the API server would put it. A later document
 * with the same name wins.
 */
export function volumeObjectsFrom(set: { configMaps: IConfigMap[]; secrets: ISecret[] }): VolumeObjects {
  const key = (namespace: string | undefined, name: string | undefined) => `${namespace || 'default'}/${name ?? ''}`;
  const configMaps = new Map(set.configMaps.map((c) => [key(c.metadata?.namespace, c.metadata?.name), c]));
  const secrets = new Map(set.secrets.map((s) => [key(s.metadata?.namespace, s.metadata?.name), s]));
  return {
    configMap: (namespace, name) => configMaps.get(key(namespace, name)),
    secret: (namespace, name) => secrets.get(key(namespace, name)),
  };
}
