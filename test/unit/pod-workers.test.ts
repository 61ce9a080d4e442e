import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { PodWorkers, type PodSyncer, type UpdateType } from '../../src/core/workers/pod-workers.js';
import { makePod } from '../support/builders.js';

/** A syncer whose syncs finish only when the test says so. */
class ControlledSyncer implements PodSyncer {
  readonly log: string[] = [];
  active = 0;
  maxActivePerPod = new Map<string, number>();
  private readonly activeByPod = new Map<string, number>();
  private pending: (() => void)[] = [];
  failNext = false;
  terminal = false;

  private async work(pod: IPod, what: string): Promise<void> {
    const uid = pod.metadata!.uid!;
    this.log.push(`${what}:${pod.metadata!.name}`);
    const n = (this.activeByPod.get(uid) ?? 0) + 1;
    this.activeByPod.set(uid, n);
    this.maxActivePerPod.set(uid, Math.max(this.maxActivePerPod.get(uid) ?? 0, n));
    this.active++;
    await new Promise<void>((resolve) => this.pending.push(resolve));
    this.active--;
    this.activeByPod.set(uid, n - 1);
  }

  release(): void {
    const p = this.pending;
    this.pending = [];
    p.forEach((r) => r());
  }

  async syncPod(pod: IPod, type: UpdateType): Promise<boolean> {
    await this.work(pod, `sync(${type})`);
    if (this.failNext) {
      this.failNext = false;
      throw new Error('boom');
    }
    return this.terminal;
  }
  async syncTerminatingPod(pod: IPod): Promise<void> {
    await this.work(pod, 'terminating');
  }
  async syncTerminatedPod(pod: IPod): Promise<void> {
    this.log.push(`terminated:${pod.metadata!.name}`);
  }
}

const tick = () => new Promise((r) => setImmediate(r));

test('one lane per pod: updates during a sync are coalesced, never concurrent', async () => {
  const syncer = new ControlledSyncer();
  const workers = new PodWorkers(syncer, { clock: new FakeClock() });
  const pod = makePod({ uid: 'a' });
  workers.updatePod({ type: 'create', pod });
  workers.updatePod({ type: 'update', pod });
  workers.updatePod({ type: 'sync', pod });
  await tick();
  assert.equal(syncer.active, 1);
  syncer.release();
  await tick();
  await tick();
  syncer.release();
  await workers.waitIdle();
  // create, then only the latest of the two queued updates.
  assert.deepEqual(syncer.log, ['sync(create):web', 'sync(sync):web']);
  assert.equal(syncer.maxActivePerPod.get('a'), 1);
});

test('pods never wait on each other', async () => {
  const syncer = new ControlledSyncer();
  const workers = new PodWorkers(syncer, { clock: new FakeClock() });
  workers.updatePod({ type: 'create', pod: makePod({ uid: 'a', name: 'a' }) });
  workers.updatePod({ type: 'create', pod: makePod({ uid: 'b', name: 'b' }) });
  await tick();
  assert.equal(syncer.active, 2);
  syncer.release();
  await workers.waitIdle();
});

test('syncing -> terminating -> terminated; a terminating pod is never synced back to life', async () => {
  const syncer = new ControlledSyncer();
  const workers = new PodWorkers(syncer, { clock: new FakeClock() });
  const pod = makePod({ uid: 'a' });
  workers.updatePod({ type: 'create', pod });
  await tick();
  assert.equal(workers.state('a'), 'syncing');
  workers.updatePod({ type: 'kill', pod });
  workers.updatePod({ type: 'sync', pod });
  assert.equal(workers.state('a'), 'terminating');
  syncer.release();
  await tick();
  await tick();
  syncer.release();
  await workers.waitIdle();
  assert.equal(workers.state('a'), 'terminated');
  assert.deepEqual(syncer.log, ['sync(create):web', 'terminating:web', 'terminated:web']);
  workers.updatePod({ type: 'sync', pod });
  await workers.waitIdle();
  assert.equal(syncer.log.length, 3);
});

test('a failed sync is retried after the backoff period; a good one after the resync interval', async () => {
  const syncer = new ControlledSyncer();
  const clock = new FakeClock();
  const workers = new PodWorkers(syncer, { clock, backOffPeriodMs: 10_000, resyncIntervalMs: 60_000 });
  const pod = makePod({ uid: 'a' });
  syncer.failNext = true;
  workers.updatePod({ type: 'create', pod });
  await tick();
  syncer.release();
  await workers.waitIdle();
  assert.equal(workers.lastError('a'), 'boom');
  clock.advance(9_999);
  assert.deepEqual(workers.syncDue(), []);
  clock.advance(1);
  assert.deepEqual(workers.syncDue(), ['a']);
  await tick();
  syncer.release();
  await workers.waitIdle();
  assert.equal(workers.lastError('a'), undefined);
  clock.advance(59_999);
  assert.deepEqual(workers.syncDue(), []);
  clock.advance(1);
  assert.deepEqual(workers.syncDue(), ['a']);
  await tick();
  syncer.release();
  await workers.waitIdle();
});

test('requeueAfter brings a pod forward, never later', async () => {
  const syncer = new ControlledSyncer();
  const clock = new FakeClock();
  const workers = new PodWorkers(syncer, { clock, resyncIntervalMs: 60_000 });
  const pod = makePod({ uid: 'a' });
  workers.updatePod({ type: 'create', pod });
  await tick();
  syncer.release();
  await workers.waitIdle();
  workers.requeueAfter('a', 5_000);
  workers.requeueAfter('a', 30_000);
  clock.advance(5_000);
  assert.deepEqual(workers.syncDue(), ['a']);
  await tick();
  syncer.release();
  await workers.waitIdle();
});

test('a terminal pod is not resynced', async () => {
  const syncer = new ControlledSyncer();
  const clock = new FakeClock();
  const workers = new PodWorkers(syncer, { clock, resyncIntervalMs: 1_000 });
  syncer.terminal = true;
  workers.updatePod({ type: 'create', pod: makePod({ uid: 'a' }) });
  await tick();
  syncer.release();
  await workers.waitIdle();
  clock.advance(10_000);
  assert.deepEqual(workers.syncDue(), []);
});

/** An admission the test opens, one sync at a time. */
function gate(): { admit: <T>(sync: () => Promise<T>) => Promise<T>; open(): void; waiting(): number } {
  const waiters: (() => void)[] = [];
  return {
    admit: <T>(sync: () => Promise<T>) => new Promise<void>((resolve) => waiters.push(resolve)).then(sync),
    open: () => waiters.shift()?.(),
    waiting: () => waiters.length,
  };
}

test('a sync waits for admission and then takes the latest update; a termination does not wait', async () => {
  const syncer = new ControlledSyncer();
  const g = gate();
  const workers = new PodWorkers(syncer, { clock: new FakeClock(), admit: g.admit });
  const a = makePod({ uid: 'a', name: 'a' });
  workers.updatePod({ type: 'create', pod: a });
  workers.updatePod({ type: 'update', pod: makePod({ uid: 'a', name: 'a2' }) });
  await tick();
  assert.equal(g.waiting(), 1);
  assert.deepEqual(syncer.log, [], 'no sync before admission');
  g.open();
  await tick();
  assert.deepEqual(syncer.log, ['sync(update):a2']);
  syncer.release();
  await workers.waitIdle();
  // A pod killed while its sync waits for admission is terminated without it.
  const b = makePod({ uid: 'b', name: 'b' });
  workers.updatePod({ type: 'create', pod: b });
  await tick();
  assert.equal(g.waiting(), 1);
  workers.updatePod({ type: 'kill', pod: b });
  g.open();
  await tick();
  syncer.release();
  await workers.waitIdle();
  assert.deepEqual(syncer.log.slice(1), ['terminating:b', 'terminated:b']);
  assert.equal(g.waiting(), 0);
});
