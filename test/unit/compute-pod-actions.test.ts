import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computePodActions, isNoop } from '../../src/core/kuberuntime/actions.js';
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
