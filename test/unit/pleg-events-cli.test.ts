import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { MANAGED_BY_LABEL } from '../../src/core/kuberuntime/labels.js';
import { GenericPleg, type PodLifecycleEvent } from '../../src/core/pleg/generic.js';
import { printPlegEvents } from '../../src/cli/pleg-events.js';

test('pleg-events --follow prints each event of the first relist once: a running two-container pod gives 3 lines, not 6', async () => {
  const fake = await FakeRuntime.start({});
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 10_000, pullTimeoutMs: 10_000 });
  try {
    fake.seed({
      pods: 1,
      containersPerPod: 2,
      labels: () => ({
        'io.kubernetes.pod.name': 'two',
        'io.kubernetes.pod.namespace': 'default',
        'io.kubernetes.pod.uid': 'uid-two',
        [MANAGED_BY_LABEL]: 'podctl',
      }),
    });
    const clock = new FakeClock();
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent', nodeName: 'unit' });
    const pleg = new GenericPleg({
      runtime: client,
      clock,
      inspect: (uid, name, namespace) => kubelet.runtimeManager.getPodStatus(uid, name, namespace),
    });
    const printed: PodLifecycleEvent[] = [];
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const done = printPlegEvents(pleg, (e) => printed.push(e), { follow: true, stopped });
    // The start() relist (due at once) finds nothing new.
    for (let i = 0; i < 20 && clock.pendingTimers() > 0; i++) {
      clock.advance(0);
      await new Promise((r) => setImmediate(r));
    }
    stop();
    await done;
    const lines = printed.map((e) => `${e.type} ${e.data}`);
    assert.equal(lines.length, 3, lines.join('\n'));
    assert.equal(new Set(lines).size, 3, 'no event printed twice');
    assert.ok(printed.every((e) => e.type === 'ContainerStarted'));
  } finally {
    client.close();
    await fake.stop();
  }
});
