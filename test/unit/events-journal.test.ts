import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '../../src/core/clock.js';
import { EventRecorder, MAX_EVENTS_PER_POD } from '../../src/core/events.js';
import { scratchDir } from '../support/e2e.js';

const pod = { uid: 'u1', namespace: 'default', name: 'web' };
const other = { uid: 'u2', namespace: 'default', name: 'db' };

test('events outlive the agent: a new recorder on the same journal has them, counts included', () => {
  const dir = scratchDir('unit-events');
  try {
    const journal = join(dir.dir, 'events.jsonl');
    const clock = new FakeClock(Date.parse('2026-11-23T10:00:00Z'));
    const first = new EventRecorder(clock, { journal });
    first.record(pod, 'Normal', 'Started', 'Started container app', 'app');
    for (let i = 0; i < 3; i++) {
      clock.advance(10_000);
      first.record(pod, 'Warning', 'BackOff', 'Back-off restarting failed container app', 'app');
    }
    first.record(other, 'Normal', 'Pulled', 'Container image "busybox:1.36" already present on machine', 'app');
    // A line cut short by a crash is skipped, not fatal.
    appendFileSync(journal, '{"uid":"u1","reas');

    const second = new EventRecorder(clock, { journal });
    const events = second.eventsFor('u1');
    assert.deepEqual(
      events.map((e) => [e.reason, e.count]),
      [
        ['Started', 1],
        ['BackOff', 3],
      ],
    );
    assert.equal(events[1]!.lastTimestamp - events[1]!.firstTimestamp, 20_000);
    assert.equal(second.eventsFor('u2').length, 1);

    // A repeat after the restart still aggregates into the same row.
    second.record(pod, 'Warning', 'BackOff', 'Back-off restarting failed container app', 'app');
    second.forget('u2');
    const third = new EventRecorder(clock, { journal });
    assert.equal(third.eventsFor('u1').find((e) => e.reason === 'BackOff')!.count, 4);
    assert.deepEqual(third.eventsFor('u2'), [], 'a forgotten pod stays forgotten');
  } finally {
    dir.cleanup();
  }
});

test('the journal is bounded: rewritten from memory once it grows past its size', () => {
  const dir = scratchDir('unit-events-bound');
  try {
    const journal = join(dir.dir, 'events.jsonl');
    const clock = new FakeClock(Date.parse('2026-11-23T10:00:00Z'));
    const rec = new EventRecorder(clock, { journal, maxJournalBytes: 60_000 });
    for (let i = 0; i < 2_000; i++) {
      clock.advance(60_000); // an hour passes every 60 events
      rec.record(pod, 'Warning', 'Unhealthy', `Readiness probe failed: attempt ${i}`, 'app');
    }
    assert.ok(statSync(journal).size <= 60_000 + 1_000, `journal ${statSync(journal).size} bytes`);
    const reloaded = new EventRecorder(clock, { journal });
    const kept = reloaded.eventsFor('u1');
    assert.ok(kept.length >= MAX_EVENTS_PER_POD - 1 && kept.length <= MAX_EVENTS_PER_POD + 60, `${kept.length} kept`);
    assert.match(kept.at(-1)!.message, /attempt 1999$/, 'the newest are kept');
    assert.ok(readFileSync(journal, 'utf8').endsWith('\n'));
  } finally {
    dir.cleanup();
  }
});
