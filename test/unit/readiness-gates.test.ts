import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPodCondition } from 'kubernetes-models/v1';
import { StatusManager } from '../../src/core/status/manager.js';
import { generatePodStatus } from '../../src/core/status/generate.js';
import { container, instance, makePod, podStatus, sandbox } from '../support/builders.js';

const readyOf = (conditions: IPodCondition[] | undefined) => conditions?.find((c) => c.type === 'Ready');

test("Ready waits for every readiness gate's condition to be True, in the kubelet's words; ContainersReady does not", () => {
  const app = container('app');
  const pod = makePod({ containers: [app] });
  pod.spec!.readinessGates = [{ conditionType: 'example.com/lb' }, { conditionType: 'example.com/feature' }];
  const runtime = podStatus(pod, [sandbox()], [instance(app, { state: 'running' })]);
  const status = (podConditions: IPodCondition[]) => generatePodStatus({ pod, runtime, now: 1_000_000, ready: () => true, podConditions });

  const none = status([]);
  assert.equal(none.conditions!.find((c) => c.type === 'ContainersReady')!.status, 'True');
  assert.deepEqual(
    [readyOf(none.conditions)!.status, readyOf(none.conditions)!.reason, readyOf(none.conditions)!.message],
    [
      'False',
      'ReadinessGatesNotReady',
      'corresponding condition of pod readiness gate "example.com/lb" does not exist., corresponding condition of pod readiness gate "example.com/feature" does not exist.',
    ],
  );

  const manager = new StatusManager();
  manager.setCondition('u', { type: 'example.com/lb', status: 'True' }, 1_000_000);
  manager.setCondition('u', { type: 'example.com/feature', status: 'False', reason: 'Rollout' }, 1_000_000);
  const one = status(manager.conditions('u'));
  assert.equal(readyOf(one.conditions)!.message, 'the status of pod readiness gate "example.com/feature" is not "True", but False');
  // The gates' own conditions are in the status, as the API server keeps them.
  assert.deepEqual(
    one.conditions!.filter((c) => c.type.startsWith('example.com/')).map((c) => [c.type, c.status, c.reason]),
    [
      ['example.com/lb', 'True', undefined],
      ['example.com/feature', 'False', 'Rollout'],
    ],
  );

  manager.setCondition('u', { type: 'example.com/feature', status: 'True' }, 2_000_000);
  const all = status(manager.conditions('u'));
  assert.equal(readyOf(all.conditions)!.status, 'True');
  assert.equal(readyOf(all.conditions)!.reason, undefined);

  // Unready containers come first, as in the kubelet: the gates are not looked at.
  const notReady = generatePodStatus({ pod, runtime, now: 1_000_000, ready: () => false, podConditions: manager.conditions('u') });
  assert.equal(readyOf(notReady.conditions)!.reason, 'ContainersNotReady');
});

test('a condition set again with the same status keeps its transition time; forgetting the pod drops its conditions', () => {
  const manager = new StatusManager();
  const first = manager.setCondition('u', { type: 'example.com/lb', status: 'False' }, 1_000);
  assert.equal(
    manager.setCondition('u', { type: 'example.com/lb', status: 'False', message: 'still' }, 5_000).lastTransitionTime,
    first.lastTransitionTime,
  );
  assert.notEqual(
    manager.setCondition('u', { type: 'example.com/lb', status: 'True' }, 9_000).lastTransitionTime,
    first.lastTransitionTime,
  );
  manager.forget('u');
  assert.deepEqual(manager.conditions('u'), []);
});
