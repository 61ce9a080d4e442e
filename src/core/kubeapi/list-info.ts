import { patchMetaAt } from './openapi/index.js';
import type { ListInfo, ListSemantics } from './patch/fieldpath.js';

/**
 * The key fields the API server defaults before server-side apply sees an item (SetDefaults_ContainerPort:
 * protocol TCP), so that a port written without one still has its whole key.
 */
const KEY_DEFAULTS: Record<string, unknown> = { protocol: 'TCP' };

/** The OpenAPI's list semantics under a kind's schema, for server-side apply: path from the object's root, list items as '*'. */
export function listInfoFor(schema: string): ListInfo {
  const cache = new Map<string, ListSemantics | undefined>();
  return (path) => {
    const key = path.join('.');
    if (cache.has(key)) return cache.get(key);
    const meta = patchMetaAt(
      schema,
      path.filter((p) => p !== '*'),
    );
    let info: ListSemantics | undefined;
    if (meta) {
      const listType = meta.listType as ListSemantics['listType'];
      const mapKeys = meta.listMapKeys ?? (meta.mergeKey ? [meta.mergeKey] : undefined);
      const defaults = Object.fromEntries((mapKeys ?? []).filter((k) => k in KEY_DEFAULTS).map((k) => [k, KEY_DEFAULTS[k]]));
      info = {
        ...(listType ? { listType } : {}),
        ...(listType === 'map' && mapKeys ? { mapKeys, ...(Object.keys(defaults).length ? { keyDefaults: defaults } : {}) } : {}),
      };
    }
    cache.set(key, info);
    return info;
  };
}
