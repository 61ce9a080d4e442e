// What a manifest's text and objects may be at most, measured before the expensive parts (the YAML
// parse, validation) run on them.

/** A manifest file (or URL body) larger than this is refused before it is parsed. */
export const MAX_MANIFEST_BYTES = 8 << 20;
/**
 * The most one object may be: etcd's request limit (--max-request-bytes, 1.5 MiB by default), past
 * which the API server answers "etcdserver: request is too large" whatever the object is.
 */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;
/** The typed lists (and v1 List) whose items are objects of their own: kubectl sends each item alone. */
const LIST_KIND =
  /^kind:[ \t]*["']?(List|PodList|ConfigMapList|SecretList)["']?[ \t]*(#.*)?$|"kind"\s*:\s*"(List|PodList|ConfigMapList|SecretList)"/m;

/**
 * The documents of a text larger than one object may be whose own text is larger too, with their
 * indices as js-yaml numbers them, found without parsing: a document marker (---) at the start of a
 * line always starts a document, even inside a block or quoted scalar. A List's document may be
 * larger than an object (its items are measured once parsed); text before the first marker is a
 * document only when it holds more than comments and directives.
 */
export function oversizedDocuments(text: string, limit = MAX_OBJECT_BYTES): { index: number; bytes: number }[] {
  if (Buffer.byteLength(text) <= limit) return [];
  const pieces = text.split(/^---(?=[ \t\r\n]|$)/m);
  const first = pieces[0]!;
  const firstIsDocument = /^(?![ \t\r]*(#|%|$))/m.test(first);
  const out: { index: number; bytes: number }[] = [];
  (firstIsDocument ? pieces : pieces.slice(1)).forEach((piece, index) => {
    // UTF-8 is at most 3 bytes a UTF-16 unit: a short piece is not measured.
    if (piece.length * 3 <= limit) return;
    const bytes = Buffer.byteLength(piece);
    if (bytes > limit && !LIST_KIND.test(piece)) out.push({ index, bytes });
  });
  return out;
}

/** Why one object (a document, or an item of a List) is too large to be stored; undefined when it is not. */
export function objectSizeProblem(doc: unknown): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(doc) ?? '');
  if (bytes <= MAX_OBJECT_BYTES) return undefined;
  return (
    `the object is ${bytes} bytes as JSON (as kubectl sends it); expected at most ${MAX_OBJECT_BYTES} bytes ` +
    `(1.5 MiB), the most the API server stores of one object (etcd's request limit)`
  );
}

/**
 * What one document may expand to once its aliases are followed: nodes plus string
 * characters. A real pod is a few thousand; an alias bomb is billions.
 */
export const MAX_EXPANDED_WEIGHT = 4_000_000;

/**
 * The size of a document as a tree, aliases followed, computed over the shared graph
 * js-yaml returns (each node once, memoised), so a bomb is measured without expanding it;
 * a problem message when it is too large or refers to itself.
 */
export function expandedWeight(doc: unknown): string | undefined {
  const memo = new Map<object, number>();
  const active = new Set<object>();
  let cyclic = false;
  const weigh = (v: unknown): number => {
    if (typeof v === 'string') return 1 + v.length;
    if (v === null || typeof v !== 'object') return 1;
    const known = memo.get(v);
    if (known !== undefined) return known;
    if (active.has(v)) {
      cyclic = true;
      return 0;
    }
    active.add(v);
    let w = 1;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      w += weigh(child);
      if (w > MAX_EXPANDED_WEIGHT || cyclic) break;
    }
    active.delete(v);
    memo.set(v, w);
    return w;
  };
  const total = weigh(doc);
  if (cyclic) return 'an alias refers to a node that contains it (a recursive document); expected a tree';
  if (total > MAX_EXPANDED_WEIGHT)
    return (
      `the document expands to more than ${MAX_EXPANDED_WEIGHT.toLocaleString('en-US')} nodes and ` +
      `characters once its YAML aliases are followed (an alias bomb?); refused before validation`
    );
  return undefined;
}
