import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IContainerStatus } from 'kubernetes-models/v1';
import { getPhase } from '../../src/core/status/phase.js';
import { generatePodStatus, qosClass } from '../../src/core/status/generate.js';
import { container, instance, makePod, podStatus, sandbox } from '../support/builders.js';

const running = (name: string): IContainerStatus => ({
  name,
  image: 'x',
  imageID: '',
  ready: true,
  restartCount: 0,
  state: { running: {} },
});
const exited = (name: string, exitCode: number): IContainerStatus => ({
  name,
  image: 'x',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode } },
});
const waiting = (name: string, reason: string, lastExit?: number): IContainerStatus => ({
  name,
  image: 'x',
  imageID: '',
  ready: false,
  restartCount: 1,
  state: { waiting: { reason } },
  lastState: lastExit === undefined ? undefined : { terminated: { exitCode: lastExit } },
});

test('getPhase follows the kubelet rules', async (t) => {
  const two = makePod({ containers: [container('a'), container('b')] }).spec!;
  const never = makePod({ restartPolicy: 'Never', containers: [container('a'), container('b')] }).spec!;
  const onFailure = makePod({ restartPolicy: 'OnFailure', containers: [container('a'), container('b')] }).spec!;
  const withInit = makePod({ initContainers: [container('init')] }).spec!;
  const cases: [string, ReturnType<typeof getPhase>, ReturnType<typeof getPhase>][] = [
    ['nothing known yet', getPhase(two, [], []), 'Pending'],
    ['one waiting without having run', getPhase(two, [running('a'), waiting('b', 'ContainerCreating')], []), 'Pending'],
    ['all running', getPhase(two, [running('a'), running('b')], []), 'Running'],
    ['Always, all exited 0: restarting, so Running', getPhase(two, [exited('a', 0), exited('b', 0)], []), 'Running'],
    [
      'Always, CrashLoopBackOff with a last state: Running',
      getPhase(two, [running('a'), waiting('b', 'CrashLoopBackOff', 1)], []),
      'Running',
    ],
    ['Never, all exited 0: Succeeded', getPhase(never, [exited('a', 0), exited('b', 0)], []), 'Succeeded'],
    ['Never, one exited 1: Failed', getPhase(never, [exited('a', 0), exited('b', 1)], []), 'Failed'],
    ['Never, one still running: Running', getPhase(never, [exited('a', 1), running('b')], []), 'Running'],
    ['OnFailure, all exited 0: Succeeded', getPhase(onFailure, [exited('a', 0), exited('b', 0)], []), 'Succeeded'],
    [
      'OnFailure, one failed and will restart: Running',
      getPhase(onFailure, [exited('a', 0), waiting('b', 'CrashLoopBackOff', 1)], []),
      'Running',
    ],
    ['init not yet run: Pending', getPhase(withInit, [], []), 'Pending'],
    ['init running: Pending', getPhase(withInit, [waiting('app', 'PodInitializing')], [running('init')]), 'Pending'],
    ['init failed under Always: Pending (retried)', getPhase(withInit, [], [exited('init', 1)]), 'Pending'],
    [
      'init failed under Never: Failed',
      getPhase(makePod({ restartPolicy: 'Never', initContainers: [container('init')] }).spec!, [], [exited('init', 1)]),
      'Failed',
    ],
    ['init done, app running: Running', getPhase(withInit, [running('app')], [exited('init', 0)]), 'Running'],
  ];
  for (const [name, got, want] of cases) await t.test(name, () => assert.equal(got, want));
});

test('generatePodStatus: CrashLoopBackOff shows waiting with the last exit as lastState', () => {
  const app = container('app');
  const pod = makePod({ containers: [app] });
  const runtime = podStatus(pod, [sandbox()], [instance(app, { state: 'exited', exitCode: 1, restartCount: 2, finishedAt: 4000 })]);
  const status = generatePodStatus({
    pod,
    runtime,
    now: 10_000,
    waitingReason: () => ({ reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container=app' }),
  });
  const cs = status.containerStatuses![0]!;
  assert.equal(status.phase, 'Running');
  assert.equal(cs.state?.waiting?.reason, 'CrashLoopBackOff');
  assert.equal(cs.lastState?.terminated?.exitCode, 1);
  assert.equal(cs.lastState?.terminated?.reason, 'Error');
  assert.equal(cs.restartCount, 2);
  assert.equal(cs.ready, false);
  assert.equal(status.podIP, '10.89.0.5');
  assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
});

test('generatePodStatus: a running pod is Ready with conditions and container IDs', () => {
  const app = container('app');
  const pod = makePod({ containers: [app] });
  const status = generatePodStatus({ pod, runtime: podStatus(pod, [sandbox()], [instance(app, { id: 'abc' })]), now: 10_000 });
  assert.equal(status.phase, 'Running');
  assert.equal(status.containerStatuses![0]!.containerID, 'containerd://abc');
  assert.equal(status.containerStatuses![0]!.ready, true);
  for (const type of ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled']) {
    assert.equal(status.conditions?.find((c) => c.type === type)?.status, 'True', type);
  }
  assert.equal(status.qosClass, 'BestEffort');
});

test('generatePodStatus: a container never created waits with the reason from the last sync', () => {
  const pod = makePod();
  const status = generatePodStatus({
    pod,
    runtime: podStatus(pod, [sandbox()], []),
    now: 1,
    waitingReason: () => ({ reason: 'ErrImagePull', message: 'not found' }),
  });
  assert.equal(status.phase, 'Pending');
  assert.equal(status.containerStatuses![0]!.state?.waiting?.reason, 'ErrImagePull');
});

test('qosClass: Guaranteed, Burstable, BestEffort', () => {
  const g = makePod({ containers: [container('a', { resources: { limits: { cpu: '1', memory: '64Mi' } } })] });
  const b = makePod({ containers: [container('a', { resources: { requests: { cpu: '100m' } } })] });
  assert.equal(qosClass(g), 'Guaranteed');
  assert.equal(qosClass(b), 'Burstable');
  assert.equal(qosClass(makePod()), 'BestEffort');
});
