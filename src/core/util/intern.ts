/**
 * One copy of each string that recurs in long-lived state. Every CRI answer decodes its strings
 * afresh, so a node's pod cache, PLEG records and statuses each held their own copy of the same
 * container IDs, image references, pod names and log paths: at 5,000 pods, about 18 MB of a 92 MB
 * heap were duplicate strings, which every full GC walks and the old space keeps pages for.
 *
 * The pool forgets what is no longer asked for: it keeps two generations, and a string asked for
 * in neither is dropped when the current one fills, so a churn of pods never grows it past twice
 * its generation. Interning is an optimisation only: any string is correct, a pooled one is
 * smaller.
 */
export class StringPool {
  private current = new Map<string, string>();
  private previous = new Map<string, string>();

  /**
   * @param generation strings per generation (at most twice this many kept)
   * @param maxLength longer strings are returned as they are (few recur, and each would pin its text)
   */
  constructor(
    private readonly generation = 65_536,
    private readonly maxLength = 4096,
  ) {}

  /** The pooled copy of `s` (s itself the first time). */
  intern<S extends string | undefined>(s: S): S {
    if (s === undefined || s.length === 0 || s.length > this.maxLength) return s;
    const hit = this.current.get(s);
    if (hit !== undefined) return hit as S;
    const pooled = this.previous.get(s) ?? s;
    if (this.current.size >= this.generation) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(pooled, pooled);
    return pooled as S;
  }

  /** The values of a string map, pooled in place (its keys are property names: V8 keeps one copy of those). */
  internValues(record: Record<string, string>): Record<string, string> {
    for (const k in record) record[k] = this.intern(record[k]!);
    return record;
  }

  /** Strings held now (tests). */
  get size(): number {
    let n = this.current.size;
    for (const k of this.previous.keys()) if (!this.current.has(k)) n++;
    return n;
  }
}

/** The process's pool: strings from the runtime and the pods that the node keeps. */
export const strings = new StringPool();

/** Shorthand for strings.intern. */
export function intern<S extends string | undefined>(s: S): S {
  return strings.intern(s);
}

/**
 * Every string in a tree of plain objects and arrays, pooled in place (a loaded pod: pods from one
 * manifest share their images, commands and names). Returns the tree.
 */
export function internDeep<T>(tree: T): T {
  if (Array.isArray(tree)) {
    for (let i = 0; i < tree.length; i++) {
      const v: unknown = tree[i];
      if (typeof v === 'string') tree[i] = strings.intern(v);
      else if (v !== null && typeof v === 'object') internDeep(v);
    }
  } else if (tree !== null && typeof tree === 'object') {
    const o = tree as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const v = o[k];
      if (typeof v === 'string') o[k] = strings.intern(v);
      else if (v !== null && typeof v === 'object') internDeep(v);
    }
  }
  return tree;
}
