import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import { newKubelet, createPleg } from '../../src/core/node/compose.js';
import { podLogDirectory } from '../../src/core/kuberuntime/config.js';
import { MANAGED_BY_LABEL } from '../../src/core/kuberuntime/labels.js';
import { missingReferences, parseManifestText } from '../../src/core/pod/index.js';
import type { SourceObjects } from '../../src/core/objects.js';
import { runOnce } from '../../src/core/runonce.js';
import { scratchDir } from '../support/e2e.js';

const WRITES = [
  'RunPodSandbox',
  'StopPodSandbox',
  'RemovePodSandbox',
  'CreateContainer',
  'StartContainer',
  'StopContainer',
  'RemoveContainer',
  'PullImage',
];

function pod(name: string, containers: string, restartPolicy = 'Always'): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  restartPolicy: ${restartPolicy}\n  containers:\n${containers}`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/unit/${name}.yaml` }, { nodeName: 'unit' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

describe('SyncPod on the fake runtime, with an injected clock', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let clock: FakeClock;
  let kubelet: Kubelet;
  const logs = scratchDir('unit-logs');

  before(async () => {
    clock = new FakeClock();
    fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
    kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit' });
  });
  after(async () => {
    client.close();
    await fake.stop();
    logs.cleanup();
  });

  /** Moves the injected clock whenever the CRI round trips have settled, until the promise ends. */
  async function settledOnClock<T>(done: Promise<T>): Promise<T> {
    let settled = false;
    void done.finally(() => (settled = true));
    while (!settled) {
      await new Promise((r) => setTimeout(r, 2));
      clock.advance(250);
    }
    return done;
  }

  const writes = () => WRITES.reduce((n, m) => n + (fake.calls()[m] ?? 0), 0);
  const app = (s: IPodStatus) => s.containerStatuses![0]!;
  const statusOf = (p: IPod) => kubelet.statusManager.get(p.metadata!.uid!)!;
  const runningId = () => fake.containers().find((c) => c.state === 'CONTAINER_RUNNING')!.id;

  test('CrashLoopBackOff: first restart at once, then 10 s, then 20 s, counted from the exit', async () => {
    const p = pod('crashy', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
    await kubelet.syncPod(p, 'create');
    assert.equal(statusOf(p).phase, 'Running');
    assert.equal(app(statusOf(p)).restartCount, 0);

    fake.exitContainer(runningId(), 1);
    await kubelet.syncPod(p, 'sync');
    assert.equal(app(statusOf(p)).restartCount, 1, 'the first restart has no delay');
    assert.ok(app(statusOf(p)).state?.running);
    assert.equal(app(statusOf(p)).lastState?.terminated?.exitCode, 1);

    fake.exitContainer(runningId(), 1);
    await kubelet.syncPod(p, 'sync');
    let s = statusOf(p);
    assert.equal(app(s).state?.waiting?.reason, 'CrashLoopBackOff');
    assert.match(app(s).state!.waiting!.message!, /^back-off 10s restarting failed container=app pod=crashy_default\(/);
    assert.equal(s.phase, 'Running');

    clock.advance(9_999);
    await kubelet.syncPod(p, 'sync');
    assert.equal(app(statusOf(p)).state?.waiting?.reason, 'CrashLoopBackOff', 'still backing off at 9.999 s');
    clock.advance(1);
    await kubelet.syncPod(p, 'sync');
    s = statusOf(p);
    assert.equal(app(s).restartCount, 2);
    assert.ok(app(s).state?.running);

    fake.exitContainer(runningId(), 1);
    await kubelet.syncPod(p, 'sync');
    assert.match(app(statusOf(p)).state!.waiting!.message!, /^back-off 20s/);
    clock.advance(19_999);
    await kubelet.syncPod(p, 'sync');
    assert.equal(app(statusOf(p)).restartCount, 2);
    clock.advance(1);
    await kubelet.syncPod(p, 'sync');
    assert.equal(app(statusOf(p)).restartCount, 3);
    // Only the newest dead instance is kept (MaxPerPodContainer 1).
    assert.equal(fake.containers().filter((c) => c.state === 'CONTAINER_EXITED').length, 1);
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
    assert.equal(fake.sandboxes().length, 0);
  });

  test('a steady pod costs no CRI writes; a spec change replaces only that container', async () => {
    const p = pod(
      'steady',
      '  - {name: a, image: busybox:1.36, command: [sleep, "1"]}\n  - {name: b, image: busybox:1.36, command: [sleep, "2"]}\n',
    );
    await kubelet.syncPod(p, 'create');
    const ids = () =>
      Object.fromEntries(
        fake
          .containers()
          .filter((c) => c.state === 'CONTAINER_RUNNING')
          .map((c) => [c.metadata.name, c.id]),
      );
    const before = ids();
    const w = writes();
    await kubelet.syncPod(p, 'sync');
    await kubelet.syncPod(p, 'sync');
    assert.equal(writes(), w, 'no CRI writes for a pod in its desired state');

    const edited = pod(
      'steady',
      '  - {name: a, image: busybox:1.36, command: [sleep, "1"]}\n  - {name: b, image: busybox:1.36, command: [sleep, "3"]}\n',
    );
    assert.equal(edited.metadata!.uid, p.metadata!.uid);
    const sandboxes = fake.sandboxes().map((s) => s.id);
    await kubelet.syncPod(edited, 'update');
    const afterEdit = ids();
    assert.equal(afterEdit.a, before.a);
    assert.notEqual(afterEdit.b, before.b);
    assert.deepEqual(
      fake.sandboxes().map((s) => s.id),
      sandboxes,
    );
    await kubelet.syncTerminatingPod(edited, 0);
    await kubelet.syncTerminatedPod(edited);
  });

  test('ErrImagePull, then ImagePullBackOff until the 10 s delay ends, then a new pull', async () => {
    const p = pod('pull', '  - {name: app, image: registry.example/nosuch:1}\n');
    await kubelet.syncPod(p, 'create').catch(() => undefined);
    assert.equal(app(statusOf(p)).state?.waiting?.reason, 'ErrImagePull');
    assert.match(app(statusOf(p)).state!.waiting!.message!, /failed to pull image "registry\.example\/nosuch:1": .*not found/);
    const pulls = () => fake.calls().PullImage ?? 0;
    const n = pulls();
    const failed = app(statusOf(p)).state!.waiting!.message!;
    await kubelet.syncPod(p, 'sync').catch(() => undefined);
    assert.equal(app(statusOf(p)).state?.waiting?.reason, 'ImagePullBackOff');
    assert.equal(app(statusOf(p)).state?.waiting?.message, `Back-off pulling image "registry.example/nosuch:1": ErrImagePull: ${failed}`);
    assert.equal(pulls(), n, 'no pull while backing off');
    clock.advance(10_000);
    await kubelet.syncPod(p, 'sync').catch(() => undefined);
    assert.equal(app(statusOf(p)).state?.waiting?.reason, 'ErrImagePull');
    assert.equal(pulls(), n + 1);
    assert.equal(statusOf(p).phase, 'Pending');
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
  });

  test('runOnce: a pod that completes counts as done; one that cannot pull fails after its retries', async () => {
    const ok = pod('job', '  - {name: app, image: busybox:1.36, command: [sh, -c, "exit 0"]}\n', 'Never');
    const bad = pod('nopull', '  - {name: app, image: registry.example/nosuch:1}\n');
    const [a, b] = await settledOnClock(runOnce(kubelet, [ok, bad], { clock, maxRetries: 3, retryDelayMs: 1000 }));
    assert.equal(a!.ok, true);
    assert.equal(a!.status?.phase, 'Succeeded');
    assert.equal(b!.ok, false);
    assert.match(b!.message!, /containers not running after 3 retries: app: (ErrImagePull|ImagePullBackOff)/);
    for (const p of [ok, bad]) {
      await kubelet.syncTerminatingPod(p, 0);
      await kubelet.syncTerminatedPod(p);
    }
  });

  test('runOnce: a pod whose sandbox cannot be made ends naming the sync error, not only ContainerCreating', async () => {
    const p = pod('nosandbox', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
    (p.spec as { runtimeClassName?: string }).runtimeClassName = 'ghost';
    const [r] = await settledOnClock(runOnce(kubelet, [p], { clock, maxRetries: 2, retryDelayMs: 1000 }));
    assert.equal(r!.ok, false);
    assert.equal(r!.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    assert.match(
      r!.message!,
      /^containers not running after 2 retries: app: ContainerCreating: .*runtimeclass\.node\.k8s\.io "ghost" not found/,
    );
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
  });

  test("runOnce: a pod whose ConfigMap no document provides fails after its first sync, in the kubelet's words, not after its retries", async () => {
    const p = pod(
      'nocm',
      '  - name: app\n    image: busybox:1.36\n    env: [{name: A, valueFrom: {configMapKeyRef: {name: settings, key: a}}}]\n',
    );
    const [r] = await settledOnClock(
      runOnce(kubelet, [p], {
        clock,
        maxRetries: 10,
        retryDelayMs: 1000,
        neverStarts: (x) => missingReferences(x, kubelet.objects).find((m) => m.reason !== 'FailedToRetrieveImagePullSecret'),
      }),
    );
    assert.equal(r!.ok, false);
    assert.equal(r!.attempts, 1, 'failed after the first sync');
    assert.equal(r!.reason, 'CreateContainerConfigError');
    assert.equal(r!.message, 'can never start: configmap "settings" not found');
    assert.equal(r!.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'CreateContainerConfigError');
    assert.equal(r!.status?.containerStatuses?.[0]?.state?.waiting?.message, 'configmap "settings" not found');
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
  });

  test(
    'activeDeadlineSeconds: past the deadline, counted from startTime, the pod is killed and ends Failed with ' +
      'DeadlineExceeded, and stays so',
    async () => {
      const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: deadline}\nspec:\n  activeDeadlineSeconds: 5\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;
      const parsed = parseManifestText(text, { kind: 'file', path: '/unit/deadline.yaml' }, { nodeName: 'unit' });
      assert.deepEqual(parsed.problems, []);
      const p = parsed.pods[0]!.pod;
      await kubelet.syncPod(p, 'create');
      assert.equal(statusOf(p).phase, 'Running');
      clock.advance(4_000);
      assert.equal(await kubelet.syncPod(p, 'sync'), false);
      assert.equal(statusOf(p).phase, 'Running', 'not yet');
      clock.advance(1_000);
      assert.equal(await kubelet.syncPod(p, 'sync'), true, 'terminal once past the deadline');
      assert.equal(statusOf(p).phase, 'Failed');
      assert.equal(statusOf(p).reason, 'DeadlineExceeded');
      assert.equal(statusOf(p).message, 'Pod was active on the node longer than the specified deadline');
      assert.equal(
        fake.containers().filter((c) => c.state === 'CONTAINER_RUNNING' && c.labels['io.kubernetes.pod.name'] === 'deadline').length,
        0,
        'killed',
      );
      assert.ok(kubelet.events.all().some((e) => e.reason === 'DeadlineExceeded'));
      await kubelet.syncPod(p, 'sync');
      assert.equal(statusOf(p).reason, 'DeadlineExceeded', 'stays failed for the deadline once killed');
      await kubelet.syncTerminatingPod(p, 0);
      await kubelet.syncTerminatedPod(p);
    },
  );

  const total = () => Object.values(fake.calls()).reduce((a, b) => a + b, 0);

  test(
    'the PLEG cache: resync after a relist: no CRI call; a change is seen once relisted; right after its own restart a sync ' +
      'reads the runtime',
    async () => {
      const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit' });
      const pleg = createPleg(kubelet);
      const p = pod('cached', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
      const app = () => kubelet.statusManager.get(p.metadata!.uid!)!.containerStatuses![0]!;
      await kubelet.syncPod(p, 'create');
      assert.ok(app().state?.running);

      // No relist since the last sync: the runtime is read.
      let calls = total();
      await kubelet.syncPod(p, 'sync');
      assert.ok(total() > calls, 'a sync with no newer relist reads the runtime');

      clock.advance(1);
      await pleg.relist();
      calls = total();
      await kubelet.syncPod(p, 'sync');
      assert.equal(total(), calls, 'a periodic resync after a relist makes no CRI call');
      assert.ok(app().state?.running);

      // The container dies; the relist re-reads the pod and the sync restarts it from the cache.
      fake.exitContainer(fake.containers().find((c) => c.state === 'CONTAINER_RUNNING')!.id, 1);
      clock.advance(1);
      await pleg.relist();
      calls = total();
      const before = fake.calls();
      await kubelet.syncPod(p, 'sync');
      assert.equal(app().restartCount, 1);
      assert.ok(app().state?.running, 'restarted, and the status after the restart is read from the runtime');
      assert.equal(fake.calls()['CreateContainer']! - (before['CreateContainer'] ?? 0), 1);

      // Right after its own writes, no relist has seen them: the next sync reads the runtime again.
      calls = total();
      await kubelet.syncPod(p, 'sync');
      assert.ok(total() > calls);
      assert.equal(app().restartCount, 1, 'and restarts nothing twice');

      const logDir = podLogDirectory(logs.dir, p);
      assert.ok(existsSync(logDir));
      await kubelet.syncTerminatingPod(p, 0);
      await kubelet.syncTerminatedPod(p);
      assert.equal(existsSync(logDir), false, 'the log directory goes with the pod');
    },
  );
  test(
    'the PLEG cache: a pod never synced that a current cache does not hold is created without listing; before any relist, or ' +
      'with a stale entry, it is read',
    async () => {
      const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit' });
      const pleg = createPleg(kubelet);
      const lists = () => (fake.calls()['ListPodSandbox'] ?? 0) + (fake.calls()['ListContainers'] ?? 0);

      // No relist yet: nothing says the runtime holds nothing of the pod, so it is read.
      const early = pod('first-early', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
      let listed = lists();
      await kubelet.syncPod(early, 'create');
      assert.ok(lists() > listed, 'before any relist the first sync lists the runtime');

      clock.advance(1);
      await pleg.relist();
      const p = pod('first-cached', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
      const sandboxesBefore = fake.calls()['RunPodSandbox'] ?? 0;
      listed = lists();
      await kubelet.syncPod(p, 'create');
      assert.equal(fake.calls()['RunPodSandbox']! - sandboxesBefore, 1, 'the sandbox is created');
      assert.ok(kubelet.statusManager.get(p.metadata!.uid!)!.containerStatuses![0]!.state?.running);
      // The status after the start is read (one ListPodSandbox and one ListContainers); nothing before the create.
      assert.equal(lists() - listed, 2, 'only the read after the start lists');

      // Terminated, then added again before a relist has dropped its entry: the stale entry is not trusted.
      clock.advance(1);
      await pleg.relist();
      await kubelet.syncTerminatingPod(p, 0);
      await kubelet.syncTerminatedPod(p);
      assert.ok(pleg.cache.get(p.metadata!.uid!)?.sandboxes.length, 'the cache still holds the removed pod');
      listed = lists();
      await kubelet.syncPod(p, 'create');
      assert.equal(lists() - listed, 4, 'a pod the cache holds is read before its first sync, and after it');
      assert.ok(kubelet.statusManager.get(p.metadata!.uid!)!.containerStatuses![0]!.state?.running);

      // A second kubelet (the agent restarted) whose event stream marks its cache before any relist: the
      // pods the runtime holds are not in that cache yet, so a first sync reads and creates nothing twice.
      const restarted = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit' });
      const restartedPleg = createPleg(restarted);
      clock.advance(1);
      assert.equal(restartedPleg.markCacheCurrent(clock.now()), false, 'no mark before a first relist');
      const sandboxes = fake.calls()['RunPodSandbox'] ?? 0;
      await restarted.syncPod(p, 'create');
      assert.equal((fake.calls()['RunPodSandbox'] ?? 0) - sandboxes, 0, 'the running pod is read, not created again');
      assert.ok(restarted.statusManager.get(p.metadata!.uid!)!.containerStatuses![0]!.state?.running);

      for (const q of [early, p]) {
        await kubelet.syncTerminatingPod(q, 0);
        await kubelet.syncTerminatedPod(q);
      }
    },
  );
});

describe('the generic PLEG on 1,000 fake pods', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  before(async () => {
    fake = await FakeRuntime.start();
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 10_000, pullTimeoutMs: 10_000 });
  });
  after(async () => {
    client.close();
    await fake.stop();
  });

  test('a relist with no changes makes no status calls; a change inspects only its pod', async () => {
    fake.seed({
      pods: 1000,
      containersPerPod: 2,
      labels: (i) => ({
        'io.kubernetes.pod.name': `p${i}`,
        'io.kubernetes.pod.namespace': 'default',
        'io.kubernetes.pod.uid': `uid-${i}`,
        [MANAGED_BY_LABEL]: 'podctl',
      }),
    });
    const clock = new FakeClock();
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent', nodeName: 'unit' });
    const pleg = createPleg(kubelet);
    const first = await pleg.relist();
    assert.equal(first.filter((e) => e.type === 'ContainerStarted').length, 3000, 'sandboxes and containers seen starting');
    assert.equal(pleg.cache.size(), 1000);

    fake.resetCalls();
    const quiet = await pleg.relist();
    assert.deepEqual(quiet, []);
    const calls = fake.calls();
    assert.equal(calls.ListPodSandbox, 1);
    assert.equal(calls.ListContainers, 1);
    assert.equal(calls.ContainerStatus ?? 0, 0, 'no per-container status calls');
    assert.equal(calls.PodSandboxStatus ?? 0, 0);

    const victim = fake
      .containers()
      .find((c) => c.labels['io.kubernetes.pod.uid'] === 'uid-7' && c.labels['io.kubernetes.container.name'] === 'c1')!;
    fake.exitContainer(victim.id, 137);
    fake.resetCalls();
    const events = await pleg.relist();
    assert.deepEqual(
      events.map((e) => [e.type, e.id, e.containerName]),
      [['ContainerDied', 'uid-7', 'c1']],
    );
    assert.equal(fake.calls().ContainerStatus, 2, 'both containers of the one changed pod, nothing else');
    assert.equal(pleg.cache.get('uid-7')?.containers.find((c) => c.id === victim.id)?.exitCode, 137);
    assert.equal(pleg.healthy().ok, true);
    clock.advance(3 * 60_000 + 1);
    assert.equal(pleg.healthy().ok, false);
  });
});

test('SyncPod refreshes configMap volumes of a running pod when the ConfigMap changes, without restarting it', async () => {
  const clock = new FakeClock();
  const fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  const dirs = scratchDir('unit-volume-refresh');
  try {
    const kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: `${dirs.dir}/logs`,
      rootDir: `${dirs.dir}/root`,
      nodeName: 'unit',
    });
    const cm = (value: string): SourceObjects => ({
      configMaps: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'default' }, data: { mode: value } }],
      secrets: [],
    });
    kubelet.objects.set('file', cm('fast'));
    const p = pod(
      'cm-refresh',
      '  - {name: app, image: busybox:1.36, command: [sleep, "3600"], volumeMounts: [{name: cfg, mountPath: /cfg}]}\n  volumes:\n  - {name: cfg, configMap: {name: settings}}\n',
    );
    await kubelet.syncPod(p, 'create');
    const hostFile = join(`${dirs.dir}/root`, 'pods', p.metadata!.uid!, 'volumes', 'kubernetes.io~configmap', 'cfg', 'mode');
    assert.equal(readFileSync(hostFile, 'utf8'), 'fast');
    const id = fake.containers()[0]!.id;
    kubelet.objects.set('file', cm('slow'));
    await kubelet.syncPod(p, 'sync');
    assert.equal(readFileSync(hostFile, 'utf8'), 'slow', 'the new content is in the volume');
    assert.deepEqual(
      fake.containers().map((c) => [c.id, c.state]),
      [[id, 'CONTAINER_RUNNING']],
      'the container kept running',
    );
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
  } finally {
    client.close();
    await fake.stop();
    dirs.cleanup();
  }
});
