import { checkFieldRef, checkResourceFieldRef, VOLUME_FIELD_PATHS } from './field-refs.js';
import { isObject } from './schema.js';

/** The API server's validateLocalDescendingPath: relative, and no '..' element. */
export function descendingPathProblem(p: unknown): string | undefined {
  if (typeof p !== 'string' || p === '') return undefined;
  if (p.includes('\0')) return `${JSON.stringify(p)} is invalid; must not contain a NUL byte`;
  if (p.startsWith('/')) return `${JSON.stringify(p)} is invalid; must be a relative path`;
  if (p.split('/').includes('..')) return `${JSON.stringify(p)} is invalid; must not contain '..'`;
  return undefined;
}

/** The API server's validateLocalNonReservedPath, for items[].path: also never starting with '..' (AtomicWriter's own names). */
function itemPathProblem(p: unknown): string | undefined {
  if (typeof p !== 'string') return undefined;
  if (p === '') return 'required; expected a relative file path';
  return descendingPathProblem(p) ?? (p.startsWith('..') ? `${JSON.stringify(p)} is invalid; must not start with '..'` : undefined);
}

/** items[].path of configMap, secret and downwardAPI volumes, and of each projected source. */
export function checkItemPaths(volume: Record<string, unknown>, path: string, err: (field: string, message: string) => void): void {
  const items = (source: unknown, at: string) => {
    if (!isObject(source)) return;
    const list = (source as { items?: unknown }).items;
    (Array.isArray(list) ? list : []).forEach((item: unknown, k: number) => {
      if (!isObject(item)) return;
      const problem = itemPathProblem((item as { path?: unknown }).path);
      if (problem) err(`${at}.items[${k}].path`, problem);
      if (!at.endsWith('.downwardAPI')) return;
      checkFieldRef((item as { fieldRef?: unknown }).fieldRef, `${at}.items[${k}].fieldRef`, VOLUME_FIELD_PATHS, err);
      checkResourceFieldRef((item as { resourceFieldRef?: unknown }).resourceFieldRef, `${at}.items[${k}].resourceFieldRef`, true, err);
    });
  };
  for (const kind of ['configMap', 'secret', 'downwardAPI'] as const) items(volume[kind], `${path}.${kind}`);
  const sources = (volume.projected as { sources?: unknown } | undefined)?.sources;
  (Array.isArray(sources) ? sources : []).forEach((src: unknown, j: number) => {
    if (!isObject(src)) return;
    for (const kind of ['configMap', 'secret', 'downwardAPI'] as const)
      items((src as Record<string, unknown>)[kind], `${path}.projected.sources[${j}].${kind}`);
  });
}
