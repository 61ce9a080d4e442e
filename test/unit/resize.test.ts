import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, stopFake } from '../support/fake-runtime.js';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import { computePodActions, isNoop } from '../../src/core/kuberuntime/actions.js';
import { canonicalJSON } from '../../src/core/util/canonical-json.js';
import { resourcesFromRuntime } from '../../src/core/kuberuntime/resize.js';
import { planPod } from '../../src/core/plan.js';
import { renderPlan } from '../../src/cli/render.js';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { container, instance, makePod, podStatus, sandbox } from '../support/builders.js';

const withResources = (c: IContainer, limits: Record<string, string>, extra: Partial<IContainer> = {}): IContainer => ({
  ...c,
  resources: { limits },
  ...extra,
});
const small = withResources(container('app'), { cpu: '250m', memory: '64Mi' });
/** The running instance of `created`, its spec copy and hash as container start records them. */
const running = (created: IContainer, extra = {}) => instance(created, { specJSON: canonicalJSON(created), ...extra });
const pod = (c: IContainer): IPod => makePod({ containers: [c] });

test('a cpu and memory limit raised with the default resizePolicy is a resize, not a restart', () => {
  const big = withResources(container('app'), { cpu: '500m', memory: '128Mi' });
  const actions = computePodActions(pod(big), podStatus(pod(big), [sandbox()], [running(small)]));
  assert.deepEqual(actions.containersToKill, []);
  assert.deepEqual(actions.containersToStart, []);
  assert.equal(actions.containersToResize.length, 1);
  const r = actions.containersToResize[0]!;
  assert.deepEqual(r.changes, [
    { resource: 'cpu', field: 'limits', from: '250m', to: '500m' },
    { resource: 'memory', field: 'limits', from: '64Mi', to: '128Mi' },
  ]);
  assert.deepEqual(
    r.linux,
    { cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000, memoryLimitInBytes: 128 * 2 ** 20 },
    'computed as container start computes them',
  );
  assert.equal(isNoop(actions), false);
});

test('once the runtime reports the new resources in effect, the pod is in its desired state (the hash annotation stays old)', () => {
  const big = withResources(container('app'), { cpu: '500m', memory: '128Mi' });
  const status = podStatus(
    pod(big),
    [sandbox()],
    [running(small, { resources: { cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000, memoryLimitInBytes: 128 * 2 ** 20 } })],
  );
  assert.equal(isNoop(computePodActions(pod(big), status)), true);
  // Back down to the old values: a resize again, from what is in effect.
  const back = computePodActions(pod(small), status);
  assert.deepEqual(
    back.containersToResize[0]?.changes.map((c) => `${c.resource} ${c.field} ${c.from} → ${c.to}`),
    ['cpu limits 500m → 250m', 'memory limits 128Mi → 64Mi'],
  );
});

test('resizePolicy RestartContainer for a changed resource restarts the container; for an unchanged one it does not', () => {
  const restartMemory = { resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] };
  const createdWithPolicy = { ...small, ...restartMemory };
  const memUp = withResources(container('app'), { cpu: '250m', memory: '128Mi' }, restartMemory);
  const a = computePodActions(pod(memUp), podStatus(pod(memUp), [sandbox()], [running(createdWithPolicy)]));
  assert.deepEqual(a.containersToResize, []);
  assert.equal(a.containersToKill[0]?.reason, 'SpecChanged');
  assert.equal(a.containersToKill[0]?.message, 'Container app resize requires restart (memory limit 64Mi → 128Mi)');
  assert.equal(a.containersToStart[0]?.name, 'app');
  const cpuUp = withResources(container('app'), { cpu: '500m', memory: '64Mi' }, restartMemory);
  const b = computePodActions(pod(cpuUp), podStatus(pod(cpuUp), [sandbox()], [running(createdWithPolicy)]));
  assert.equal(b.containersToResize.length, 1);
  assert.deepEqual(b.containersToKill, []);
});

test("anything else that changed (image, ephemeral-storage) restarts as before; a resize that would change the QoS class is refused in the API server's words", () => {
  const image = { ...withResources(container('app'), { cpu: '500m', memory: '64Mi' }), image: 'busybox:latest' };
  const a = computePodActions(pod(image), podStatus(pod(image), [sandbox()], [running(small)]));
  assert.equal(a.containersToKill[0]?.message, 'Container app definition changed, will be restarted');
  assert.deepEqual(a.containersToResize, []);
  const eph = withResources(container('app'), { cpu: '250m', memory: '64Mi', 'ephemeral-storage': '1Gi' });
  assert.equal(computePodActions(pod(eph), podStatus(pod(eph), [sandbox()], [running(small)])).containersToKill.length, 1);
  // small is Guaranteed (requests default to limits); requests below the limits make it Burstable.
  const burstable: IContainer = {
    ...container('app'),
    resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '250m', memory: '64Mi' } },
  };
  const createdGuaranteed: IContainer = {
    ...container('app'),
    resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '250m', memory: '64Mi' } },
  };
  const q = computePodActions(pod(burstable), podStatus(pod(burstable), [sandbox()], [running(createdGuaranteed)]));
  assert.deepEqual(q.containersToKill, [], 'the QoS class cannot change: nothing restarts');
  assert.match(q.containersToResize[0]?.refused ?? '', /^Pod QOS Class may not change as a result of resizing \(Guaranteed → Burstable\)/);
  const p = planPod({
    pod: pod(burstable),
    status: podStatus(pod(burstable), [sandbox()], [running(createdGuaranteed)]),
    now: 10_000,
    imagePresent: () => true,
  });
  assert.match(
    renderPlan({ apiVersion: 'podctl/v1', kind: 'Plan', changes: true, pods: [p] }),
    /! resize container app: refused: .*Pod QOS Class may not change as a result of resizing/,
  );
});

test('plan says ~ resize … (no restart) and has a Resize action in JSON', () => {
  const big = withResources(container('app'), { cpu: '500m', memory: '128Mi' });
  const p = planPod({ pod: pod(big), status: podStatus(pod(big), [sandbox()], [running(small)]), now: 10_000, imagePresent: () => true });
  assert.equal(p.inDesiredState, false);
  assert.deepEqual(
    p.actions.map((a) => a.action),
    ['Resize'],
  );
  assert.equal(p.actions[0]!.resources?.length, 2);
  const text = renderPlan({ apiVersion: 'podctl/v1', kind: 'Plan', changes: true, pods: [p] });
  assert.match(text, /~ resize container app: cpu limit 250m → 500m, memory limit 64Mi → 128Mi \(no restart\)/);
});

test("the runtime's cgroup settings read back in the spec's terms", () => {
  assert.deepEqual(
    resourcesFromRuntime(
      { cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000, memoryLimitInBytes: 128 * 2 ** 20 },
      { requests: { cpu: '500m', memory: '100Mi' }, limits: { cpu: '500m', memory: '128Mi' } },
    ),
    {
      requests: { cpu: '500m', memory: '100Mi' },
      limits: { cpu: '500m', memory: '128Mi' },
    },
  );
  assert.deepEqual(resourcesFromRuntime({ cpuShares: 2, cpuQuota: 0, cpuPeriod: 0, memoryLimitInBytes: 0 }, undefined), {});
});

let fake: FakeRuntime;
let client: CriClient;
const clock = new FakeClock();
before(async () => ({ fake, client } = await startFake({ clock })));
after(async () => {
  await stopFake({ fake, client });
});

test('SyncPod resizes the running container in place: same container, new cgroup settings, status resources, a Resized event', async () => {
  const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent/logs', nodeName: 'unit' });
  const p = makePod({ uid: 'u-resize', name: 'rs', containers: [small] });
  kubelet.addOrUpdatePod(p);
  await kubelet.workers.waitIdle();
  const before = fake.containers().filter((c) => c.state === 'CONTAINER_RUNNING');
  assert.equal(before.length, 1);

  const bigger = makePod({ uid: 'u-resize', name: 'rs', containers: [withResources(container('app'), { cpu: '500m', memory: '128Mi' })] });
  kubelet.addOrUpdatePod(bigger);
  await kubelet.workers.waitIdle();
  const after = fake.containers().filter((c) => c.state === 'CONTAINER_RUNNING');
  assert.deepEqual(
    after.map((c) => c.id),
    before.map((c) => c.id),
    'the same container keeps running',
  );
  const linux = (await client.containerStatus(after[0]!.id)).status?.resources?.linux;
  assert.deepEqual([Number(linux?.cpuQuota), Number(linux?.memoryLimitInBytes)], [50000, 128 * 2 ** 20]);
  const cs = kubelet.statusManager.get('u-resize')!.containerStatuses![0]!;
  assert.equal(cs.restartCount, 0);
  assert.deepEqual(cs.resources, { limits: { cpu: '500m', memory: '128Mi' } });
  assert.ok(
    kubelet.events
      .all()
      .some(
        (e) => e.reason === 'Resized' && e.message === 'Container app resized in place: cpu limit 250m → 500m, memory limit 64Mi → 128Mi',
      ),
  );
  // Nothing more to do: the next sync changes nothing.
  const resizedEvents = () => kubelet.events.all().filter((e) => e.reason === 'Resized').length;
  const n = resizedEvents();
  await kubelet.syncPod(bigger, 'sync');
  assert.equal(resizedEvents(), n);
  kubelet.removePod('u-resize', 0);
  await kubelet.workers.waitIdle();
});

test(
  'a resize the node cannot hold is pending (Infeasible), the container keeps what it has; one that fits clears the ' + 'condition',
  async () => {
    const node = { name: 'unit', labels: {}, allocatable: { cpu: 1000, memory: 2 ** 30, 'ephemeral-storage': 2 ** 40, pods: 10 } };
    const kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: '/nonexistent/logs',
      nodeName: 'unit',
      admission: node,
    });
    const p = makePod({ uid: 'u-pending', name: 'pend', containers: [small] });
    kubelet.addOrUpdatePod(p);
    await kubelet.workers.waitIdle();
    const sb = fake.sandboxes().find((s) => s.metadata.name === 'pend' && s.state === 'SANDBOX_READY')!;
    const id = fake.containers().find((c) => c.state === 'CONTAINER_RUNNING' && c.podSandboxId === sb.id)!.id;
    const condition = (type: string) => kubelet.statusManager.get('u-pending')!.conditions?.find((c) => c.type === type);

    kubelet.addOrUpdatePod(
      makePod({ uid: 'u-pending', name: 'pend', containers: [withResources(container('app'), { cpu: '4', memory: '64Mi' })] }),
    );
    await kubelet.workers.waitIdle();
    const pending = condition('PodResizePending');
    assert.deepEqual(
      [pending?.status, pending?.reason, pending?.message],
      ['True', 'Infeasible', "Node didn't have enough capacity: cpu, requested: 4000, capacity: 1000"],
    );
    assert.equal(Number((await client.containerStatus(id)).status?.resources?.linux?.cpuQuota), 25000, 'not applied');

    kubelet.addOrUpdatePod(
      makePod({ uid: 'u-pending', name: 'pend', containers: [withResources(container('app'), { cpu: '500m', memory: '64Mi' })] }),
    );
    await kubelet.workers.waitIdle();
    assert.equal(condition('PodResizePending'), undefined);
    assert.equal(Number((await client.containerStatus(id)).status?.resources?.linux?.cpuQuota), 50000);
    kubelet.removePod('u-pending', 0);
    await kubelet.workers.waitIdle();
  },
);

test('a memory limit below what the container uses now is not applied: PodResizeInProgress says why', async () => {
  const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent/logs', nodeName: 'unit' });
  kubelet.addOrUpdatePod(makePod({ uid: 'u-shrink', name: 'shrink', containers: [small] }));
  await kubelet.workers.waitIdle();
  const sb = fake.sandboxes().find((s) => s.metadata.name === 'shrink' && s.state === 'SANDBOX_READY')!;
  const id = fake.containers().find((c) => c.state === 'CONTAINER_RUNNING' && c.podSandboxId === sb.id)!.id;
  // The fake reports 5 MiB in use.
  kubelet.addOrUpdatePod(
    makePod({ uid: 'u-shrink', name: 'shrink', containers: [withResources(container('app'), { cpu: '250m', memory: '4Mi' })] }),
  );
  await kubelet.workers.waitIdle();
  const c = kubelet.statusManager.get('u-shrink')!.conditions?.find((x) => x.type === 'PodResizeInProgress');
  assert.deepEqual([c?.status, c?.reason], ['True', 'Error']);
  assert.equal(c?.message, `attempting to set container app's memory limit (${4 * 2 ** 20}) below its current usage (${5 * 2 ** 20})`);
  assert.equal(Number((await client.containerStatus(id)).status?.resources?.linux?.memoryLimitInBytes), 64 * 2 ** 20, 'not applied');
  kubelet.removePod('u-shrink', 0);
  await kubelet.workers.waitIdle();
});

test(
  'a resize that would change the QoS class is refused: the container keeps running as it is, PodResizePending Infeasible and ' +
    'a warning say why',
  async () => {
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent/logs', nodeName: 'unit' });
    kubelet.addOrUpdatePod(makePod({ uid: 'u-qos', name: 'qos', containers: [small] }));
    await kubelet.workers.waitIdle();
    const sb = fake.sandboxes().find((s) => s.metadata.name === 'qos' && s.state === 'SANDBOX_READY')!;
    const id = fake.containers().find((c) => c.state === 'CONTAINER_RUNNING' && c.podSandboxId === sb.id)!.id;
    const burstable: IContainer = {
      ...container('app'),
      resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '250m', memory: '64Mi' } },
    };
    kubelet.addOrUpdatePod(makePod({ uid: 'u-qos', name: 'qos', containers: [burstable] }));
    await kubelet.workers.waitIdle();
    const running = fake.containers().filter((c) => c.state === 'CONTAINER_RUNNING' && c.podSandboxId === sb.id);
    assert.deepEqual(
      running.map((c) => c.id),
      [id],
      'not restarted',
    );
    assert.equal(Number((await client.containerStatus(id)).status?.resources?.linux?.cpuShares), 256, 'not resized');
    const status = kubelet.statusManager.get('u-qos')!;
    assert.equal(status.qosClass === 'Burstable' || status.qosClass === 'Guaranteed', true);
    const c = status.conditions?.find((x) => x.type === 'PodResizePending');
    assert.deepEqual([c?.status, c?.reason], ['True', 'Infeasible']);
    assert.match(c?.message ?? '', /^Pod QOS Class may not change as a result of resizing \(Guaranteed → Burstable\)/);
    assert.ok(kubelet.events.all().some((e) => e.reason === 'ResizeRefused' && e.type === 'Warning'));
    kubelet.removePod('u-qos', 0);
    await kubelet.workers.waitIdle();
  },
);

test('a resize that would fit the node but not beside the pods admitted now is pending, Deferred', async () => {
  const node = { name: 'unit', labels: {}, allocatable: { cpu: 1000, memory: 2 ** 30, 'ephemeral-storage': 2 ** 40, pods: 10 } };
  const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: '/nonexistent/logs', nodeName: 'unit', admission: node });
  kubelet.addOrUpdatePod(
    makePod({ uid: 'u-neighbour', name: 'neighbour', containers: [withResources(container('app'), { cpu: '600m', memory: '64Mi' })] }),
  );
  kubelet.addOrUpdatePod(makePod({ uid: 'u-defer', name: 'defer', containers: [small] }));
  await kubelet.workers.waitIdle();
  kubelet.addOrUpdatePod(
    makePod({ uid: 'u-defer', name: 'defer', containers: [withResources(container('app'), { cpu: '500m', memory: '64Mi' })] }),
  );
  await kubelet.workers.waitIdle();
  const c = kubelet.statusManager.get('u-defer')!.conditions?.find((x) => x.type === 'PodResizePending');
  assert.deepEqual(
    [c?.reason, c?.message],
    ['Deferred', "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000"],
  );
  // The neighbour goes: the deferred resize is tried again at once (the sync tick runs due work).
  kubelet.removePod('u-neighbour', 0);
  await kubelet.workers.waitIdle();
  kubelet.workers.syncDue();
  await kubelet.workers.waitIdle();
  assert.equal(
    kubelet.statusManager.get('u-defer')!.conditions?.find((x) => x.type === 'PodResizePending'),
    undefined,
  );
  const sb = fake.sandboxes().find((s) => s.metadata.name === 'defer' && s.state === 'SANDBOX_READY')!;
  const id = fake.containers().find((x) => x.state === 'CONTAINER_RUNNING' && x.podSandboxId === sb.id)!.id;
  assert.equal(Number((await client.containerStatus(id)).status?.resources?.linux?.cpuQuota), 50000);
  kubelet.removePod('u-defer', 0);
  await kubelet.workers.waitIdle();
});
