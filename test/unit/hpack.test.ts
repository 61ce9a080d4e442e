import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { HpackDecoder, HpackError, encodeHeaders } from '../../src/core/cri/hpack.js';

type Fields = [string, string][];

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** An integer with an N-bit prefix (RFC 7541 5.1), written here independently of the module's own. */
function int(value: number, prefixBits: number, flags: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [flags | value];
  const out = [flags | max];
  for (value -= max; value >= 128; value = Math.floor(value / 128)) out.push((value % 128) | 0x80);
  return [...out, value];
}

/**
 * The dynamic table as the decoder holds it, newest first, read through the decoder itself: indexed
 * fields from 62 on until one is past the table. Indexed fields leave the table as it is.
 */
function tableOf(decoder: HpackDecoder): Fields {
  const entries: Fields = [];
  for (let index = 62; ; index++) {
    try {
      entries.push(...decoder.decode(Buffer.from(int(index, 7, 0x80))));
    } catch (err) {
      assert.ok(err instanceof HpackError);
      return entries;
    }
  }
}

const sizeOf = (table: Fields) => table.reduce((sum, [name, value]) => sum + name.length + value.length + 32, 0);

const LATIN1_HIGH = String.fromCharCode(...Array.from({ length: 128 }, (_, i) => 0x80 + i));
const PRINTABLE = String.fromCharCode(...Array.from({ length: 0x7f - 0x20 }, (_, i) => 0x20 + i));

describe('HPACK: the examples of RFC 7541 Appendix C', () => {
  test('C.1 integers: 10 and 1337 with a 5-bit prefix (as table size updates), 42 with a 7-bit prefix (an index)', () => {
    // A size update is accepted exactly when its value is at most the maximum: that pins the value down.
    assert.deepEqual(new HpackDecoder(10).decode(hex('2a')), []);
    assert.throws(() => new HpackDecoder(9).decode(hex('2a')), HpackError);
    assert.deepEqual(new HpackDecoder(1337).decode(hex('3f9a0a')), []);
    assert.throws(() => new HpackDecoder(1336).decode(hex('3f9a0a')), HpackError);
    // No representation has an 8-bit prefix (C.1.3); 42 as an index names static entry 42.
    assert.deepEqual(new HpackDecoder().decode(Buffer.from([0x80 | 42])), [['if-range', '']]);
    // And a string length of 128, a 7-bit prefix with one continuation byte.
    assert.deepEqual(new HpackDecoder().decode(Buffer.from([0x00, 0x01, 0x61, 0x7f, 0x01, ...Buffer.from('b'.repeat(128))])), [['a', 'b'.repeat(128)]]);
  });

  test('C.2.1 a literal with indexing is added to the dynamic table', () => {
    const d = new HpackDecoder();
    assert.deepEqual(d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572')), [['custom-key', 'custom-header']]);
    assert.deepEqual(tableOf(d), [['custom-key', 'custom-header']]);
    assert.equal(sizeOf(tableOf(d)), 55);
  });

  test('C.2.2 a literal without indexing, C.2.3 never indexed, C.2.4 indexed: none adds to the table', () => {
    const d = new HpackDecoder();
    assert.deepEqual(d.decode(hex('040c 2f73 616d 706c 652f 7061 7468')), [[':path', '/sample/path']]);
    assert.deepEqual(d.decode(hex('1008 7061 7373 776f 7264 0673 6563 7265 74')), [['password', 'secret']]);
    assert.deepEqual(d.decode(hex('82')), [[':method', 'GET']]);
    assert.deepEqual(tableOf(d), []);
  });

  const REQUESTS: Fields[] = [
    [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']],
    [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com'], ['cache-control', 'no-cache']],
    [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']],
  ];
  const REQUEST_TABLES: Fields[] = [
    [[':authority', 'www.example.com']],
    [['cache-control', 'no-cache'], [':authority', 'www.example.com']],
    [['custom-key', 'custom-value'], ['cache-control', 'no-cache'], [':authority', 'www.example.com']],
  ];
  const REQUEST_SIZES = [57, 110, 164];

  const requests = (blocks: string[]) => {
    const d = new HpackDecoder();
    blocks.forEach((block, i) => {
      assert.deepEqual(d.decode(hex(block)), REQUESTS[i], `request ${i + 1}`);
      assert.deepEqual(tableOf(d), REQUEST_TABLES[i], `the table after request ${i + 1}`);
      assert.equal(sizeOf(tableOf(d)), REQUEST_SIZES[i]);
    });
  };

  test('C.3 three requests without Huffman coding on one decoder: the later ones index what the earlier ones added', () =>
    requests([
      '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '8286 84be 5808 6e6f 2d63 6163 6865',
      '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
    ]));

  test('C.4 the same requests with Huffman coding', () =>
    requests([
      '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
      '8286 84be 5886 a8eb 1064 9cbf',
      '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
    ]));

  const DATE1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
  const DATE2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
  const LOCATION = 'https://www.example.com';
  const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';
  const RESPONSES: Fields[] = [
    [[':status', '302'], ['cache-control', 'private'], ['date', DATE1], ['location', LOCATION]],
    [[':status', '307'], ['cache-control', 'private'], ['date', DATE1], ['location', LOCATION]],
    [[':status', '200'], ['cache-control', 'private'], ['date', DATE2], ['location', LOCATION], ['content-encoding', 'gzip'], ['set-cookie', COOKIE]],
  ];
  const RESPONSE_TABLES: Fields[] = [
    [['location', LOCATION], ['date', DATE1], ['cache-control', 'private'], [':status', '302']],
    // 307 evicted 302, the oldest.
    [[':status', '307'], ['location', LOCATION], ['date', DATE1], ['cache-control', 'private']],
    // The set-cookie entry alone evicted three.
    [['set-cookie', COOKIE], ['content-encoding', 'gzip'], ['date', DATE2]],
  ];
  const RESPONSE_SIZES = [222, 222, 215];

  const responses = (blocks: string[]) => {
    const d = new HpackDecoder(256);
    blocks.forEach((block, i) => {
      assert.deepEqual(d.decode(hex(block)), RESPONSES[i], `response ${i + 1}`);
      assert.deepEqual(tableOf(d), RESPONSE_TABLES[i], `the table after response ${i + 1}`);
      assert.equal(sizeOf(tableOf(d)), RESPONSE_SIZES[i]);
    });
  };

  test('C.5 three responses without Huffman coding, evicting at a table size of 256', () =>
    responses([
      '4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '4803 3330 37c1 c0bf',
      '88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31',
    ]));

  test('C.6 the same responses with Huffman coding', () =>
    responses([
      '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
      '4883 640e ffc1 c0bf',
      '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
    ]));
});

/** Packs [code, bit length] pairs MSB first, padded with ones (5.2). */
function huffmanBits(codes: readonly (readonly [number, number])[]): Buffer {
  const bits = codes.map(([code, len]) => code.toString(2).padStart(len, '0')).join('');
  const padded = bits + '1'.repeat((8 - (bits.length % 8)) % 8);
  return Buffer.from(padded.match(/.{8}/g)!.map((byte) => parseInt(byte, 2)));
}

/** A literal without indexing, name ':path', whose value is this Huffman string. */
const huffmanField = (data: Buffer) => Buffer.from([0x04, ...int(data.length, 7, 0x80), ...data]);

describe('HPACK: Huffman coding (Appendix B)', () => {
  test('the last symbol of each code length, with its code as the RFC lists it', () => {
    // [symbol, code, bits] from Appendix B: a code derived wrongly from the lengths would move these.
    const table: [number, number, number][] = [
      [116, 0x9, 5], [117, 0x2d, 6], [122, 0x7b, 7], [90, 0xfd, 8], [63, 0x3fc, 10], [124, 0x7fc, 11],
      [62, 0xffb, 12], [126, 0x1ffd, 13], [125, 0x3ffd, 14], [123, 0x7ffe, 15], [208, 0x7fff2, 19],
      [226, 0xfffed, 20], [230, 0x1fffe8, 21], [233, 0x3fffeb, 22], [239, 0x7ffff4, 23], [237, 0xfffff5, 24],
      [235, 0x1ffffef, 25], [255, 0x3ffffee, 26], [254, 0x7fffff0, 27], [249, 0xffffffe, 28], [22, 0x3ffffffe, 30],
      [0, 0x1ff8, 13], [10, 0x3ffffffc, 30], [48, 0x0, 5],
    ];
    const data = huffmanBits(table.map(([, code, len]) => [code, len]));
    assert.deepEqual(new HpackDecoder().decode(huffmanField(data)), [[':path', String.fromCharCode(...table.map(([sym]) => sym))]]);
  });

  test('a Huffman string longer than the kept scratch buffer, between short ones: each decodes whole, none reads another\'s bytes', () => {
    // '0' is the 5-bit code 0: n of them are n*5 bits, padded with ones.
    const zeros = (n: number) => huffmanBits(Array.from({ length: n }, () => [0, 5] as [number, number]));
    const d = new HpackDecoder();
    assert.deepEqual(d.decode(huffmanField(huffmanBits([[1, 5], [2, 5]]))), [[':path', '12']]);
    assert.deepEqual(d.decode(huffmanField(zeros(20_000))), [[':path', '0'.repeat(20_000)]]);
    assert.deepEqual(d.decode(huffmanField(huffmanBits([[2, 5]]))), [[':path', '2']]);
    assert.deepEqual(d.decode(huffmanField(zeros(9_000))), [[':path', '0'.repeat(9_000)]]);
  });

  test('an empty Huffman string, and one that ends exactly on a byte', () => {
    assert.deepEqual(new HpackDecoder().decode(hex('0480')), [[':path', '']]);
    // '0' '1' '2' '0' '1' '2' '0' '1': eight 5-bit codes, 40 bits, no padding.
    const data = huffmanBits([[0, 5], [1, 5], [2, 5], [0, 5], [1, 5], [2, 5], [0, 5], [1, 5]]);
    assert.equal(data.length, 5);
    assert.deepEqual(new HpackDecoder().decode(huffmanField(data)), [[':path', '01201201']]);
  });
});

const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';

/** The header blocks in what a client sent: HEADERS (less padding and priority) and its CONTINUATIONs, joined. */
function headerBlocks(bytes: Buffer): Buffer[] {
  if (bytes.length < PREFACE.length) return [];
  assert.equal(bytes.toString('latin1', 0, PREFACE.length), PREFACE);
  const blocks: Buffer[] = [];
  let fragments: Buffer[] | undefined;
  for (let at = PREFACE.length; at + 9 <= bytes.length; ) {
    const length = bytes.readUIntBE(at, 3);
    const type = bytes[at + 3]!;
    const flags = bytes[at + 4]!;
    if (at + 9 + length > bytes.length) break;
    let payload = bytes.subarray(at + 9, at + 9 + length);
    at += 9 + length;
    if (type === 0x1) {
      assert.equal(fragments, undefined, 'a HEADERS frame inside a header block');
      if (flags & 0x8) payload = payload.subarray(1, payload.length - payload[0]!); // PADDED
      if (flags & 0x20) payload = payload.subarray(5); // PRIORITY
      fragments = [payload];
    } else if (type === 0x9) {
      assert.ok(fragments, 'a CONTINUATION frame outside a header block');
      fragments.push(payload);
    } else {
      assert.equal(fragments, undefined, 'another frame inside a header block');
      continue;
    }
    if (flags & 0x4) {
      blocks.push(Buffer.concat(fragments));
      fragments = undefined;
    }
  }
  return blocks;
}

/** A TCP server that records what HTTP/2 clients send it, sending back only `greeting` (if any). */
async function recorder(greeting?: Buffer) {
  let bytes = Buffer.alloc(0);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('data', (chunk) => (bytes = Buffer.concat([bytes, chunk])));
    if (greeting) socket.write(greeting);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    sockets,
    /** Waits (up to 10 s) until `count` header blocks have arrived. */
    async blocks(count: number): Promise<Buffer[]> {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const blocks = headerBlocks(bytes);
        if (blocks.length >= count) return blocks;
        if (Date.now() > deadline) assert.fail(`${blocks.length} header blocks of ${count} after 10 s`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    async close(): Promise<void> {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

type Request = http2.OutgoingHttpHeaders & { ':path': string };

/** The fields Node sends for a request: its pseudo-headers (any order), then ours in order, arrays as repeated fields. */
function assertSent(decoded: Fields, request: Request, port: number, which: string): void {
  const pseudo = decoded.filter(([name]) => name.startsWith(':'));
  assert.deepEqual(decoded.slice(0, pseudo.length), pseudo, `${which}: pseudo-headers first`);
  assert.deepEqual(Object.fromEntries(pseudo), { ':method': 'GET', ':path': request[':path'], ':scheme': 'http', ':authority': `127.0.0.1:${port}` }, which);
  const regular = Object.entries(request)
    .filter(([name]) => !name.startsWith(':'))
    .flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v): [string, string] => [name, String(v)]));
  assert.deepEqual(decoded.slice(pseudo.length), regular, which);
}

/** Deterministic printable text of any length, which compresses poorly. */
function noise(length: number): string {
  let seed = 12345;
  let out = '';
  while (out.length < length) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    out += PRINTABLE[seed % PRINTABLE.length];
  }
  return out;
}

/** Makes the requests on a node:http2 client (nghttp2's encoder) and decodes their header blocks with one decoder. */
async function throughNghttp2(requests: Request[], opts: { greeting?: Buffer; maxTableSize?: number; awaitSettings?: boolean }): Promise<Buffer[]> {
  const rec = await recorder(opts.greeting);
  // Padding to the maximum: HEADERS frames with room to spare come PADDED.
  const client = http2.connect(`http://127.0.0.1:${rec.port}`, { paddingStrategy: http2.constants.PADDING_STRATEGY_MAX });
  client.on('error', () => {});
  try {
    if (opts.awaitSettings) await new Promise((resolve) => client.once('remoteSettings', resolve));
    // Half with a priority, so that HEADERS frames come with and without the PRIORITY flag.
    requests.forEach((request, i) => client.request(request, { endStream: true, ...(i % 2 ? { weight: 32 } : {}) }).on('error', () => {}));
    const blocks = await rec.blocks(requests.length);
    assert.equal(blocks.length, requests.length);
    const decoder = new HpackDecoder(opts.maxTableSize);
    blocks.forEach((block, i) => assertSent(decoder.decode(block), requests[i]!, rec.port, `request ${i + 1}`));
    return blocks;
  } finally {
    client.destroy();
    await rec.close();
  }
}

const MIXED_LATIN1 = 'caf\u00e9 '.repeat(3) + 'e'.repeat(1200) + LATIN1_HIGH; // Huffman is shorter, even with the long codes

describe('HPACK: decoding what an independent encoder (nghttp2, through node:http2) sends', () => {
  const common: Omit<Request, ':path'> = {
    'content-type': 'application/grpc',
    te: 'trailers',
    'x-printable': PRINTABLE,
    'x-latin1': LATIN1_HIGH,
    'x-latin1-mixed': MIXED_LATIN1,
    'x-repeated': ['one', 'two', 'three'],
    'x-secret': 'hunter2',
    [http2.sensitiveHeaders]: ['x-secret'],
  };

  test('Huffman strings, the dynamic table across requests (and eviction), never-indexed fields, padding, CONTINUATION frames', async () => {
    const path = '/runtime.v1.RuntimeService/ListContainers';
    const blocks = await throughNghttp2(
      [
        { ':path': path, ...common },
        { ':path': path, ...common },
        { ':path': path, ...common, 'x-long': noise(30_000) },
        // An entry of 3/4 of the table: indexing it evicts most of what the others added.
        { ':path': '/runtime.v1.RuntimeService/ListPodSandbox', ...common, 'x-big': 'a'.repeat(3000), 'x-after': 'z' },
        { ':path': path, ...common },
      ],
      {},
    );
    // What the requests were to exercise: the second repeats the first, from the table (far
    // smaller); the third is above a frame (so it came in CONTINUATIONs).
    assert.ok(blocks[1]!.length < blocks[0]!.length / 10, `${blocks[1]!.length} bytes, then ${blocks[0]!.length}`);
    assert.ok(blocks[2]!.length > 16_384);
  });

  test('with SETTINGS_HEADER_TABLE_SIZE 256: a size update, then eviction at 256', async () => {
    const settings = Buffer.from([0, 0, 6, 0x4, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0, 0x01, 0x00]); // HEADER_TABLE_SIZE = 256
    const blocks = await throughNghttp2(
      [
        { ':path': '/a', 'x-one': 'first value '.repeat(4), 'x-two': 'second value '.repeat(4) },
        { ':path': '/b', 'x-two': 'second value '.repeat(4), 'x-three': 'third '.repeat(8), 'x-one': 'first value '.repeat(4) },
        { ':path': '/c', 'x-one': 'first value '.repeat(4), 'x-three': 'third '.repeat(8), 'x-four': 'x'.repeat(300) },
      ],
      { greeting: settings, maxTableSize: 256, awaitSettings: true },
    );
    assert.equal(blocks[0]![0]! & 0xe0, 0x20, 'the first block starts with a dynamic table size update');
  });

  test('nghttp2 decodes what encodeHeaders writes', async () => {
    const fields: Fields = [
      [':status', '200'],
      ['content-type', 'application/grpc'],
      ['grpc-status', '0'],
      ['www-authenticate', 'x'],
      ['x-latin1', LATIN1_HIGH],
      ['x-printable', PRINTABLE.trim()],
      ['x-long', noise(1000).trim()],
      ['x-empty', ''],
    ];
    const block = encodeHeaders(fields);
    const frame = Buffer.alloc(9);
    frame.writeUIntBE(block.length, 0, 3);
    frame[3] = 0x1; // HEADERS
    frame[4] = 0x1 | 0x4; // END_STREAM, END_HEADERS
    frame.writeUInt32BE(1, 5);
    const rec = await recorder(Buffer.from([0, 0, 0, 0x4, 0, 0, 0, 0, 0])); // an empty SETTINGS
    const client = http2.connect(`http://127.0.0.1:${rec.port}`);
    client.on('error', () => {});
    try {
      const request = client.request({ ':path': '/' }, { endStream: true });
      const response = new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        request.once('response', resolve);
        request.once('error', reject);
      });
      await rec.blocks(1); // stream 1 is open: answer it
      for (const socket of rec.sockets) socket.write(Buffer.concat([frame, block]));
      const headers = await response;
      assert.deepEqual(
        fields.map(([name]) => [name, String(headers[name])]),
        fields,
      );
    } finally {
      client.destroy();
      await rec.close();
    }
  });
});

describe('HPACK: encodeHeaders', () => {
  test('literals without indexing, the name by its first static index (4-bit prefix), no Huffman: bytes as RFC 7541 6.2.2 lays them out', () => {
    assert.deepEqual(encodeHeaders([[':method', 'POST']]), hex('02 04 504f5354'));
    // content-type is index 31: 15 in the prefix, then 16.
    assert.deepEqual(encodeHeaders([['content-type', 'a']]), hex('0f10 01 61'));
    assert.deepEqual(encodeHeaders([['te', 'trailers']]), hex('00 02 7465 08 747261696c657273'));
    assert.deepEqual(encodeHeaders([]), Buffer.alloc(0));
  });

  const FIELDS: Fields = [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', '/runtime.v1.RuntimeService/Version'],
    [':authority', 'localhost'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ['grpc-timeout', '2000m'],
    ['user-agent', 'podctl/0.1.0'],
    ['www-authenticate', ''],
    ['x-latin1', LATIN1_HIGH + '\u0000\u0001\t'],
    ['x-long-value', noise(20_000)],
    ['x-' + 'n'.repeat(200), 'long name'],
    ['x-repeated', 'one'],
    ['x-repeated', 'two'],
  ];

  test('round-trips through the decoder, bytes as latin1 both ways', () => {
    assert.deepEqual(new HpackDecoder().decode(encodeHeaders(FIELDS)), FIELDS);
  });

  test('leaves the decoder\'s dynamic table as it is: between C.4\'s requests, the third still decodes', () => {
    const d = new HpackDecoder();
    d.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff'));
    d.decode(hex('8286 84be 5886 a8eb 1064 9cbf'));
    const before = tableOf(d);
    assert.equal(before.length, 2);
    assert.deepEqual(d.decode(encodeHeaders(FIELDS)), FIELDS);
    assert.deepEqual(tableOf(d), before);
    assert.deepEqual(d.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf')), [
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/index.html'],
      [':authority', 'www.example.com'],
      ['custom-key', 'custom-value'],
    ]);
  });
});

describe('HPACK: the dynamic table', () => {
  test('a size update evicts; back up to the maximum, entries are added again', () => {
    const d = new HpackDecoder();
    d.decode(hex('8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d'));
    d.decode(hex('8286 84be 5808 6e6f 2d63 6163 6865'));
    assert.equal(tableOf(d).length, 2);
    d.decode(hex('3f 1b')); // 58: room for cache-control: no-cache (53), not for both
    assert.deepEqual(tableOf(d), [['cache-control', 'no-cache']]);
    d.decode(hex('20')); // 0: empties it
    assert.deepEqual(tableOf(d), []);
    // Several updates at the start of one block are allowed (4.2): the last one counts.
    assert.deepEqual(d.decode(hex('20 3fe11f 4003 782d61 0131')), [['x-a', '1']]);
    assert.deepEqual(tableOf(d), [['x-a', '1']]);
  });

  test('an entry larger than the table empties it and is not added (4.4)', () => {
    const d = new HpackDecoder(100);
    d.decode(Buffer.from([0x40, 0x03, ...Buffer.from('x-a'), 0x01, 0x31]));
    assert.deepEqual(tableOf(d), [['x-a', '1']]);
    // 3 + 66 + 32 = 101 > 100.
    assert.deepEqual(d.decode(Buffer.from([0x40, 0x03, ...Buffer.from('x-b'), 0x42, ...Buffer.from('v'.repeat(66))])), [['x-b', 'v'.repeat(66)]]);
    assert.deepEqual(tableOf(d), []);
    // Exactly 100 fits.
    d.decode(Buffer.from([0x40, 0x03, ...Buffer.from('x-c'), 0x41, ...Buffer.from('v'.repeat(65))]));
    assert.deepEqual(tableOf(d), [['x-c', 'v'.repeat(65)]]);
  });

  test('a literal may take its name from the dynamic table', () => {
    const d = new HpackDecoder();
    d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
    assert.deepEqual(d.decode(hex('0f2f 0178')), [['custom-key', 'x']]); // index 62 without indexing
  });
});

describe('HPACK: malformed blocks throw HpackError (COMPRESSION_ERROR)', () => {
  // [what, block, why (the message: each case fails for its own reason, not a later one), maxTableSize]
  const cases: [string, string, RegExp, number?][] = [
    ['a truncated integer (prefix full, no continuation)', 'ff', /truncated integer/],
    ['a truncated integer (continuation bit set at the end)', 'ff80', /truncated integer/],
    ['an integer above 2^31 - 1', 'ffffffffff0f', /above 2\^31 - 1/],
    ['an integer with too many continuation bytes', 'ff808080808000', /too many continuation bytes/],
    ['a name longer than the block', '0005 6162', /5 bytes, longer than the rest of the block/],
    ['a value longer than the block', '0001 61 05 6263', /5 bytes, longer than the rest of the block/],
    ['a Huffman value longer than the block', '0001 61 82 ff', /2 bytes, longer than the rest of the block/],
    ['a field with no value', '0001 61', /truncated string literal/],
    ['a literal name missing', '40', /truncated string literal/],
    ['index 0', '80', /index 0/],
    ['an index past the (empty) dynamic table', 'be', /index 62, past the 61 entries/],
    ['a literal\'s name index past the dynamic table', '7f00 0161', /index 63, past the 61 entries/],
    ['Huffman padding of 8 bits', '0481 ff', /longer than 7 bits/],
    ['Huffman padding of 11 bits (\'a\', then ones)', '0482 1fff', /longer than 7 bits/],
    ['Huffman padding with a 0 bit (\'a\', then 110)', '0481 1e', /not all ones/],
    ['Huffman padding of zeros (\'0\', then 000)', '0481 00', /not all ones/],
    ['EOS inside a Huffman string', '0484 ffffffff', /EOS/],
    ['a size update above the maximum (4097 > 4096)', '3fe21f', /update to 4097, above the 4096 allowed/],
    ['a size update above a smaller maximum (256 > 255)', '3fe101', /update to 256, above the 255 allowed/, 255],
    ['a size update after a field', '82 20', /size update after a header field/],
  ];
  for (const [what, bytes, why, max] of cases) {
    test(what, () => assert.throws(() => new HpackDecoder(max).decode(hex(bytes)), (err) => err instanceof HpackError && why.test(err.message)));
  }

  test('the boundaries the errors sit next to are accepted', () => {
    assert.deepEqual(new HpackDecoder().decode(hex('3fe11f')), []); // 4096
    assert.deepEqual(new HpackDecoder(256).decode(hex('3fe101')), []); // 256
    assert.deepEqual(new HpackDecoder().decode(hex('0481 1f')), [[':path', 'a']]); // 'a' then 111
    assert.deepEqual(new HpackDecoder().decode(hex('20 82')), [[':method', 'GET']]);
    // 2^31 - 1 is an integer, if not an index that exists.
    assert.throws(() => new HpackDecoder().decode(hex('ff 80ffffff07')), (err) => err instanceof HpackError && /index 2147483647/.test(err.message));
    const d = new HpackDecoder();
    d.decode(hex('4003 782d61 0131'));
    assert.deepEqual(d.decode(hex('be')), [['x-a', '1']]);
    assert.throws(() => d.decode(hex('bf')), HpackError);
  });
});
