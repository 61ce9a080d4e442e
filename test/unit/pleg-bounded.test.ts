import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { MANAGED_BY_LABEL } from '../../src/core/kuberuntime/labels.js';
import { GenericPleg, RELIST_INSPECT_CONCURRENCY } from '../../src/core/pleg/generic.js';
import { forEachLimited } from '../../src/core/util/concurrency.js';

test('forEachLimited: every item once, never more than the limit in flight', async () => {
  let inFlight = 0;
  let peak = 0;
  const seen: number[] = [];
  await forEachLimited([...Array(50).keys()], 4, async (i) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    await new Promise((r) => setImmediate(r));
    seen.push(i);
    inFlight--;
  });
  assert.deepEqual(
    [...seen].sort((a, b) => a - b),
    [...Array(50).keys()],
  );
  assert.equal(peak, 4);
  await forEachLimited([], 4, async () => assert.fail('no item, no call'));
});

test('a relist that finds many new pods inspects them a bounded number at a time, and inspects every one', async () => {
  const fake = await FakeRuntime.start({});
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 10_000, pullTimeoutMs: 10_000 });
  try {
    fake.seed({
      pods: 600,
      containersPerPod: 2,
      labels: (i) => ({
        'io.kubernetes.pod.name': `p${i}`,
        'io.kubernetes.pod.namespace': 'default',
        'io.kubernetes.pod.uid': `uid-${i}`,
        [MANAGED_BY_LABEL]: 'podctl',
      }),
    });
    const kubelet = newKubelet({ runtime: client, images: client, clock: new FakeClock(), logRoot: '/nonexistent', nodeName: 'unit' });
    let inFlight = 0;
    let peak = 0;
    const pleg = new GenericPleg({
      runtime: client,
      clock: new FakeClock(),
      inspect: async (uid, name, namespace) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        try {
          return await kubelet.runtimeManager.getPodStatus(uid, name, namespace);
        } finally {
          inFlight--;
        }
      },
    });
    const events = await pleg.relist();
    assert.equal(events.filter((e) => e.type === 'ContainerStarted').length, 1800);
    assert.equal(pleg.cache.size(), 600, 'every new pod inspected');
    assert.ok(peak <= RELIST_INSPECT_CONCURRENCY, `at most ${RELIST_INSPECT_CONCURRENCY} pods inspected at once (peak ${peak})`);
    assert.ok(peak > 1, 'still in parallel');
  } finally {
    client.close();
    await fake.stop();
  }
});
