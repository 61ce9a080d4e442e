import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { renderPlan } from '../../src/cli/render.js';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { computePodActions, isNoop } from '../../src/core/kuberuntime/actions.js';
import { canonicalJSON } from '../../src/core/util/canonical-json.js';
import { diffContainerSpec, formatSpecChange } from '../../src/core/kuberuntime/spec-diff.js';
import { hasSomethingToStop, planPod, planPods, type PodPlan } from '../../src/core/plan.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { container, instance, makePod, podStatus, sandbox } from '../support/builders.js';
import { scratchDir } from '../support/e2e.js';
import { startFake, stopFake } from '../support/fake-runtime.js';
import { podActionCases, type ActionSummary } from '../support/pod-action-cases.js';

/** What a plan says, in the shape of the computePodActions table's expectations. */
function planSummary(p: PodPlan, attemptIfNoSandbox: number): ActionSummary {
  const create = p.actions.find((a) => a.action === 'CreatePodSandbox');
  const starts = p.actions.filter((a) => a.action === 'StartContainer');
  return {
    killPod: p.actions.some((a) => a.action === 'KillPod'),
    createSandbox: create !== undefined,
    attempt: create?.attempt ?? attemptIfNoSandbox,
    init: starts.filter((a) => a.kind !== 'app').map((a) => a.container!),
    start: starts.filter((a) => a.kind === 'app').map((a) => a.container!),
    kill: p.actions.filter((a) => a.action === 'KillContainer').map((a) => `${a.container}:${a.killReason}`),
  };
}

test('plan says what computePodActions decides, for every table case of the core', async (t) => {
  for (const c of podActionCases) {
    await t.test(c.name, () => {
      const status = c.status(c.pod);
      const plan = planPod({ pod: c.pod, status, now: status.timestamp, imagePresent: () => true, probes: c.probes });
      // The attempt is shown only with a new sandbox; otherwise take the case's own.
      // KillPod of a pod with nothing running or ready is a no-op: plan leaves it out.
      // A pod kill stops every container, so SyncPod (and plan) carry out no single kills beside it.
      const killPod = c.want.killPod && hasSomethingToStop(status);
      assert.deepEqual(planSummary(plan, c.want.attempt), { ...c.want, killPod, kill: killPod ? [] : c.want.kill });
      assert.equal(plan.inDesiredState, isNoop(computePodActions(c.pod, status, c.probes)));
      assert.equal(
        plan.actions.some((a) => a.action === 'PullImage'),
        false,
        'every image is present',
      );
      for (const a of plan.actions) assert.ok(a.reason.length > 0, `${a.action} says why`);
    });
  }
});

test("a changed image is named field by field, from the running container's spec copy", () => {
  const old = container('app', { image: 'busybox:1.36', env: [{ name: 'MODE', value: 'a' }] });
  const now = container('app', {
    image: 'busybox:1.37',
    env: [
      { name: 'MODE', value: 'b' },
      { name: 'NEW', value: '1' },
    ],
  });
  const side = container('side');
  const pod = makePod({ containers: [now, side] });
  const status = podStatus(
    pod,
    [sandbox()],
    [instance(old, { specJSON: canonicalJSON(old) }), instance(side, { specJSON: canonicalJSON(side) })],
  );
  const plan = planPod({ pod, status, now: 10_000, imagePresent: (image) => image === 'busybox:1.36' });
  assert.deepEqual(
    plan.actions.map((a) => a.action),
    ['KillContainer', 'PullImage', 'StartContainer'],
  );
  const kill = plan.actions[0]!;
  assert.equal(kill.container, 'app');
  assert.equal(kill.killReason, 'SpecChanged');
  assert.deepEqual(kill.changes?.map(formatSpecChange), [
    'containers[app].env[MODE].value: a → b',
    'containers[app].env[NEW]: (unset) → {"name":"NEW","value":"1"}',
    'containers[app].image: busybox:1.36 → busybox:1.37',
  ]);
  assert.deepEqual(plan.actions[1], {
    action: 'PullImage',
    container: 'app',
    image: 'busybox:1.37',
    pullPolicy: 'IfNotPresent',
    imagePresent: false,
    reason: 'not present (pull policy IfNotPresent)',
  });
  const text = renderPlan({ apiVersion: 'podctl/v1', kind: 'Plan', changes: true, pods: [plan] });
  assert.match(
    text,
    /^default\/web:\n {2}- kill container app \(SpecChanged\): Container app definition changed, will be restarted\n {6}containers\[app\]\.env\[MODE\]\.value: a → b\n/,
  );
  assert.match(text, /\n {6}containers\[app\]\.image: busybox:1\.36 → busybox:1\.37\n {2}\+ pull image busybox:1\.37 for app: not present/);
  assert.match(text, /1 of 1 pod\(s\) would change\.$/);
});

test('a container that kept no spec copy is still killed, without a field list', () => {
  const old = container('app');
  const pod = makePod({ containers: [container('app', { args: ['x'] })] });
  const plan = planPod({ pod, status: podStatus(pod, [sandbox()], [instance(old)]), now: 0, imagePresent: () => true });
  assert.equal(plan.actions[0]!.action, 'KillContainer');
  assert.equal(plan.actions[0]!.changes, undefined);
  assert.equal(diffContainerSpec('not json', old), undefined);
});

test('a crashed container under Always: the restart and the remaining backoff, from what the runtime records', () => {
  const app = container('app');
  const pod = makePod({ containers: [app] });
  const crashed = (restartCount: number, finishedAt: number, startedAt = finishedAt - 1000) =>
    podStatus(pod, [sandbox()], [instance(app, { state: 'exited', exitCode: 1, restartCount, startedAt, finishedAt })]);
  const start = (restartCount: number, finishedAt: number, now: number, startedAt?: number) =>
    planPod({ pod, status: crashed(restartCount, finishedAt, startedAt), now, imagePresent: () => true }).actions.find(
      (a) => a.action === 'StartContainer',
    )!;

  assert.equal(start(0, 100_000, 100_000).backoff, undefined, 'the first restart goes at once');
  const second = start(2, 100_000, 105_000);
  assert.deepEqual(second.backoff, { delaySeconds: 20, remainingSeconds: 15 });
  assert.equal(second.reason, 'exited with code 1 and restartPolicy is Always; back-off 20s expires in 15s');
  assert.deepEqual(start(9, 100_000, 100_000).backoff, { delaySeconds: 300, remainingSeconds: 300 }, 'capped at 300 s');
  assert.deepEqual(start(2, 100_000, 130_000).backoff, { delaySeconds: 20, remainingSeconds: 0 });
  assert.equal(start(5, 1_000_000, 1_000_000, 300_000).backoff, undefined, 'a run longer than 10 min resets the backoff');
  const plan = planPod({ pod, status: crashed(2, 100_000), now: 105_000, imagePresent: () => true });
  assert.match(
    renderPlan({ apiVersion: 'podctl/v1', kind: 'Plan', changes: true, pods: [plan] }),
    /\+ start container app: exited with code 1 and restartPolicy is Always; back-off 20s expires in 15s/,
  );
});

test('image pulls follow the pull policy', () => {
  const actions = (policy: 'Always' | 'IfNotPresent' | 'Never', present: boolean) => {
    const pod = makePod({ containers: [container('app', { imagePullPolicy: policy })] });
    return planPod({ pod, status: podStatus(pod, [], []), now: 0, imagePresent: () => present }).actions;
  };
  assert.deepEqual(
    actions('Always', true).map((a) => a.action),
    ['CreatePodSandbox', 'PullImage', 'StartContainer'],
  );
  assert.deepEqual(
    actions('IfNotPresent', true).map((a) => a.action),
    ['CreatePodSandbox', 'StartContainer'],
  );
  assert.deepEqual(
    actions('IfNotPresent', false).map((a) => a.action),
    ['CreatePodSandbox', 'PullImage', 'StartContainer'],
  );
  const never = actions('Never', false);
  assert.deepEqual(
    never.map((a) => a.action),
    ['CreatePodSandbox', 'StartContainer'],
  );
  assert.match(never[1]!.reason, /cannot start: image "busybox:1\.36" is not present with pull policy of Never/);
});

test('planPods makes its reads at once, and keeps the pods in order', async () => {
  // Each read answers only once all five are in flight: reads made one after another would never end.
  const pods = [makePod({ name: 'a', uid: 'uid-a' }), makePod({ name: 'b', uid: 'uid-b' })];
  let inFlight = 0;
  const started: string[] = [];
  let release!: () => void;
  const allIn = new Promise<void>((resolve) => (release = resolve));
  const read = async <T>(what: string, answer: T): Promise<T> => {
    started.push(what);
    if (++inFlight === 5) release();
    await allIn;
    return answer;
  };
  type Cri = Parameters<typeof planPods>[0];
  const cri = {
    images: { imageStatus: (image: string) => read(`image ${image}`, image === 'nginx' ? { id: 'sha256:x' } : undefined) },
    statusReader: {
      getPodStatus: (uid: string, name: string) =>
        read(
          `status ${name}`,
          podStatus(
            pods.find((p) => p.metadata!.uid === uid)!,
            [],
            [],
          ),
        ),
    },
    runtime: { listPodSandbox: () => read('sandboxes', []) },
  } as unknown as Cri;
  pods[1]!.spec!.containers[0]!.image = 'nginx';
  let timer: NodeJS.Timeout | undefined;
  const plan = await Promise.race([
    planPods(cri, pods, { now: 0, prune: true }),
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`reads in flight together: ${started.join(', ')}`)), 5000)),
    ),
  ]).finally(() => clearTimeout(timer));
  assert.deepEqual(
    plan.pods.map((p) => p.name),
    ['a', 'b'],
  );
  assert.equal(started.length, 5);
  assert.deepEqual(
    plan.pods.map((p) => p.actions.some((a) => a.action === 'PullImage')),
    [true, false],
    'the image found is not pulled again',
  );
});

describe('planPods on the fake runtime', () => {
  const WRITES = [
    'RunPodSandbox',
    'StopPodSandbox',
    'RemovePodSandbox',
    'CreateContainer',
    'StartContainer',
    'StopContainer',
    'RemoveContainer',
    'PullImage',
    'RemoveImage',
  ];
  let fake: FakeRuntime;
  let client: CriClient;
  const clock = new FakeClock();
  const logs = scratchDir('plan-logs');
  const pod = (name: string, image = 'busybox:1.36'): IPod => {
    const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: ${JSON.stringify(image)}, command: [sleep, "3600"]}\n`;
    return parseManifestText(text, { kind: 'file', path: `/plan/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
  };
  before(async () => ({ fake, client } = await startFake({ clock })));
  after(async () => {
    await stopFake({ fake, client });
    logs.cleanup();
  });

  test('no writes; a running pod is in desired state; --prune names the pods no file describes', async () => {
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'plan-unit' });
    await kubelet.syncPod(pod('kept'), 'create');
    await kubelet.syncPod(pod('other'), 'create');
    const writes = () => WRITES.reduce((n, m) => n + (fake.calls()[m] ?? 0), 0);
    const before = writes();

    const steady = await planPods({ runtime: client, images: client, statusReader: kubelet.runtimeManager.statusReader }, [pod('kept')], {
      now: clock.now(),
    });
    assert.equal(steady.changes, false);
    assert.deepEqual(
      steady.pods.map((p) => [p.name, p.inDesiredState]),
      [['kept', true]],
    );
    assert.equal(renderPlan(steady), 'default/kept: in desired state, nothing to do\n\nNo changes: 1 pod(s) in desired state.');

    const edited = await planPods(
      { runtime: client, images: client, statusReader: kubelet.runtimeManager.statusReader },
      [pod('kept', 'busybox:1.37')],
      { now: clock.now() },
    );
    assert.equal(edited.changes, true);
    assert.deepEqual(
      edited.pods[0]!.actions.map((a) => a.action),
      ['KillContainer', 'PullImage', 'StartContainer'],
    );
    assert.deepEqual(edited.pods[0]!.actions[0]!.changes, [{ field: 'containers[app].image', from: 'busybox:1.36', to: 'busybox:1.37' }]);

    const pruned = await planPods({ runtime: client, images: client, statusReader: kubelet.runtimeManager.statusReader }, [pod('kept')], {
      now: clock.now(),
      prune: true,
    });
    assert.deepEqual(
      pruned.pods.map((p) => [p.name, p.actions.map((a) => `${a.action}: ${a.reason}`)]),
      [
        ['kept', []],
        ['other', ['RemovePod: no longer in any source']],
      ],
    );
    assert.equal(writes(), before, 'plan made no CRI writes');
    for (const name of ['kept', 'other']) {
      await kubelet.syncTerminatingPod(pod(name), 0);
      await kubelet.syncTerminatedPod(pod(name));
    }
  });
});
