import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/core/clock.js';
import { Backoff, CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS } from '../../src/core/util/backoff.js';

test('CrashLoopBackOff delays: 10 s doubling to 300 s', () => {
  const clock = new FakeClock();
  const b = new Backoff(clock, CONTAINER_BACKOFF_INITIAL_MS, CONTAINER_BACKOFF_MAX_MS);
  const delays: number[] = [];
  for (let i = 0; i < 7; i++) {
    delays.push(b.next('k', clock.now()));
    clock.advance(1000);
  }
  assert.deepEqual(delays, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
});

test('in backoff until the delay since the event has passed', () => {
  const clock = new FakeClock();
  const b = new Backoff(clock, 10_000, 300_000);
  const exitedAt = clock.now();
  b.next('k', exitedAt);
  assert.equal(b.isInBackOffSince('k', exitedAt), true);
  clock.advance(9_999);
  assert.equal(b.isInBackOffSince('k', exitedAt), true);
  assert.equal(b.remainingSince('k', exitedAt), 1);
  clock.advance(1);
  assert.equal(b.isInBackOffSince('k', exitedAt), false);
});

test('backoff resets after 2 x max without failures (10 minutes for containers)', () => {
  const clock = new FakeClock();
  const b = new Backoff(clock, 10_000, 300_000);
  b.next('k', clock.now());
  b.next('k', clock.now());
  assert.equal(b.get('k'), 20_000);
  clock.advance(600_001);
  assert.equal(b.next('k', clock.now()), 10_000);
  b.next('other', clock.now());
  clock.advance(600_001);
  b.gc();
  assert.equal(b.size(), 0);
});

test('keys are independent (a spec change gets a fresh key)', () => {
  const clock = new FakeClock();
  const b = new Backoff(clock, 10_000, 300_000);
  b.next('pod_ns_uid_app_hash1');
  b.next('pod_ns_uid_app_hash1');
  assert.equal(b.next('pod_ns_uid_app_hash2'), 10_000);
});

test('image pulls back off from the last failure (isInBackOffSinceUpdate)', () => {
  const clock = new FakeClock();
  const b = new Backoff(clock, 10_000, 300_000);
  b.next('img', clock.now());
  clock.advance(9_999);
  assert.equal(b.isInBackOffSinceUpdate('img'), true);
  assert.equal(b.remainingSinceUpdate('img'), 1);
  clock.advance(1);
  assert.equal(b.isInBackOffSinceUpdate('img'), false);
  b.next('img', clock.now());
  clock.advance(19_999);
  assert.equal(b.isInBackOffSinceUpdate('img'), true);
});
