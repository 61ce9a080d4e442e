import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computePodActions, isNoop } from '../../src/core/kuberuntime/actions.js';
import { hashContainer } from '../../src/core/kuberuntime/hash.js';
import { container, instance, makePod, podStatus, sandbox } from '../support/builders.js';
import { podActionCases as cases, summary } from '../support/pod-action-cases.js';

const app = container('app');

test('computePodActions, table cases as in kuberuntime_manager_test', async (t) => {
  for (const c of cases) {
    await t.test(c.name, () => {
      const actions = computePodActions(c.pod, c.status(c.pod), c.probes);
      assert.deepEqual(summary(actions), c.want);
      const w = c.want;
      assert.equal(isNoop(actions), !w.killPod && !w.createSandbox && w.init.length + w.start.length + w.kill.length === 0);
    });
  }
});

test('the start reasons say why a container starts', () => {
  const pod = makePod({ restartPolicy: 'Always' });
  const actions = computePodActions(pod, podStatus(pod, [sandbox()], [instance(app, { state: 'exited', exitCode: 1 })]));
  assert.equal(actions.containersToStart[0]?.reason, 'exited with code 1 and restartPolicy is Always');
  const fresh = computePodActions(pod, podStatus(pod, [], []));
  assert.equal(fresh.sandboxReason, 'no sandbox exists');
});

test(
  'a container spec is serialised for its hash once per object: the periodic resync of an unchanged pod does not ' + 're-serialise it',
  () => {
    let reads = 0;
    const container = { name: 'app', image: 'busybox:1.36' };
    Object.defineProperty(container, 'command', { enumerable: true, get: () => (reads++, ['sleep', '9']) });
    const first = hashContainer(container);
    assert.equal(hashContainer(container), first);
    assert.equal(reads, 1, 'the second hash of the same object reads nothing');
    assert.notEqual(
      hashContainer({ name: 'app', image: 'busybox:1.36', command: ['sleep', '10'] }),
      first,
      'a new object, a spec change: a new hash',
    );
    assert.equal(
      hashContainer({ name: 'app', image: 'busybox:1.36', command: ['sleep', '9'] }),
      first,
      'an equal spec in another object: the same hash',
    );
  },
);
