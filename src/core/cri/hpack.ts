/**
 * HPACK (RFC 7541), the header compression of HTTP/2, for the CRI client's own HTTP/2 transport.
 *
 * The decoder is complete (the runtime's encoder may use every representation, Huffman coding and
 * the dynamic table). The encoder is deliberately minimal: literals without indexing and without
 * Huffman coding keep no state, so what we send never depends on what the peer has acknowledged,
 * and a gRPC request's few short headers gain little from compression.
 *
 * Strings are bytes as latin1: each char of a decoded string is one byte of the block, and each
 * char of an encoded string is written as its low byte.
 */

/** A malformed header block: the HTTP/2 connection error COMPRESSION_ERROR. */
export class HpackError extends Error {
  constructor(message: string) {
    super(`HPACK: ${message}`);
    this.name = 'HpackError';
  }
}

/** Appendix A: index i + 1 is STATIC[i]. */
const STATIC: readonly (readonly [string, string])[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/**
 * Appendix B, the bit length of each symbol's code (symbols 0-255, then EOS). The code is
 * canonical: sorted by length, then by symbol, each code is the previous one plus one, shifted left
 * when the length grows. So the lengths alone determine every code (derived in huffmanTables).
 */
const HUFFMAN_LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
];
const EOS = 256;
const MAX_CODE_BITS = 30;

/**
 * For each length L: the first (smallest) code of length L, how many codes have it, and where
 * their symbols start in the symbols sorted by (length, symbol). Built on the first Huffman string,
 * not at load: a command that never reads a header block pays nothing.
 */
interface HuffmanTables {
  firstCode: Int32Array;
  count: Int32Array;
  start: Int32Array;
  symbols: Uint16Array;
}
let huffman: HuffmanTables | undefined;

function huffmanTables(): HuffmanTables {
  const count = new Int32Array(MAX_CODE_BITS + 1);
  for (const len of HUFFMAN_LENGTHS) count[len]!++;
  const firstCode = new Int32Array(MAX_CODE_BITS + 1);
  const start = new Int32Array(MAX_CODE_BITS + 1);
  for (let len = 1, code = 0, at = 0; len <= MAX_CODE_BITS; len++) {
    firstCode[len] = code;
    start[len] = at;
    code = (code + count[len]!) * 2;
    at += count[len]!;
  }
  const symbols = new Uint16Array(HUFFMAN_LENGTHS.length);
  const next = start.slice();
  HUFFMAN_LENGTHS.forEach((len, sym) => (symbols[next[len]!++] = sym));
  return { firstCode, count, start, symbols };
}

/** Where Huffman strings are decoded into (decoding is synchronous, so one suffices); kept only up to this size. */
const SCRATCH_KEPT = 4096;
let scratch = Buffer.alloc(0);

/** Decodes a Huffman-coded string (5.2): a canonical walk, one bit at a time. */
function decodeHuffman(buf: Buffer, from: number, to: number): string {
  const { firstCode, count, start, symbols } = (huffman ??= huffmanTables());
  // The shortest code is 5 bits, so n bytes hold at most 8n/5 symbols.
  const most = Math.floor(((to - from) * 8) / 5);
  // gRPC's header values are short; a rare long one (up to the 1 MB block limit) gets a buffer of its own, not kept.
  let into = scratch;
  if (into.length < most) {
    into = Buffer.allocUnsafe(Math.max(most, 256));
    if (most <= SCRATCH_KEPT) scratch = into;
  }
  let out = 0;
  let code = 0; // the bits read since the last symbol, and how many
  let len = 0;
  for (let i = from; i < to; i++) {
    const byte = buf[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      code = (code << 1) | ((byte >> bit) & 1);
      len++;
      // A prefix that is no shorter code is at least the first code of its length (canonical),
      // so it is a code of this length exactly when it is below first + count.
      const k = code - firstCode[len]!;
      if (k < count[len]!) {
        const sym = symbols[start[len]! + k]!;
        if (sym === EOS) throw new HpackError('EOS inside a Huffman-coded string');
        into[out++] = sym;
        code = 0;
        len = 0;
      }
    }
  }
  // Padding (5.2): the most significant bits of EOS, i.e. fewer than 8 bits, all ones.
  if (len > 7) throw new HpackError('Huffman padding longer than 7 bits');
  if (code !== (1 << len) - 1) throw new HpackError('Huffman padding that is not all ones');
  return into.toString('latin1', 0, out);
}

const EMPTY: Buffer = Buffer.alloc(0);

/** An integer (5.1) above this is refused: no index, length or table size of a sane peer comes near it. */
const MAX_INT = 0x7fffffff;

/** Decodes the header blocks of one HTTP/2 connection, in order (they share the dynamic table). */
export class HpackDecoder {
  private readonly maxTableSize: number;
  /** The dynamic table's current maximum size, as the encoder last set it (4.2), at most maxTableSize. */
  private capacity: number;
  /** Newest last, so that adding is a push and evicting (of the oldest) a shift. */
  private readonly entries: [string, string][] = [];
  /** The sum of the entries' sizes: name + value + 32 each (4.1). */
  private size = 0;
  private buf = EMPTY;
  private pos = 0;

  /** maxTableSize: the SETTINGS_HEADER_TABLE_SIZE we advertise (default 4096); a table size update above it is an error. */
  constructor(maxTableSize = 4096) {
    this.maxTableSize = maxTableSize;
    // Until the encoder sends a size update, assume it may use all we allow: keeping more entries
    // than the encoder does is harmless (it never names one it evicted), keeping fewer is not.
    this.capacity = maxTableSize;
  }

  /** One complete header block (HEADERS + CONTINUATION fragments joined) into [name, value] pairs, in order. Throws HpackError. */
  decode(block: Uint8Array): [string, string][] {
    this.buf = Buffer.isBuffer(block) ? block : Buffer.from(block.buffer, block.byteOffset, block.byteLength);
    this.pos = 0;
    const fields: [string, string][] = [];
    try {
      while (this.pos < this.buf.length) {
        const b = this.buf[this.pos]!;
        if (b & 0x80) {
          // 6.1: an indexed field.
          const [name, value] = this.lookup(this.integer(7));
          fields.push([name, value]);
        } else if (b & 0x40) {
          // 6.2.1: a literal added to the dynamic table.
          const field = this.literal(6);
          this.add(field);
          fields.push([field[0], field[1]]);
        } else if (b & 0x20) {
          // 6.3: a size update, only at the start of a block (4.2).
          if (fields.length > 0) throw new HpackError('a dynamic table size update after a header field');
          const size = this.integer(5);
          if (size > this.maxTableSize) throw new HpackError(`a dynamic table size update to ${size}, above the ${this.maxTableSize} allowed`);
          this.capacity = size;
          this.evict(0);
        } else {
          // 6.2.2 and 6.2.3 (0x10 set: never indexed, which matters only to an intermediary).
          fields.push(this.literal(4));
        }
      }
    } finally {
      this.buf = EMPTY; // hold no reference to the caller's bytes
    }
    return fields;
  }

  /** An integer with an N-bit prefix (5.1), starting at the current byte. */
  private integer(prefixBits: number): number {
    const buf = this.buf;
    const max = (1 << prefixBits) - 1;
    let value = buf[this.pos++]! & max;
    if (value < max) return value;
    // Up to 5 continuation bytes (35 bits): leading zeros aside, more can only overflow.
    for (let shift = 1; shift <= 128 ** 4; shift *= 128) {
      if (this.pos >= buf.length) throw new HpackError('a truncated integer');
      const b = buf[this.pos++]!;
      value += (b & 0x7f) * shift;
      if (value > MAX_INT) throw new HpackError('an integer above 2^31 - 1');
      if ((b & 0x80) === 0) return value;
    }
    throw new HpackError('an integer with too many continuation bytes');
  }

  /** A string literal (5.2). */
  private string(): string {
    if (this.pos >= this.buf.length) throw new HpackError('a truncated string literal');
    const huffmanCoded = (this.buf[this.pos]! & 0x80) !== 0;
    const length = this.integer(7);
    const from = this.pos;
    if (length > this.buf.length - from) throw new HpackError(`a string literal of ${length} bytes, longer than the rest of the block`);
    this.pos = from + length;
    return huffmanCoded ? decodeHuffman(this.buf, from, this.pos) : this.buf.toString('latin1', from, this.pos);
  }

  /** A literal field (6.2): the name by index (the prefix), or if that is 0, a string; then the value. */
  private literal(prefixBits: number): [string, string] {
    const index = this.integer(prefixBits);
    const name = index === 0 ? this.string() : this.lookup(index)[0];
    return [name, this.string()];
  }

  /** Index space (2.3.3): 1-61 the static table, then the dynamic table newest first. */
  private lookup(index: number): readonly [string, string] {
    if (index === 0) throw new HpackError('index 0');
    if (index <= STATIC.length) return STATIC[index - 1]!;
    const d = index - STATIC.length;
    if (d > this.entries.length) throw new HpackError(`index ${index}, past the ${STATIC.length + this.entries.length} entries of the tables`);
    return this.entries[this.entries.length - d]!;
  }

  /** Adds an entry (4.4): evict until it fits; one larger than the whole table empties it and is not added. */
  private add(field: [string, string]): void {
    const size = field[0].length + field[1].length + 32;
    this.evict(size);
    if (size <= this.capacity) {
      this.entries.push(field);
      this.size += size;
    }
  }

  /** Evicts the oldest entries until `room` more bytes fit within the capacity (or the table is empty). */
  private evict(room: number): void {
    while (this.entries.length > 0 && this.size + room > this.capacity) {
      const [name, value] = this.entries.shift()!;
      this.size -= name.length + value.length + 32;
    }
  }
}

/** First static index of each name, built on the first encode. */
let staticNames: Map<string, number> | undefined;

function staticNameIndex(): Map<string, number> {
  const map = new Map<string, number>();
  STATIC.forEach(([name], i) => {
    if (!map.has(name)) map.set(name, i + 1);
  });
  return map;
}

/** The bytes an integer with an N-bit prefix takes (5.1). */
function integerLength(value: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) return 1;
  let n = 2;
  for (let rest = value - max; rest >= 128; rest = Math.floor(rest / 128)) n++;
  return n;
}

/** Writes an integer with an N-bit prefix (5.1), the bits above the prefix 0 (all encodeHeaders needs); returns the next offset. */
function writeInteger(out: Buffer, at: number, value: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[at++] = value;
    return at;
  }
  out[at++] = max;
  let rest = value - max;
  while (rest >= 128) {
    out[at++] = (rest % 128) | 0x80;
    rest = Math.floor(rest / 128);
  }
  out[at++] = rest;
  return at;
}

/** A header block for these fields: each a literal without indexing (no dynamic table, so the decoder's state never matters), the name by its static-table index where the static table has it, no Huffman coding. Names must be lowercase. */
export function encodeHeaders(fields: readonly (readonly [string, string])[]): Buffer {
  const names = (staticNames ??= staticNameIndex());
  let total = 0;
  for (const [name, value] of fields) {
    const index = names.get(name) ?? 0;
    total += integerLength(index, 4) + (index === 0 ? integerLength(name.length, 7) + name.length : 0);
    total += integerLength(value.length, 7) + value.length;
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const [name, value] of fields) {
    // 6.2.2: 0000 then the name's index in a 4-bit prefix, 0 for a literal name; strings with H = 0.
    const index = names.get(name) ?? 0;
    at = writeInteger(out, at, index, 4);
    if (index === 0) {
      at = writeInteger(out, at, name.length, 7);
      at += out.write(name, at, 'latin1');
    }
    at = writeInteger(out, at, value.length, 7);
    at += out.write(value, at, 'latin1');
  }
  return out;
}
