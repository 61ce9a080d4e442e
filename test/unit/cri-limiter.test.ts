import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallLimiter } from '../../src/core/cri/limiter.js';
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
    const statuses = Array.from({ length: 40 }, (_, i) => client.podSandboxStatus(`nosuch-${i}`).catch(() => undefined).then(() => done.push('status')));
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
