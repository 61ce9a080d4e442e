import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallLimiter, type LimiterTimers } from '../../src/core/cri/limiter.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';

test('CallLimiter: up to the limit at once, then in turn, the high-priority queue first; a release counts once', async () => {
  const l = new CallLimiter(2);
  const a = await l.acquire('normal');
  const b = await l.acquire('normal');
  const order: string[] = [];
  const c = l.acquire('normal').then((r) => (order.push('normal'), r));
  const d = l.acquire('high').then((r) => (order.push('high'), r));
  assert.equal(l.queued, 2);
  a();
  a(); // twice: still one slot
  await d;
  assert.deepEqual(order, ['high']);
  assert.equal(l.queued, 1);
  b();
  (await c)();
  assert.deepEqual(order, ['high', 'normal']);
  assert.equal(l.maxObserved, 2);
});

test('CriClient keeps at most maxInFlight calls on its channel; a list asked for later goes ahead of the queued status calls', async () => {
  const fake = await FakeRuntime.start({ images: [] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 10_000, pullTimeoutMs: 10_000, maxInFlight: 4 });
  try {
    fake.setLatency('PodSandboxStatus', 20);
    const done: string[] = [];
    const statuses = Array.from({ length: 40 }, (_, i) =>
      client
        .podSandboxStatus(`nosuch-${i}`)
        .catch(() => undefined)
        .then(() => done.push('status')),
    );
    const list = client.listContainers().then(() => done.push('list'));
    await Promise.all([...statuses, list]);
    assert.equal(client.limiter.maxObserved, 4);
    assert.equal(fake.calls().PodSandboxStatus, 40, 'every call reached the runtime');
    assert.ok(done.indexOf('list') < 10, `the list went ahead of the queue (answered ${done.indexOf('list') + 1}th)`);
  } finally {
    client.close();
    await fake.stop();
  }
});

test(
  'CallLimiter.whenUncongested: at once below the limit of queued calls; otherwise in turn as calls drain, and everyone ' + 'once idle',
  async () => {
    const l = new CallLimiter(2);
    await l.whenUncongested();
    const slots = [await l.acquire('normal'), await l.acquire('normal')];
    const queued = [l.acquire('normal'), l.acquire('normal')];
    assert.equal(l.queued, 2);
    const admitted: number[] = [];
    const waits = [1, 2, 3, 4, 5, 6].map((n) => l.whenUncongested().then(() => admitted.push(n)));
    await tick();
    assert.equal(admitted.length, 0, 'two calls queued: congested');
    slots[0]!(); // one queued call takes the slot: one left queued, room for one
    await tick();
    assert.deepEqual([...admitted], [1]);
    // Others already wait: a newcomer waits behind them, though the queue is short now.
    const late = l.whenUncongested().then(() => admitted.push(7));
    slots[1]!(); // the other queued call runs: nothing queued, room for two
    await tick();
    assert.deepEqual([...admitted], [1, 2, 3]);
    (await queued[0]!)(); // one call still under way: room for two
    await tick();
    assert.deepEqual([...admitted], [1, 2, 3, 4, 5]);
    (await queued[1]!)(); // idle: everyone left is let in
    await Promise.all([...waits, late]);
    assert.deepEqual([...admitted], [1, 2, 3, 4, 5, 6, 7]);
  },
);

const tick = () => new Promise((r) => setImmediate(r));

/** Timers a test fires by hand. */
function manualTimers(): LimiterTimers & { fire(): void; pending(): number } {
  const pending = new Map<number, () => void>();
  let next = 0;
  return {
    set: (fn) => (pending.set(++next, fn), next),
    clear: (handle) => void pending.delete(handle as number),
    fire: () => {
      const fns = [...pending.values()];
      pending.clear();
      for (const fn of fns) fn();
    },
    pending: () => pending.size,
  };
}

test('CallLimiter.admitted: syncs asked for together are let in `limit` at a time, each counted until it ends or its hold runs out', async () => {
  const timers = manualTimers();
  const l = new CallLimiter(2, timers);
  const started: number[] = [];
  const finish = new Map<number, () => void>();
  const sync = (n: number) =>
    l.admitted(async () => {
      started.push(n);
      await new Promise<void>((resolve) => finish.set(n, resolve));
      return n;
    });
  const syncs = [1, 2, 3, 4, 5].map(sync);
  await tick();
  // Nothing is queued yet, but two syncs let in fill the limit: the rest wait.
  assert.deepEqual(started, [1, 2]);
  finish.get(1)!();
  assert.equal(await syncs[0], 1);
  await tick();
  assert.deepEqual(started, [1, 2, 3], 'one ended: one more is let in');
  // Syncs 2 and 3 go on (a pull, a grace period): once their hold runs out they no longer count.
  timers.fire();
  await tick();
  assert.deepEqual(started, [1, 2, 3, 4, 5]);
  for (const n of [2, 3, 4, 5]) finish.get(n)!();
  assert.deepEqual(await Promise.all(syncs), [1, 2, 3, 4, 5]);
  assert.equal(timers.pending(), 0, 'every hold cleared as its sync ended');
  // Idle again: a sync is let in at once.
  assert.equal(await l.admitted(async () => 'now'), 'now');
});
