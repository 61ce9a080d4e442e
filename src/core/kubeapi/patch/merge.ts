/**
 * The JSON merge patch (RFC 7386, application/merge-patch+json): an object patch merges into an object, key by
 * key, a null deleting its key; any other patch value, arrays included, replaces what it patches.
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Applies `patch` to `original` (neither is changed) and returns the patched document. */
export function jsonMergePatch(original: unknown, patch: unknown): unknown {
  return mergeInto(structuredClone(original), patch);
}

function mergeInto(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const into = isObject(target) ? target : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete into[key];
    else into[key] = mergeInto(Object.hasOwn(into, key) ? into[key] : undefined, value);
  }
  return into;
}
