import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CriLogParser, containerLogFiles, followContainerLog, parseCriLine, readLogFile, selectRecords } from '../../src/core/logs/index.js';
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
  assert.deepEqual(p.push('t\n').map((r) => r.text), ['next']);
});

test('--tail and --since select from the joined lines', () => {
  const records = new CriLogParser().push([1, 2, 3, 4, 5].map((s) => `${T(s)} stdout F line ${s}\n`).join(''));
  assert.deepEqual(selectRecords(records, { tail: 2 }).map((r) => r.text), ['line 4', 'line 5']);
  assert.deepEqual(selectRecords(records, { tail: 0 }), []);
  assert.equal(selectRecords(records, { tail: -1 }).length, 5);
  assert.deepEqual(selectRecords(records, { sinceMs: Date.parse(T(4)) }).map((r) => r.text), ['line 4', 'line 5']);
  assert.deepEqual(selectRecords(records, { sinceMs: Date.parse(T(2)), tail: 1 }).map((r) => r.text), ['line 5']);
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
    assert.deepEqual((await readLogFile(join(c, '1.log'))).map((r) => r.text), ['six (restarted)', 'seven']);
    assert.deepEqual(await readLogFile(join(c, '9.log')), []);
  } finally {
    dir.cleanup();
  }
});

test('following: a file truncated in place is read again from its start; what was left unfinished does not run into the first new line', async () => {
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
});

test('CriLogParser.flush: partial records waiting for their end come out as lines, oldest first; a half-written line is dropped', () => {
  const p = new CriLogParser();
  assert.deepEqual(p.push(`${T(2)} stderr P err part\n${T(1)} stdout P out \n${T(3)} stdout P part\n${T(4)} stdout F unfin`), []);
  assert.deepEqual(p.flush().map((r) => [r.stream, r.text, r.time]), [['stdout', 'out part', T(1)], ['stderr', 'err part', T(2)]]);
  assert.deepEqual(p.flush(), []);
  // Nothing of before the flush joins what comes after it.
  assert.deepEqual(p.push(`${T(5)} stdout F new\n`).map((r) => r.text), ['new']);
});
