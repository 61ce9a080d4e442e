import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IContainer, IContainerStatus, IPod, IPodStatus, IProbe } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import type { HandlerOutcome } from '../../src/core/prober/handlers.js';
import { ProbeWorker, type ProbeResult, type ProbeType } from '../../src/core/prober/worker.js';
import { container, makePod } from '../support/builders.js';

/** A worker over a scripted probe: the test says what each run answers and when the container (re)starts. */
function harness(type: ProbeType, probe: IProbe, extra: Partial<IContainer> = {}) {
  const clock = new FakeClock();
  const key = type === 'liveness' ? 'livenessProbe' : type === 'readiness' ? 'readinessProbe' : 'startupProbe';
  const pod: IPod = makePod({ containers: [container('app', { [key]: probe, ...extra })] });
  let cs: IContainerStatus = {
    name: 'app',
    image: 'busybox',
    imageID: '',
    ready: false,
    restartCount: 0,
    started: true,
    containerID: 'containerd://c1',
    state: { running: { startedAt: new Date(clock.now()).toISOString() } },
  };
  const results: { id: string; result: ProbeResult }[] = [];
  const current = new Map<string, ProbeResult>();
  const runs: string[] = [];
  const outcomes: string[] = [];
  let answer: HandlerOutcome['result'] = 'success';
  const worker = new ProbeWorker('app', type, {
    clock,
    pod: () => pod,
    status: (): IPodStatus => ({ phase: 'Running', containerStatuses: [cs] }),
    probe: async (_p, _c, id) => {
      runs.push(id);
      return { result: answer, output: answer === 'success' ? '' : 'nope' };
    },
    setResult: (id, _t, result) => {
      current.set(id, result);
      results.push({ id, result });
    },
    removeResult: (id) => current.delete(id),
    onRunOutcome: (_c, t, kind, output) => outcomes.push(`${t} ${kind}: ${output}`),
  });
  return {
    clock,
    worker,
    runs,
    results,
    outcomes,
    current,
    answer: (a: HandlerOutcome['result']) => (answer = a),
    setStatus: (patch: Partial<IContainerStatus>) => (cs = { ...cs, ...patch }),
    /** Advances the clock and lets the probe run that fell due finish. */
    async advance(ms: number) {
      clock.advance(ms);
      await worker.settled();
    },
  };
}

describe('probe worker (the kubelet worker.doProbe rules, injected clock)', () => {
  test('readiness starts False, turns True after successThreshold successes and False after failureThreshold failures', async () => {
    const h = harness('readiness', { exec: { command: ['true'] }, periodSeconds: 5, successThreshold: 2, failureThreshold: 3 });
    h.worker.start();
    await h.worker.settled();
    assert.deepEqual(h.results[0], { id: 'c1', result: 'Failure' }, 'the initial value of readiness is Failure');
    assert.equal(h.runs.length, 1, 'the first probe runs at once');
    assert.equal(h.current.get('c1'), 'Failure', 'one success is below successThreshold 2');
    await h.advance(4_999);
    assert.equal(h.runs.length, 1, 'nothing before the period');
    await h.advance(1);
    assert.equal(h.runs.length, 2);
    assert.equal(h.current.get('c1'), 'Success');
    h.answer('failure');
    await h.advance(5_000);
    await h.advance(5_000);
    assert.equal(h.current.get('c1'), 'Success', 'two failures are below failureThreshold 3');
    await h.advance(5_000);
    assert.equal(h.current.get('c1'), 'Failure');
    assert.equal(h.outcomes.filter((o) => o === 'readiness failed: nope').length, 3, 'every failed run is reported');
    h.worker.stop();
  });

  test('a success between failures resets the count', async () => {
    const h = harness('liveness', { exec: { command: ['x'] }, periodSeconds: 1, failureThreshold: 2 });
    h.worker.start();
    await h.worker.settled();
    h.answer('failure');
    await h.advance(1000);
    h.answer('success');
    await h.advance(1000);
    h.answer('failure');
    await h.advance(1000);
    assert.equal(h.current.get('c1'), 'Success', 'never two failures in a row');
    await h.advance(1000);
    assert.equal(h.current.get('c1'), 'Failure');
    h.worker.stop();
  });

  test('initialDelaySeconds counts from the container start; before it nothing runs', async () => {
    const h = harness('liveness', { exec: { command: ['x'] }, periodSeconds: 2, initialDelaySeconds: 5 });
    h.worker.start();
    await h.worker.settled();
    await h.advance(2000);
    await h.advance(2000);
    assert.equal(h.runs.length, 0, 'no probe in the first 5 s');
    await h.advance(2000);
    assert.equal(h.runs.length, 1);
    h.worker.stop();
  });

  test('liveness and readiness wait for the startup probe: nothing runs while started is false', async () => {
    const h = harness('liveness', { exec: { command: ['x'] }, periodSeconds: 1 });
    h.setStatus({ started: false });
    h.worker.start();
    await h.worker.settled();
    await h.advance(1000);
    await h.advance(1000);
    assert.equal(h.runs.length, 0);
    h.setStatus({ started: true });
    await h.advance(1000);
    assert.equal(h.runs.length, 1);
    h.worker.stop();
  });

  test('startup: its initial value is Unknown, it stops probing once the container has started', async () => {
    const h = harness('startup', { exec: { command: ['x'] }, periodSeconds: 1, failureThreshold: 5 });
    h.setStatus({ started: false });
    h.worker.start();
    await h.worker.settled();
    assert.deepEqual(h.results[0], { id: 'c1', result: 'Unknown' });
    assert.equal(h.current.get('c1'), 'Success', 'successThreshold 1');
    h.setStatus({ started: true });
    await h.advance(1000);
    await h.advance(1000);
    assert.equal(h.runs.length, 1, 'no probe after the container counts as started');
    h.worker.stop();
  });

  test('after a liveness failure the worker holds until a new container instance, which starts from Success', async () => {
    const h = harness('liveness', { exec: { command: ['x'] }, periodSeconds: 1, failureThreshold: 1 });
    h.answer('failure');
    h.worker.start();
    await h.worker.settled();
    assert.equal(h.current.get('c1'), 'Failure');
    await h.advance(1000);
    await h.advance(1000);
    assert.equal(h.runs.length, 1, 'the container is being killed: no more probes of it');
    h.answer('success');
    h.setStatus({
      containerID: 'containerd://c2',
      restartCount: 1,
      state: { running: { startedAt: new Date(h.clock.now()).toISOString() } },
    });
    await h.advance(1000);
    assert.equal(h.current.has('c1'), false, 'the old instance result is dropped');
    assert.equal(h.current.get('c2'), 'Success');
    assert.deepEqual(h.runs.slice(1), ['c2']);
    h.worker.stop();
  });

  test('a container that is not running is not ready, and is not probed', async () => {
    const h = harness('readiness', { exec: { command: ['x'] }, periodSeconds: 1 });
    h.worker.start();
    await h.worker.settled();
    assert.equal(h.current.get('c1'), 'Success');
    h.setStatus({ state: { terminated: { exitCode: 1 } } });
    await h.advance(1000);
    assert.equal(h.current.get('c1'), 'Failure');
    assert.equal(h.runs.length, 1);
    h.worker.stop();
  });

  test('a redirect elsewhere (warning) counts as success and is reported', async () => {
    const h = harness('readiness', { httpGet: { port: 80 }, periodSeconds: 1 });
    h.answer('warning');
    h.worker.start();
    await h.worker.settled();
    assert.equal(h.current.get('c1'), 'Success');
    assert.deepEqual(h.outcomes, ['readiness warning: nope']);
    h.worker.stop();
  });

  test('stop() removes the result and no probe runs after it', async () => {
    const h = harness('readiness', { exec: { command: ['x'] }, periodSeconds: 1 });
    h.worker.start();
    await h.worker.settled();
    h.worker.stop();
    assert.equal(h.current.size, 0);
    await h.advance(5000);
    assert.equal(h.runs.length, 1);
  });
});
