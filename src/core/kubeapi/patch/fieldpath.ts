/**
 * Field sets as server-side apply tracks ownership (structured-merge-diff's fieldpath.Set), and their FieldsV1
 * form in metadata.managedFields: `f:<field>` for a map key, `k:{<json of the keys>}` for an item of a list-map,
 * `v:<json>` for an item of a set, `.` for the element itself when it also has children. Atomic lists are owned
 * as a whole. Without a schema, every non-empty object is walked as a struct: its fields are owned one by one.
 */

/** What the schema says of the list at a path (x-kubernetes-list-type, -list-map-keys); keyDefaults are key fields' defaults. */
export interface ListSemantics {
  listType?: 'atomic' | 'set' | 'map';
  mapKeys?: string[];
  keyDefaults?: Record<string, unknown>;
}
/** The list semantics at a path of field names from the object root, list items as '*' (['spec', 'containers', '*', 'env']). */
export type ListInfo = (path: string[]) => ListSemantics | undefined;

/** One step of a path as FieldsV1 spells it: `f:name`, `k:{"name":"app"}`, `v:"x"`, `i:0`. */
export type PathElement = string;
export type FieldPath = readonly PathElement[];

type Obj = Record<string, unknown>;
export const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON with object keys sorted, as Go encodes a map (FieldsV1 keys, last-applied-configuration). */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (isObject(v))
    return `{${Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v ?? null);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => b[k] !== undefined && deepEqual(a[k], b[k]));
  }
  return false;
}

export const fieldElement = (name: string): PathElement => `f:${name}`;
export const keyElement = (key: Obj): PathElement => `k:${stableJson(key)}`;
export const valueElement = (value: unknown): PathElement => `v:${stableJson(value)}`;

const RANK: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };

function compareValues(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  const ja = stableJson(a);
  const jb = stableJson(b);
  return ja < jb ? -1 : ja > jb ? 1 : 0;
}

/** structured-merge-diff's PathElement order: fields, then keys, values and indexes; keys field by field. */
export function compareElements(a: PathElement, b: PathElement): number {
  const ra = RANK[a[0]!]!;
  const rb = RANK[b[0]!]!;
  if (ra !== rb) return ra - rb;
  const sa = a.slice(2);
  const sb = b.slice(2);
  if (a[0] === 'f') return sa < sb ? -1 : sa > sb ? 1 : 0;
  if (a[0] === 'i') return Number(sa) - Number(sb);
  if (a[0] === 'v') return compareValues(JSON.parse(sa), JSON.parse(sb));
  const ka = JSON.parse(sa) as Obj;
  const kb = JSON.parse(sb) as Obj;
  const na = Object.keys(ka).sort();
  const nb = Object.keys(kb).sort();
  for (let i = 0; i < Math.min(na.length, nb.length); i++) {
    if (na[i] !== nb[i]) return na[i]! < nb[i]! ? -1 : 1;
    const c = compareValues(ka[na[i]!], kb[nb[i]!]);
    if (c !== 0) return c;
  }
  return na.length - nb.length;
}

/** A path as the API server prints it in conflicts: `.spec.containers[name="app"].image`, `[containerPort=80,protocol="TCP"]`. */
export function pathString(path: FieldPath): string {
  return path
    .map((pe) => {
      const rest = pe.slice(2);
      if (pe.startsWith('f:')) return `.${rest}`;
      if (pe.startsWith('i:')) return `[${rest}]`;
      if (pe.startsWith('v:')) return `[=${rest}]`;
      const key = JSON.parse(rest) as Obj;
      return `[${Object.keys(key)
        .sort()
        .map((k) => `${k}=${stableJson(key[k])}`)
        .join(',')}]`;
    })
    .join('');
}

interface Node {
  member: boolean;
  children: Map<PathElement, Node>;
}
const newNode = (): Node => ({ member: false, children: new Map() });

export class FieldSet {
  private readonly root = newNode();

  static of(paths: Iterable<FieldPath>): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  insert(path: FieldPath): void {
    let n = this.root;
    for (const pe of path) {
      let c = n.children.get(pe);
      if (!c) n.children.set(pe, (c = newNode()));
      n = c;
    }
    n.member = true;
  }

  private node(path: FieldPath): Node | undefined {
    let n: Node | undefined = this.root;
    for (const pe of path) n = n?.children.get(pe);
    return n;
  }

  has(path: FieldPath): boolean {
    return this.node(path)?.member === true;
  }

  /** Whether some member lies strictly under path. */
  hasUnder(path: FieldPath): boolean {
    const n = this.node(path);
    return n !== undefined && [...n.children.values()].some((c) => c.member || c.children.size > 0);
  }

  /** Every member, in structured-merge-diff's order. */
  paths(): PathElement[][] {
    const out: PathElement[][] = [];
    const walk = (n: Node, prefix: PathElement[]) => {
      if (n.member && prefix.length > 0) out.push(prefix);
      for (const pe of [...n.children.keys()].sort(compareElements)) walk(n.children.get(pe)!, [...prefix, pe]);
    };
    walk(this.root, []);
    return out;
  }

  empty(): boolean {
    return this.paths().length === 0;
  }

  filter(keep: (path: FieldPath) => boolean): FieldSet {
    return FieldSet.of(this.paths().filter(keep));
  }
  union(o: FieldSet): FieldSet {
    return FieldSet.of([...this.paths(), ...o.paths()]);
  }
  difference(o: FieldSet): FieldSet {
    return this.filter((p) => !o.has(p));
  }
  intersection(o: FieldSet): FieldSet {
    return this.filter((p) => o.has(p));
  }

  toFieldsV1(): Obj {
    const enc = (n: Node): Obj => {
      const out: Obj = {};
      if (n.member && n.children.size > 0) out['.'] = {};
      for (const pe of [...n.children.keys()].sort(compareElements)) out[pe] = enc(n.children.get(pe)!);
      return out;
    };
    return enc(this.root);
  }

  /** Reads a FieldsV1 object; throws an Error naming what is wrong with it. */
  static fromFieldsV1(v: unknown): FieldSet {
    const s = new FieldSet();
    const dec = (o: unknown, prefix: PathElement[]) => {
      if (!isObject(o)) throw new Error(`FieldsV1 at ${pathString(prefix) || '.'} is not an object`);
      const keys = Object.keys(o);
      if (keys.length === 0 && prefix.length > 0) s.insert(prefix);
      for (const k of keys) {
        if (k === '.') {
          if (prefix.length > 0) s.insert(prefix);
          continue;
        }
        if (!/^[fkvi]:/.test(k)) throw new Error(`FieldsV1 key ${JSON.stringify(k)} is not f:, k:, v: or i:`);
        if (k.startsWith('k:') || k.startsWith('v:')) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(k.slice(2));
          } catch {
            throw new Error(`FieldsV1 key ${JSON.stringify(k)} does not hold JSON`);
          }
          if (k.startsWith('k:') && !isObject(parsed)) throw new Error(`FieldsV1 key ${JSON.stringify(k)} is not a JSON object`);
        }
        if (k.startsWith('i:') && !/^i:\d+$/.test(k)) throw new Error(`FieldsV1 key ${JSON.stringify(k)} is not an index`);
        dec(o[k], [...prefix, k]);
      }
    };
    dec(v, []);
    return s;
  }
}

/** An error at a path of the walked object, worded as structured-merge-diff words it. */
export class FieldPathError extends Error {}

function semanticsAt(listInfo: ListInfo, spath: string[]): ListSemantics {
  const info = listInfo(spath);
  if (!info || info.listType === undefined || info.listType === 'atomic') return { listType: 'atomic' };
  if (info.listType === 'map' && !info.mapKeys?.length) return { listType: 'atomic' };
  return info;
}

/** The path element of one item of a set or list-map. */
export function itemElement(item: unknown, index: number, sem: ListSemantics, path: FieldPath): PathElement {
  if (sem.listType === 'set') return valueElement(item);
  const where = `${pathString(path)}: element ${index}`;
  if (!isObject(item)) throw new FieldPathError(`${where}: associative list with keys may not have non-map elements`);
  const key: Obj = {};
  for (const k of sem.mapKeys!) {
    if (item[k] !== undefined && item[k] !== null) key[k] = item[k];
    else if (sem.keyDefaults && k in sem.keyDefaults) key[k] = sem.keyDefaults[k];
    else
      throw new FieldPathError(
        `${where}: associative list with keys has an element that omits key field ${JSON.stringify(k)} (and doesn't have default value)`,
      );
  }
  return keyElement(key);
}

/** The items of a set or list-map by element; with strict, a repeated key is an error (as in an applied configuration). */
export function indexItems(list: unknown[], sem: ListSemantics, path: FieldPath, strict: boolean): Map<PathElement, unknown> {
  const out = new Map<PathElement, unknown>();
  list.forEach((item, i) => {
    const pe = itemElement(item, i, sem, path);
    if (out.has(pe)) {
      if (strict) throw new FieldPathError(`${pathString(path)}: duplicate entries for key ${pathString([pe])}`);
      return;
    }
    out.set(pe, item);
  });
  return out;
}

export class Walker {
  constructor(
    readonly listInfo: ListInfo,
    readonly strict = false,
  ) {}

  semantics(spath: string[]): ListSemantics {
    return semanticsAt(this.listInfo, spath);
  }

  /** Inserts into set the fields that value at path consists of (structured-merge-diff's ToFieldSet). */
  collect(value: unknown, path: PathElement[], spath: string[], set: FieldSet): void {
    if (Array.isArray(value)) {
      const sem = this.semantics(spath);
      if (sem.listType === 'atomic') return set.insert(path);
      for (const [pe, item] of indexItems(value, sem, path, this.strict)) {
        set.insert([...path, pe]);
        if (isObject(item)) this.collectFields(item, [...path, pe], [...spath, '*'], set);
      }
    } else if (isObject(value) && Object.values(value).some((v) => v !== undefined)) {
      this.collectFields(value, path, spath, set);
    } else {
      set.insert(path);
    }
  }

  collectFields(obj: Obj, path: PathElement[], spath: string[], set: FieldSet): void {
    for (const [k, v] of Object.entries(obj)) if (v !== undefined) this.collect(v, [...path, fieldElement(k)], [...spath, k], set);
  }

  /** The fields added, modified and removed from lhs to rhs (structured-merge-diff's Compare). */
  compare(lhs: Obj, rhs: Obj): Comparison {
    const c: Comparison = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
    this.compareFields(lhs, rhs, [], [], c);
    return c;
  }

  private compareFields(l: Obj, r: Obj, path: PathElement[], spath: string[], c: Comparison): void {
    for (const k of new Set([...Object.keys(l), ...Object.keys(r)]))
      this.compareValue(l[k], r[k], [...path, fieldElement(k)], [...spath, k], c);
  }

  private compareValue(l: unknown, r: unknown, path: PathElement[], spath: string[], c: Comparison): void {
    if (l === undefined && r === undefined) return;
    if (l === undefined) return this.collect(r, path, spath, c.added);
    if (r === undefined) return this.collect(l, path, spath, c.removed);
    if (isObject(l) && isObject(r) && Object.keys(l).length > 0 && Object.keys(r).length > 0)
      return this.compareFields(l, r, path, spath, c);
    if (Array.isArray(l) && Array.isArray(r) && this.semantics(spath).listType !== 'atomic') {
      const sem = this.semantics(spath);
      const li = indexItems(l, sem, path, false);
      const ri = indexItems(r, sem, path, false);
      for (const pe of new Set([...li.keys(), ...ri.keys()])) {
        const ip = [...path, pe];
        const a = li.get(pe);
        const b = ri.get(pe);
        if (!li.has(pe) || !ri.has(pe)) {
          const into = li.has(pe) ? c.removed : c.added;
          into.insert(ip);
          const item = li.has(pe) ? a : b;
          if (isObject(item)) this.collectFields(item, ip, [...spath, '*'], into);
        } else if (isObject(a) && isObject(b)) this.compareFields(a, b, ip, [...spath, '*'], c);
        else if (!deepEqual(a, b)) c.modified.insert(ip);
      }
      return;
    }
    if (deepEqual(l, r)) return;
    const leaf = (v: unknown) => !isObject(v) || Object.keys(v).length === 0;
    if (leaf(l) && leaf(r) && Array.isArray(l) === Array.isArray(r)) return c.modified.insert(path);
    this.collect(l, path, spath, c.removed);
    this.collect(r, path, spath, c.added);
  }
}

export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

export const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

/** structured-merge-diff's merge of an applied configuration into the live object. */
export function mergeValue(l: unknown, r: unknown, path: PathElement[], spath: string[], walker: Walker): unknown {
  if (r === undefined) return l;
  if (isObject(l) && isObject(r)) {
    const out: Obj = { ...l };
    for (const [k, v] of Object.entries(r)) {
      if (v === null) delete out[k];
      else if (v !== undefined) out[k] = mergeValue(l[k], v, [...path, `f:${k}`], [...spath, k], walker);
    }
    return out;
  }
  const sem = walker.semantics(spath);
  if (Array.isArray(l) && Array.isArray(r) && sem.listType !== 'atomic') return mergeList(l, r, sem, path, spath, walker);
  return clone(r);
}

/** structured-merge-diff's list merge: shared items in the configuration's order, live-only items where they were. */
function mergeList(l: unknown[], r: unknown[], sem: ListSemantics, path: PathElement[], spath: string[], walker: Walker): unknown[] {
  const lhs = [...indexItems(l, sem, path, false)];
  const lhsByPe = new Map(lhs);
  const rhs = [...indexItems(r, sem, path, true)];
  const rhsByPe = new Map(rhs);
  const shared = rhs.map(([pe]) => pe).filter((pe) => lhsByPe.has(pe));
  let next = shared.shift();
  const done = new Set<PathElement>();
  const out: unknown[] = [];
  const merge = (pe: PathElement) =>
    out.push(
      !lhsByPe.has(pe)
        ? clone(rhsByPe.get(pe))
        : sem.listType === 'set'
          ? rhsByPe.get(pe)
          : mergeValue(lhsByPe.get(pe), rhsByPe.get(pe), [...path, pe], [...spath, '*'], walker),
    );
  let li = 0;
  let ri = 0;
  while (li < lhs.length || ri < rhs.length) {
    if (li < lhs.length && ri < rhs.length) {
      const pe = lhs[li]![0];
      if (pe === rhs[ri]![0]) {
        done.add(pe);
        merge(pe);
        li++;
        ri++;
        next = shared.shift();
        continue;
      }
      if (rhsByPe.has(pe) && next !== undefined && next !== pe) {
        li++; // a shared item, not the one due now
        continue;
      }
    }
    if (li < lhs.length) {
      const [pe, item] = lhs[li]!;
      if (!rhsByPe.has(pe) || done.has(pe)) {
        if (!rhsByPe.has(pe)) out.push(item);
        li++;
        continue;
      }
    }
    if (ri < rhs.length) {
      const pe = rhs[ri]![0];
      done.add(pe);
      merge(pe);
      ri++;
      if (next === pe) next = shared.shift();
    }
  }
  return out;
}

/** Removes the field or list item at path from obj, if it is there. */
export function removePath(obj: Obj, path: FieldPath, walker: Walker): void {
  let cur: unknown = obj;
  const spath: string[] = [];
  for (let i = 0; i < path.length; i++) {
    const pe = path[i]!;
    const last = i === path.length - 1;
    if (pe.startsWith('f:')) {
      if (!isObject(cur)) return;
      const k = pe.slice(2);
      if (last) delete cur[k];
      cur = cur[k];
      spath.push(k);
    } else {
      if (!Array.isArray(cur)) return;
      const list: unknown[] = cur;
      const index = [...indexItems(list, walker.semantics(spath), path.slice(0, i), false).entries()];
      const hit = index.find(([p]) => p === pe);
      if (!hit) return;
      const at = list.indexOf(hit[1]);
      if (last) list.splice(at, 1);
      cur = list[at];
      spath.push('*');
    }
  }
}

/** A list item's key field stays while the item does. */
export function isKeyField(path: FieldPath): boolean {
  const parent = path[path.length - 2];
  const last = path[path.length - 1]!;
  return parent !== undefined && parent.startsWith('k:') && last.slice(2) in (JSON.parse(parent.slice(2)) as Obj);
}
