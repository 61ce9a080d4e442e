/**
 * The strategic merge patch (application/strategic-merge-patch+json) as the API server applies it
 * (apimachinery's strategicpatch.StrategicMergeMapPatch, with MergeParallelList and IgnoreUnmatchedNulls): maps
 * merge and a null deletes; a list whose field has patch strategy merge merges its elements by the patch merge
 * key (lists of scalars: a union, less the $deleteFromPrimitiveList/<field> entries); every other list, and every
 * scalar, is replaced. The directives: $patch (replace or delete, in a map or a list element), $retainKeys and
 * $setElementOrder/<field>. Strategies and merge keys come from the OpenAPI's x-kubernetes-patch-* (the API
 * server takes the same from its Go struct tags); a field the schema does not know merges as a plain map.
 *
 * Where the API server has no answer but Go's own behaviour (a deletion list for an absent field, a
 * $setElementOrder on a replaced list), the result is the one a typed decode of its output would give.
 */
import { fieldSchema, patchMetaOf, resolve, type Schema } from '../openapi/index.js';
import { badRequest, goFormat, goString, goType, unknownError, unprocessable } from './errors.js';

type JsonMap = { [key: string]: unknown };

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList';
const SET_ELEMENT_ORDER = '$setElementOrder';

const isMap = (v: unknown): v is JsonMap => typeof v === 'object' && v !== null && !Array.isArray(v);
const kindOf = (v: unknown): string => (Array.isArray(v) ? 'list' : isMap(v) ? 'map' : v === null ? 'null' : typeof v);

const errBadArgType = (expected: string, actual: unknown) => unknownError(`expected a ${expected}, but received a ${goType(actual)}`);
const errNoMergeKey = (m: unknown, key: string) => unknownError(`map: ${goFormat(m)} does not contain declared merge key: ${key}`);
const errBadPatchType = (t: unknown, m: JsonMap) => unknownError(`unknown patch type: ${goString(t)} in map: ${goFormat(m)}`);
const errBadRetainKeys = () => badRequest('invalid patch format of retainKeys');

/**
 * Applies `patch` to `original` for the kind whose OpenAPI definition is `schema` (io.k8s.api.core.v1.Pod).
 * Neither argument is changed. A patch the API server refuses throws the KubeStatusError it answers with.
 */
export function strategicMergePatch(original: object, patch: object, schema: string): JsonMap {
  const root = resolve(schema);
  if (!root) throw new Error(`strategicMergePatch: no OpenAPI definition ${schema}`);
  if (!isMap(patch))
    throw badRequest(
      `json: cannot unmarshal ${Array.isArray(patch) ? 'array' : typeof patch} into Go value of type map[string]interface {}`,
    );
  if (!isMap(original)) throw new Error('strategicMergePatch: the original object must be a JSON object');
  return mergeMap(structuredClone(original), structuredClone(patch), root);
}

interface Field {
  schema?: Schema;
  /** The strategy less retainKeys: 'merge', 'replace' or '' (maps merge, lists are replaced). */
  strategy: string;
  mergeKey: string;
}

function fieldOf(node: Schema | undefined, key: string): Field {
  const schema = fieldSchema(node, key);
  if (!schema) return { strategy: '', mergeKey: '' };
  const meta = patchMetaOf(schema);
  const others = meta.strategies.filter((s) => s !== 'retainKeys');
  if (others.length > 1 || meta.strategies.length > 2) throw unknownError(`unexpected patch strategy: ${goFormat(meta.strategies)}`);
  return { schema: meta.schema, strategy: others[0] ?? '', mergeKey: meta.mergeKey ?? '' };
}

const itemsOf = (field: Field): Schema | undefined => resolve(field.schema?.items);

/** Both arguments are this patch's own copies, which it changes. */
function mergeMap(original: JsonMap, patch: JsonMap, node: Schema | undefined): JsonMap {
  if (Object.hasOwn(patch, DIRECTIVE)) {
    const directive = patch[DIRECTIVE];
    if (directive === 'delete') return {};
    if (directive !== 'replace') throw errBadPatchType(directive, patch);
    delete patch[DIRECTIVE];
    return mergeMap({}, patch, node);
  }
  applyRetainKeys(original, patch);
  applySetElementOrder(original, patch, node);

  const deletions: [string, unknown][] = [];
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      deletions.push([extractKey(key, DELETE_FROM_PRIMITIVE_LIST), value]);
      continue;
    }
    if (value === null) {
      delete original[key];
      continue;
    }
    const field = fieldOf(node, key);
    const current = original[key];
    if (!Object.hasOwn(original, key) || kindOf(current) !== kindOf(value)) {
      original[key] = fresh(value, field);
    } else if (isMap(current)) {
      original[key] = field.strategy === 'replace' ? fresh(value, field) : mergeMap(current, value as JsonMap, resolve(field.schema));
    } else if (Array.isArray(current)) {
      original[key] =
        field.strategy === 'merge' ? mergeSlice(current, value as unknown[], itemsOf(field), field.mergeKey, false) : fresh(value, field);
    } else {
      original[key] = value;
    }
  }
  // After the additions, so that a field both added to and deleted from ends the same whatever the key order.
  for (const [key, value] of deletions) {
    if (value === null) {
      delete original[key];
      continue;
    }
    if (!Array.isArray(value)) throw errBadArgType('[]interface {}', value);
    const current = original[key];
    if (current === undefined) continue;
    if (!Array.isArray(current)) throw errBadArgType('[]interface {}', current);
    const field = fieldOf(node, key);
    if (field.strategy === 'merge') original[key] = mergeSlice(current, value, itemsOf(field), field.mergeKey, true);
  }
  return original;
}

/** A patch value for a field the original lacks (or of another type): its directives applied to nothing. */
function fresh(value: unknown, field: Field): unknown {
  if (isMap(value)) return mergeMap({}, value, resolve(field.schema));
  if (!Array.isArray(value)) return value;
  if (field.strategy === 'merge') return mergeSlice([], value, itemsOf(field), field.mergeKey, false);
  const items = itemsOf(field);
  return value.map((v) => (isMap(v) ? mergeMap({}, v, items) : v));
}

function extractKey(key: string, prefix: string): string {
  const slash = key.indexOf('/');
  if (slash < 0 || key.slice(0, slash) !== prefix) {
    throw badRequest(
      prefix === DELETE_FROM_PRIMITIVE_LIST ? 'invalid patch format of primitive list' : 'invalid patch format of setElementOrder list',
    );
  }
  return key.slice(slash + 1);
}

function applyRetainKeys(original: JsonMap, patch: JsonMap): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const list = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(list)) throw errBadRetainKeys();
  const keep = new Set(list);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || key.startsWith(DELETE_FROM_PRIMITIVE_LIST) || key.startsWith(SET_ELEMENT_ORDER)) continue;
    if (!keep.has(key)) throw errBadRetainKeys();
  }
  for (const key of Object.keys(original)) if (!keep.has(key)) delete original[key];
}

/** $setElementOrder/<field>: merges that list now and orders it: the directive's order, then the patch's, then the live one. */
function applySetElementOrder(original: JsonMap, patch: JsonMap, node: Schema | undefined): void {
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER)) continue;
    const order = patch[key];
    delete patch[key];
    if (!Array.isArray(order)) throw errBadArgType('[]interface {}', order);
    const name = extractKey(key, SET_ELEMENT_ORDER);
    const inOriginal = Object.hasOwn(original, name);
    const inPatch = Object.hasOwn(patch, name);
    const originalList = original[name];
    const patchList = patch[name];
    if (inOriginal && !Array.isArray(originalList)) throw errBadArgType('[]interface {}', originalList);
    if (inPatch && !Array.isArray(patchList)) throw errBadArgType('[]interface {}', patchList);
    const field = fieldOf(node, name);
    validateWithSetOrderList((patchList as unknown[] | undefined) ?? [], order, field.mergeKey);
    if (!inOriginal && !inPatch) continue;
    delete patch[name];
    if (field.strategy !== 'merge') {
      // A replaced list takes the patch's as it comes (the API server has no order to give it).
      original[name] = inPatch ? fresh(patchList, field) : originalList;
      continue;
    }
    const before = (originalList as unknown[] | undefined) ?? [];
    const live: { view?: unknown[] } = {};
    const merged = inPatch ? mergeSlice(before, patchList as unknown[], itemsOf(field), field.mergeKey, false, live) : before;
    const kind = elementKind([before, (patchList as unknown[] | undefined) ?? []]);
    const [patchItems, serverOnly] = field.mergeKey ? partitionMaps(merged, order, field.mergeKey) : partitionScalars(merged, order);
    original[name] = normalizeElementOrder(patchItems, serverOnly, order, live.view ?? before, field.mergeKey, kind);
  }
}

function validateWithSetOrderList(patchList: unknown[], order: unknown[], mergeKey: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  const kept = mergeKey ? splitDeletions(patchList)[0] : patchList;
  let p = 0;
  let o = 0;
  while (p < kept.length && o < order.length) {
    if (isMap(kept[p]) && Object.hasOwn(kept[p] as JsonMap, DIRECTIVE)) {
      p++;
      continue;
    }
    if (mergeKeyValueEqual(kept[p], order[o], mergeKey)) p++;
    o++;
  }
  if (p < kept.length && o >= order.length) {
    throw unknownError(`The order in patch list:\n${goFormat(patchList)}\n doesn't match ${SET_ELEMENT_ORDER} list:\n${goFormat(order)}\n`);
  }
}

function mergeKeyValueEqual(left: unknown, right: unknown, mergeKey: string): boolean {
  if (!mergeKey) return left === right;
  if (!isMap(left)) throw errBadArgType('map[string]interface {}', left);
  if (!isMap(right)) throw errBadArgType('map[string]interface {}', right);
  if (!Object.hasOwn(left, mergeKey)) throw errNoMergeKey(left, mergeKey);
  if (!Object.hasOwn(right, mergeKey)) throw errNoMergeKey(right, mergeKey);
  return left[mergeKey] === right[mergeKey];
}

/** The elements' one kind ('map', 'string', …); lists of lists and mixed lists are refused. */
function elementKind(lists: unknown[][]): string {
  let kind: string | undefined;
  for (const list of lists)
    for (const v of list) {
      const k = kindOf(v);
      if (kind === undefined) {
        // As Go's sliceElementType: the first element's kind, which may not be a list; every other must match it.
        if (k === 'list') throw unprocessable();
        kind = k;
      } else if (kind !== k) throw unknownError(`list element types are not identical: ${goFormat(lists)}`);
    }
  if (kind === undefined) throw unknownError('no elements in any of the given slices');
  return kind;
}

/**
 * Merges two lists of one field. `live`, when given, receives what the API server's later ordering of a
 * $setElementOrder list reads as the live list: Go's view of the live list's array after the deletions shifted
 * it and the additions were appended into it, which is not the live list, nor the merged one.
 */
function mergeSlice(
  original: unknown[],
  patch: unknown[],
  items: Schema | undefined,
  mergeKey: string,
  isDeleteList: boolean,
  live?: { view?: unknown[] },
): unknown[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = elementKind([original, patch]);
  if (kind !== 'map') {
    if (isDeleteList) return original.filter((v) => !patch.includes(v));
    const merged = [...new Set([...original, ...patch])];
    const [patchItems, serverOnly] = partitionScalars(merged, patch);
    return normalizeElementOrder(patchItems, serverOnly, patch, original, mergeKey, kind);
  }
  if (!mergeKey) throw unknownError('cannot merge lists without merge key for type struct');
  const sameKey = (a: unknown, b: JsonMap) => isMap(a) && Object.hasOwn(a, mergeKey) && a[mergeKey] === b[mergeKey];

  // $patch elements first: delete drops every element of that key, replace makes the rest of the patch the list.
  const view = original.slice();
  let length = view.length;
  const plain: JsonMap[] = [];
  let replace = false;
  for (const element of patch as JsonMap[]) {
    if (!Object.hasOwn(element, DIRECTIVE)) {
      plain.push(element);
      continue;
    }
    const directive = element[DIRECTIVE];
    if (directive === 'delete') {
      if (!Object.hasOwn(element, mergeKey)) throw errNoMergeKey(element, mergeKey);
      for (;;) {
        const i = view.findIndex((o, at) => at < length && sameKey(o, element));
        if (i < 0) break;
        view.copyWithin(i, i + 1, length);
        length--;
      }
    } else if (directive === 'replace') {
      replace = true;
    } else if (directive === 'merge') {
      throw unknownError('merging lists cannot yet be specified in the patch');
    } else {
      throw errBadPatchType(directive, element);
    }
  }
  if (live) live.view = view;
  if (replace) {
    const replaced = plain.map((e) => mergeMap({}, e, items));
    return normalizeElementOrder([], replaced, [], replaced, mergeKey, kind);
  }
  const base = view.slice(0, length);
  const merged = base.slice();
  for (const element of plain) {
    if (!Object.hasOwn(element, mergeKey)) throw errNoMergeKey(element, mergeKey);
    const i = merged.findIndex((m) => sameKey(m, element));
    const value = i >= 0 ? mergeMap(merged[i] as JsonMap, element, items) : mergeMap({}, element, items);
    const at = i >= 0 ? i : merged.length;
    merged[at] = value;
    if (at < view.length) view[at] = value;
  }
  const [patchItems, serverOnly] = partitionMaps(merged, plain, mergeKey);
  return normalizeElementOrder(patchItems, serverOnly, plain, base, mergeKey, kind);
}

function splitDeletions(list: unknown[]): [unknown[], unknown[]] {
  const kept: unknown[] = [];
  const deleted: unknown[] = [];
  for (const v of list) {
    if (!isMap(v)) throw errBadArgType('map[string]interface {}', v);
    (v[DIRECTIVE] === 'delete' ? deleted : kept).push(v);
  }
  return [kept, deleted];
}

function partitionScalars(list: unknown[], by: unknown[]): [unknown[], unknown[]] {
  const present = new Set(by);
  return [list.filter((v) => present.has(v)), list.filter((v) => !present.has(v))];
}

function partitionMaps(list: unknown[], by: unknown[], mergeKey: string): [unknown[], unknown[]] {
  const inPatch: unknown[] = [];
  const serverOnly: unknown[] = [];
  for (const v of list) {
    if (!isMap(v)) throw errBadArgType('map[string]interface {}', v);
    if (!Object.hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
    const found = by.some((b, i) => {
      if (!isMap(b)) throw unknownError(`value for key ${i} is not a map.`);
      return Object.hasOwn(b, mergeKey) && b[mergeKey] === v[mergeKey];
    });
    (found ? inPatch : serverOnly).push(v);
  }
  return [inPatch, serverOnly];
}

function indexIn(list: unknown[], v: unknown, mergeKey: string, kind: string): number {
  const keyOf = (x: unknown) => (kind === 'map' ? (isMap(x) ? x[mergeKey] : undefined) : x);
  const want = keyOf(v);
  return list.findIndex((x) => keyOf(x) === want);
}

/** Orders the patch's elements by `patchOrder` and the server's by `serverOrder`, then interleaves them. */
function normalizeElementOrder(
  patchItems: unknown[],
  serverOnly: unknown[],
  patchOrder: unknown[],
  serverOrder: unknown[],
  mergeKey: string,
  kind: string,
): unknown[] {
  const fromPatch = normalizeSliceOrder(patchItems, patchOrder, mergeKey, kind);
  const fromServer = normalizeSliceOrder(serverOnly, serverOrder, mergeKey, kind);
  // Each server element goes before the next patch element only if the live list had it before that one.
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < fromServer.length || j < fromPatch.length) {
    if (i >= fromServer.length) out.push(fromPatch[j++]);
    else if (j >= fromPatch.length) out.push(fromServer[i++]);
    else {
      const li = indexIn(serverOrder, fromServer[i], mergeKey, kind);
      const ri = indexIn(serverOrder, fromPatch[j], mergeKey, kind);
      out.push(li >= 0 && ri >= 0 && li < ri ? fromServer[i++] : fromPatch[j++]);
    }
  }
  return out;
}

function normalizeSliceOrder(toSort: unknown[], order: unknown[], mergeKey: string, kind: string): unknown[] {
  let deleted: unknown[] = [];
  if (kind === 'map') {
    for (const list of [toSort, order])
      for (const v of list) {
        if (!isMap(v)) throw errBadArgType('map[string]interface {}', v);
        if (!Object.hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
      }
    [toSort, deleted] = splitDeletions(toSort);
  }
  const sorted = toSort
    .map((v, at) => ({ v, at, rank: indexIn(order, v, mergeKey, kind) }))
    .sort((a, b) => (a.rank >= 0 && b.rank >= 0 ? a.rank - b.rank : a.at - b.at))
    .map((x) => x.v);
  return [...sorted, ...deleted];
}
