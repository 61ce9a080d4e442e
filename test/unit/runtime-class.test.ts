import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import type { SyncPodResult } from '../../src/core/kuberuntime/manager.js';
import { missingReferences, parseManifestText, setLookup } from '../../src/core/pod/index.js';
import { podMeta } from '../../src/core/util/pod-key.js';
import { scratchDir } from '../support/e2e.js';
import { startFake, stopFake } from '../support/fake-runtime.js';

let fake: FakeRuntime;
let client: CriClient;
const clock = new FakeClock();
const logs = scratchDir('runtime-class-logs');

before(async () => ({ fake, client } = await startFake({ clock })));
after(async () => {
  await stopFake({ fake, client });
  logs.cleanup();
});

const RUNTIME_CLASS = 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: fast}\nhandler: crun\n';
const podText = (name: string, runtimeClassName?: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n${runtimeClassName ? `  runtimeClassName: ${runtimeClassName}\n` : ''}  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;
const parse = (text: string) => parseManifestText(text, { kind: 'file', path: '/unit/rc.yaml' }, { nodeName: 'unit' });

test('a RuntimeClass document is read with its handler; a bad one is refused naming the field', () => {
  const parsed = parse(`${RUNTIME_CLASS}---\n${podText('p', 'fast')}`);
  assert.deepEqual(parsed.problems, []);
  assert.deepEqual(parsed.runtimeClasses, [{ name: 'fast', handler: 'crun' }]);
  assert.equal(parsed.pods.length, 1);

  const bad = parse('apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: slow}\nhandler: Not_A_Label\n');
  assert.deepEqual(bad.runtimeClasses, []);
  assert.equal(bad.problems[0]?.field, 'handler');
  assert.match(bad.problems[0]!.message, /runtime handler/);
  const wrongVersion = parse('apiVersion: v1\nkind: RuntimeClass\nmetadata: {name: x}\nhandler: runc\n');
  assert.match(wrongVersion.problems[0]!.message, /expected node\.k8s\.io\/v1/);
});

test("a pod naming a RuntimeClass the set does not hold is a missing reference, in the kubelet's words", () => {
  const pod = parse(podText('p', 'ghost')).pods[0]!.pod;
  const missing = missingReferences(pod, setLookup([], [], [{ name: 'fast', handler: 'crun' }]));
  assert.deepEqual(missing, [
    {
      field: 'spec.runtimeClassName',
      message: 'failed to lookup RuntimeClass ghost: runtimeclass.node.k8s.io "ghost" not found',
      reason: 'CreatePodSandboxError',
    },
  ]);
  assert.deepEqual(missingReferences(parse(podText('q', 'fast')).pods[0]!.pod, setLookup([], [], [{ name: 'fast', handler: 'crun' }])), []);
});

test("SyncPod runs the sandbox with the RuntimeClass's handler, else the default handler; a missing RuntimeClass makes no sandbox", async () => {
  const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', runtimeHandler: 'runc' });
  const results = new Map<string, SyncPodResult>();
  kubelet.observe({ onSyncResult: (pod, result) => results.set(podMeta(pod).name, result) });
  const set = parse(
    `${RUNTIME_CLASS}---\n${podText('with-class', 'fast')}---\n${podText('default-handler')}---\n${podText('missing-class', 'ghost')}`,
  );
  kubelet.objects.set('file', { configMaps: [], secrets: [], runtimeClasses: set.runtimeClasses });
  const thrown = new Map<string, string>();
  for (const { pod } of set.pods) await kubelet.syncPod(pod, 'create').catch((err: Error) => thrown.set(podMeta(pod).name, err.message));
  // SyncPod fails the pod's sync, as the kubelet's does, and its worker would retry.
  assert.deepEqual([...thrown.keys()], ['missing-class']);

  const handlerOf = (name: string) => fake.sandboxes().find((s) => s.metadata.name === name)?.runtimeHandler;
  assert.equal(handlerOf('with-class'), 'crun');
  assert.equal(handlerOf('default-handler'), 'runc');
  assert.equal(handlerOf('missing-class'), undefined);
  const failed = results.get('missing-class')!.steps.find((s) => s.error);
  assert.deepEqual(
    [failed?.action, failed?.reason, failed?.error],
    ['CreatePodSandbox', 'CreatePodSandboxError', 'failed to lookup RuntimeClass ghost: runtimeclass.node.k8s.io "ghost" not found'],
  );
  // The kubelet's event for it, which describe and run --detach's wait show.
  const warning = kubelet.events.all().find((e) => e.name === 'missing-class' && e.type === 'Warning');
  assert.deepEqual(
    [warning?.reason, warning?.message],
    [
      'FailedCreatePodSandBox',
      'Failed to create pod sandbox: failed to lookup RuntimeClass ghost: runtimeclass.node.k8s.io "ghost" not found',
    ],
  );
});
