import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import {
  CriLogParser,
  containerLogFiles,
  followContainerLog,
  parseCriLine,
  readContainerLog,
  readContainerLogTail,
  readLogFile,
  selectRecords,
  streamContainerLog,
} from '../../src/core/logs/index.js';
import { scratchDir } from '../support/e2e.js';

const T = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, '0')}.123456789Z`;

test('CRI log lines: time, stream, F/P tags; other lines are skipped', () => {
  assert.deepEqual(parseCriLine(`${T(1)} stdout F hello world`), { time: T(1), stream: 'stdout', partial: false, text: 'hello world' });
  assert.deepEqual(parseCriLine(`${T(1)} stderr P part`), { time: T(1), stream: 'stderr', partial: true, text: 'part' });
  assert.deepEqual(parseCriLine(`${T(1)} stdout F`), { time: T(1), stream: 'stdout', partial: false, text: '' });
  assert.equal(parseCriLine('garbage'), undefined);
  assert.equal(parseCriLine(`${T(1)} stdin F x`), undefined);
});

test('partial records are joined per stream, and a line still being written waits for its newline', () => {
  const p = new CriLogParser();
  const first = p.push(`${T(1)} stdout P abc\n${T(2)} stderr F oops\n${T(3)} stdout P def\n${T(4)} stdout F ghi\n${T(5)} stdout F nex`);
  assert.deepEqual(
    first.map((r) => [r.stream, r.text, r.time]),
    [
      ['stderr', 'oops', T(2)],
      ['stdout', 'abcdefghi', T(4)],
    ],
  );
  assert.deepEqual(
    p.push('t\n').map((r) => r.text),
    ['next'],
  );
});

test('--tail and --since select from the joined lines', () => {
  const records = new CriLogParser().push([1, 2, 3, 4, 5].map((s) => `${T(s)} stdout F line ${s}\n`).join(''));
  assert.deepEqual(
    selectRecords(records, { tail: 2 }).map((r) => r.text),
    ['line 4', 'line 5'],
  );
  assert.deepEqual(selectRecords(records, { tail: 0 }), []);
  assert.equal(selectRecords(records, { tail: -1 }).length, 5);
  assert.deepEqual(
    selectRecords(records, { sinceMs: Date.parse(T(4)) }).map((r) => r.text),
    ['line 4', 'line 5'],
  );
  assert.deepEqual(
    selectRecords(records, { sinceMs: Date.parse(T(2)), tail: 1 }).map((r) => r.text),
    ['line 5'],
  );
});

test('following: appended lines, a rotated file, then the next instance (1.log), in order', async () => {
  const dir = scratchDir('unit-logs-follow');
  try {
    const c = join(dir.dir, 'app');
    mkdirSync(c);
    writeFileSync(join(c, '0.log'), `${T(1)} stdout F one\n${T(2)} stdout F tw`);
    // Each poll's pause moves the files on one step; nothing waits on the wall clock.
    const steps = [
      () => appendFileSync(join(c, '0.log'), `o\n${T(3)} stdout F three\n`),
      () => {
        renameSync(join(c, '0.log'), join(c, '0.log.20260101-000004'));
        appendFileSync(join(c, '0.log.20260101-000004'), `${T(4)} stdout F four (before the reopen)\n`);
        writeFileSync(join(c, '0.log'), `${T(5)} stdout F five\n`);
      },
      () => writeFileSync(join(c, '1.log'), `${T(6)} stdout F six (restarted)\n`),
      () => appendFileSync(join(c, '1.log'), `${T(7)} stdout F seven\n`),
    ];
    const seen: string[] = [];
    const paths = new Set<string>();
    await followContainerLog({
      path: join(c, '0.log'),
      onRecords: (records, path) => {
        seen.push(...records.map((r) => r.text));
        paths.add(path);
      },
      shouldStop: () => steps.length === 0,
      sleep: async () => steps.shift()?.(),
    });
    assert.deepEqual(seen, ['one', 'two', 'three', 'four (before the reopen)', 'five', 'six (restarted)', 'seven']);
    assert.deepEqual([...paths], [join(c, '0.log'), join(c, '1.log')]);
    assert.deepEqual(await containerLogFiles(c), [join(c, '0.log'), join(c, '1.log')]);
    assert.deepEqual(
      (await readLogFile(join(c, '1.log'))).map((r) => r.text),
      ['six (restarted)', 'seven'],
    );
    assert.deepEqual(await readLogFile(join(c, '9.log')), []);
  } finally {
    dir.cleanup();
  }
});

test(
  'following: a file truncated in place is read again from its start; what was left unfinished does not run into the ' + 'first new line',
  async () => {
    const dir = scratchDir('unit-logs-truncate');
    try {
      const c = join(dir.dir, 'app');
      mkdirSync(c);
      const log = join(c, '0.log');
      // An unfinished physical line, and a partial (P) record waiting for its end.
      writeFileSync(log, `${T(1)} stdout F one\n${T(2)} stdout P half of a record \n${T(3)} stdout F unfinish`);
      const steps = [
        () => truncateSync(log, 0),
        () => appendFileSync(log, `${T(4)} stdout F after the truncation\n${T(5)} stdout F and more\n`),
      ];
      const seen: string[] = [];
      await followContainerLog({
        path: log,
        onRecords: (records) => seen.push(...records.map((r) => r.text)),
        shouldStop: () => steps.length === 0,
        sleep: async () => steps.shift()?.(),
      });
      // The partial record is a line of its own; the half-written line's end went with the old content.
      assert.deepEqual(seen, ['one', 'half of a record ', 'after the truncation', 'and more']);
    } finally {
      dir.cleanup();
    }
  },
);

test('CriLogParser.flush: partial records waiting for their end come out as lines, oldest first; a half-written line is dropped', () => {
  const p = new CriLogParser();
  assert.deepEqual(p.push(`${T(2)} stderr P err part\n${T(1)} stdout P out \n${T(3)} stdout P part\n${T(4)} stdout F unfin`), []);
  assert.deepEqual(
    p.flush().map((r) => [r.stream, r.text, r.time]),
    [
      ['stdout', 'out part', T(1)],
      ['stderr', 'err part', T(2)],
    ],
  );
  assert.deepEqual(p.flush(), []);
  // Nothing of before the flush joins what comes after it.
  assert.deepEqual(
    p.push(`${T(5)} stdout F new\n`).map((r) => r.text),
    ['new'],
  );
});

/** A seeded generator (mulberry32): the same synthetic log on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** RFC3339Nano times in order, a microsecond apart. */
const nano = (i: number) =>
  new Date(Date.parse('2026-01-01T00:00:00Z') + Math.floor(i / 1000))
    .toISOString()
    .replace('Z', `${String((i % 1000) * 1000).padStart(6, '0')}Z`);

/**
 * A CRI log as containerd writes it, with stdout and stderr interleaved, long lines split into
 * partial (P) records of up to 16 KiB (some of them across the 64 KiB chunks read from the end),
 * multi-byte characters, and a line being written at the end on each stream.
 */
function syntheticLog(lines: number, seed: number): string {
  const rnd = random(seed);
  const parts: string[] = [];
  let t = 0;
  for (let i = 0; i < lines; i++) {
    const stream = rnd() < 0.3 ? 'stderr' : 'stdout';
    const long = rnd() < 0.02;
    const text = `n=${i} ${long ? 'é'.repeat(Math.floor(rnd() * 30_000)) : 'x'.repeat(Math.floor(rnd() * 40))}`;
    for (let at = 0; at < text.length; at += 8000) {
      const last = at + 8000 >= text.length;
      parts.push(`${nano(t++)} ${stream} ${last ? 'F' : 'P'} ${text.slice(at, at + 8000)}\n`);
      // The other stream writes between two partial records of a long line.
      if (!last && rnd() < 0.5) parts.push(`${nano(t++)} ${stream === 'stdout' ? 'stderr' : 'stdout'} F between-${i}-${at}\n`);
    }
  }
  parts.push(`${nano(t++)} stdout P still being written \n`, `${nano(t++)} stderr P also `, '');
  return parts.join('');
}

/** Splits text into a rotated gzipped file, a rotated plain file and the current one, at byte positions (not line ends). */
function writeRotated(dir: string, text: string, cuts: [number, number]): string {
  const path = join(dir, '0.log');
  const bytes = Buffer.from(text);
  writeFileSync(`${path}.20260101-000001.000.gz`, gzipSync(bytes.subarray(0, cuts[0])));
  writeFileSync(`${path}.20260101-000002.000`, bytes.subarray(cuts[0], cuts[1]));
  writeFileSync(path, bytes.subarray(cuts[1]));
  return path;
}

test(
  'logs --tail reads from the end: the same lines as reading it all, partial records joined across chunks, files and a gzipped ' +
    'rotated file',
  async () => {
    const dir = scratchDir('unit-logs-tail');
    try {
      const text = syntheticLog(3000, 7);
      const size = Buffer.byteLength(text);
      for (const cuts of [
        [Math.floor(size / 3), Math.floor((2 * size) / 3)],
        [size - 100_000, size - 70_000],
        [10, 20],
      ] as [number, number][]) {
        const path = writeRotated(dir.dir, text, cuts);
        const all = await readContainerLog(path);
        assert.ok(all.length > 3000 && all.some((r) => r.text.length > 16_000), 'long lines made of partial records');
        assert.deepEqual(all.at(-1)!.text.startsWith('n=2999 ') || all.at(-1)!.text.startsWith('between-2999-'), true);
        for (const tail of [0, 1, 2, 3, 10, 100, 1000, all.length, all.length + 5]) {
          assert.deepEqual(
            await readContainerLogTail(path, { tail }),
            selectRecords(all, { tail }),
            `tail ${tail}, files cut at ${cuts.join(', ')}`,
          );
        }
        const sinceMs = all[all.length - 50]!.timeMs;
        assert.deepEqual(await readContainerLogTail(path, { tail: 20, sinceMs }), selectRecords(all, { tail: 20, sinceMs }));
        assert.deepEqual(await readContainerLogTail(path, { tail: 1000, sinceMs }), selectRecords(all, { tail: 1000, sinceMs }));
        assert.deepEqual(await readContainerLogTail(path, { sinceMs }), selectRecords(all, { sinceMs }));
        const streamed: number[] = [];
        await streamContainerLog(path, (r) => streamed.push(r.length));
        assert.equal(
          streamed.reduce((a, b) => a + b, 0),
          all.length,
        );
      }
    } finally {
      dir.cleanup();
    }
  },
);

test(
  'a log of 400,000 lines, rotated and gzipped: the tail, the whole stream and a follow read it without holding it ' + 'in one call',
  async () => {
    const dir = scratchDir('unit-logs-large');
    try {
      let text = '';
      for (let i = 1; i <= 400_000; i++) text += `${nano(i)} stdout F line ${i}\n`;
      const size = Buffer.byteLength(text);
      const path = writeRotated(dir.dir, text, [Math.floor(size * 0.4), Math.floor(size * 0.8)]);
      assert.deepEqual(
        (await readContainerLogTail(path, { tail: 2 })).map((r) => r.text),
        ['line 399999', 'line 400000'],
      );
      // The whole log, streamed in bounded batches (each once), and as one list.
      let count = 0;
      let largest = 0;
      await streamContainerLog(path, (r) => {
        count += r.length;
        largest = Math.max(largest, r.length);
      });
      assert.equal(count, 400_000);
      assert.ok(largest < 10_000, `batches of a chunk's lines (${largest})`);
      const all = await readContainerLog(path);
      assert.equal(all.length, 400_000);
      assert.equal(all[200_000]!.text, 'line 200001');
      // logs -f: the backlog whole (in batches), or its tail, then what is appended.
      let last = 400_000;
      for (const selection of [{}, { tail: 2 }]) {
        const backlog: string[] = [];
        let calls = 0;
        const seen: string[] = [];
        const next = ++last;
        const steps = [() => appendFileSync(path, `${nano(next)} stdout F line ${next}\n`)];
        await followContainerLog({
          path,
          selection,
          backlog: (r) => {
            calls++;
            for (const x of r) backlog.push(x.text);
          },
          onRecords: (r) => seen.push(...r.map((x) => x.text)),
          shouldStop: () => steps.length === 0,
          sleep: async () => steps.shift()?.(),
        });
        if ('tail' in selection) assert.deepEqual(backlog, [`line ${next - 2}`, `line ${next - 1}`]);
        else {
          assert.equal(backlog.length, 400_000);
          assert.equal(backlog.at(-1), 'line 400000');
          assert.ok(calls > 1, 'in batches');
        }
        assert.deepEqual(seen, [`line ${next}`]);
      }
    } finally {
      dir.cleanup();
    }
  },
);

test(
  'logs -f --tail: a line in progress when the tail is read (partial records, a half-written file line) is printed whole ' + 'once it ends',
  async () => {
    const dir = scratchDir('unit-logs-follow-tail');
    try {
      const c = join(dir.dir, 'app');
      mkdirSync(c);
      const log = join(c, '0.log');
      writeFileSync(`${log}.20260101-000001.000`, `${T(1)} stdout F one\n${T(2)} stderr P err-begun \n`);
      writeFileSync(
        log,
        `${T(3)} stdout F two\n${T(4)} stdout P out-begun \n${T(5)} stdout F three\n${T(6)} stdout P out-more \n${T(7)} stderr F fo`,
      );
      const steps = [() => appendFileSync(log, `ur\n${T(8)} stdout F out-end\n${T(9)} stdout F five\n`)];
      const backlog: string[] = [];
      const seen: string[] = [];
      await followContainerLog({
        path: log,
        selection: { tail: 2 },
        backlog: (r) => backlog.push(...r.map((x) => x.text)),
        onRecords: (r) => seen.push(...r.map((x) => x.text)),
        shouldStop: () => steps.length === 0,
        sleep: async () => steps.shift()?.(),
      });
      assert.deepEqual(backlog, ['two', 'out-begun three']);
      assert.deepEqual(seen, ['err-begun four', 'out-more out-end', 'five']);
    } finally {
      dir.cleanup();
    }
  },
);
