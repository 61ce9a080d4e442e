import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ephemeralContainerConfig } from '../../src/core/kuberuntime/ephemeral.js';
import { EPHEMERAL_LABEL, CONTAINER_KIND_ANNOTATION } from '../../src/core/kuberuntime/labels.js';
import { generatePodStatus } from '../../src/core/status/generate.js';
import { container, instance, makePod, podStatus, sandbox } from '../support/builders.js';

test("a debug container is labelled ephemeral, joins the target's PID namespace with --target, and keeps the pod's network", () => {
  const pod = makePod({ containers: [container('app')] });
  const withTarget = ephemeralContainerConfig({
    pod,
    container: { name: 'dbg', image: 'busybox:1.36', command: ['ps', 'ax'] },
    imageRef: 'sha256:abc',
    targetId: 'c0ffee',
  });
  assert.equal(withTarget.labels![EPHEMERAL_LABEL], 'true');
  assert.equal(withTarget.annotations![CONTAINER_KIND_ANNOTATION], 'ephemeral');
  assert.deepEqual(withTarget.linux!.securityContext!.namespaceOptions, { network: 'POD', pid: 'TARGET', ipc: 'POD', targetId: 'c0ffee' });
  assert.deepEqual(withTarget.command, ['ps', 'ax']);
  assert.equal(withTarget.logPath, 'dbg/0.log');
  const alone = ephemeralContainerConfig({ pod, container: { name: 'dbg', image: 'busybox:1.36' }, imageRef: 'sha256:abc' });
  assert.equal(alone.linux!.securityContext!.namespaceOptions!.pid, 'CONTAINER');
});

test('ephemeral containers show under ephemeralContainerStatuses and never change the phase, Ready or restart counts', () => {
  const app = container('app');
  const pod = makePod({ containers: [app] });
  const runtime = podStatus(pod, [sandbox()], [instance(app, { state: 'running' })]);
  const before = generatePodStatus({ pod, runtime, now: 1_000_000 });
  const dbg = instance({ name: 'dbg', image: 'busybox:1.36' }, { id: 'dbg1', state: 'exited', exitCode: 3, finishedAt: 999_000 });
  const after = generatePodStatus({ pod, runtime: { ...runtime, ephemeral: [dbg] }, now: 1_000_000 });
  assert.deepEqual(
    after.ephemeralContainerStatuses?.map((e) => [e.name, e.state?.terminated?.exitCode, e.ready, e.restartCount]),
    [['dbg', 3, false, 0]],
  );
  assert.equal(after.phase, before.phase);
  assert.deepEqual(after.containerStatuses, before.containerStatuses);
  assert.deepEqual(after.conditions, before.conditions);
  assert.equal(before.ephemeralContainerStatuses, undefined);
});
