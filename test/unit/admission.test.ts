import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import {
  admitPod,
  admitPods,
  allocatable,
  hostHasAppArmor,
  hostHasSELinux,
  nodeLabels,
  parseMapFlag,
  parseReserved,
  podRequests,
  type NodeInfo,
} from '../../src/core/admission.js';

const node: NodeInfo = {
  name: 'node-a',
  labels: nodeLabels('node-a', { disktype: 'hdd', rack: '7' }),
  allocatable: { cpu: 2000, memory: 4 * 2 ** 30, 'ephemeral-storage': 10 * 2 ** 30, pods: 3 },
};

function pod(
  name: string,
  spec: Record<string, unknown> = {},
  requests: Record<string, string> = {},
  ports: { hostPort: number; containerPort: number }[] = [],
): IPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36', resources: { requests }, ports }], ...spec },
  } as IPod;
}

test('nodeSelector and required node affinity are matched against the node labels, naming the unmet term', () => {
  assert.deepEqual(admitPod(pod('a', { nodeSelector: { disktype: 'hdd', 'kubernetes.io/hostname': 'node-a' } }), [], node), {
    admit: true,
  });
  const r = admitPod(pod('b', { nodeSelector: { disktype: 'ssd' } }), [], node);
  assert.equal(r.admit, false);
  assert.equal(!r.admit && r.reason, 'NodeAffinity');
  assert.match(
    !r.admit ? r.message : '',
    /^Predicate NodeAffinity failed: node\(s\) didn't match Pod's node affinity\/selector \(nodeSelector disktype=ssd;/,
  );
  const affinity = (terms: unknown) =>
    pod('c', { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } });
  assert.equal(
    admitPod(
      affinity([
        { matchExpressions: [{ key: 'disktype', operator: 'In', values: ['ssd'] }] },
        { matchExpressions: [{ key: 'rack', operator: 'Gt', values: ['5'] }] },
      ]),
      [],
      node,
    ).admit,
    true,
    'terms are ORed',
  );
  assert.equal(admitPod(affinity([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }] }]), [], node).admit, true);
  const no = admitPod(
    affinity([
      {
        matchExpressions: [
          { key: 'rack', operator: 'Lt', values: ['5'] },
          { key: 'gpu', operator: 'DoesNotExist' },
        ],
      },
    ]),
    [],
    node,
  );
  assert.match(!no.admit ? no.message : '', /required node affinity \{rack Lt \[5\], gpu DoesNotExist\}/);
});

test("resources: requests plus those already admitted must fit allocatable, with the kubelet's reason and message", () => {
  const big = admitPod(pod('cpu', {}, { cpu: '100' }), [], node);
  assert.deepEqual(big, {
    admit: false,
    reason: 'OutOfcpu',
    message: "Node didn't have enough resource: cpu, requested: 100000, used: 0, capacity: 2000",
  });
  const first = pod('m1', {}, { memory: '3Gi' });
  assert.equal(admitPod(first, [], node).admit, true);
  assert.deepEqual(admitPod(pod('m2', {}, { memory: '2Gi' }), [first], node), {
    admit: false,
    reason: 'OutOfmemory',
    message: `Node didn't have enough resource: memory, requested: ${2 * 2 ** 30}, used: ${3 * 2 ** 30}, capacity: ${4 * 2 ** 30}`,
  });
  assert.deepEqual(admitPod(pod('p4'), [pod('p1'), pod('p2'), pod('p3')], node), {
    admit: false,
    reason: 'OutOfpods',
    message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
  });
});

test('a host port taken by an admitted pod is refused (NodePorts); another port is not', () => {
  const a = pod('a', {}, {}, [{ hostPort: 8080, containerPort: 80 }]);
  const r = admitPod(pod('b', {}, {}, [{ hostPort: 8080, containerPort: 80 }]), [a], node);
  assert.equal(!r.admit && r.reason, 'NodePorts');
  assert.equal(admitPod(pod('c', {}, {}, [{ hostPort: 8081, containerPort: 80 }]), [a], node).admit, true);
});

test('the effective request: app containers and sidecars, or the largest init container, a limit standing for a missing request', () => {
  const p = pod(
    'x',
    {
      initContainers: [
        { name: 'init', image: 'busybox:1.36', resources: { requests: { cpu: '3' } } },
        { name: 'side', image: 'busybox:1.36', restartPolicy: 'Always', resources: { requests: { cpu: '500m' } } },
      ],
    },
    { cpu: '1' },
  );
  assert.equal(podRequests(p).cpu, 3000);
  const q = pod('y');
  q.spec!.containers[0]!.resources = { limits: { memory: '64Mi' } };
  assert.equal(podRequests(q).memory, 64 * 2 ** 20);
});

test("the kubelet's flag syntax for labels and reservations; bad input names the flag", () => {
  assert.deepEqual(parseMapFlag('disktype=ssd, zone=a', '--node-labels'), { disktype: 'ssd', zone: 'a' });
  assert.deepEqual(
    allocatable(
      { cpu: 2000, memory: 1000, 'ephemeral-storage': 10, pods: 110 },
      parseReserved('cpu=100m,memory=100', '--system-reserved'),
      parseReserved('cpu=200m', '--kube-reserved'),
    ),
    { cpu: 1700, memory: 900, 'ephemeral-storage': 10, pods: 110 },
  );
  assert.throws(() => parseReserved('cpu=lots', '--kube-reserved'), /--kube-reserved: cpu=lots is not a quantity/);
  assert.throws(() => parseMapFlag('disktype', '--node-labels'), /--node-labels: "disktype" is not key=value/);
  assert.equal(nodeLabels('n1')['kubernetes.io/hostname'], 'n1');
  assert.equal(nodeLabels('n1')['kubernetes.io/os'], 'linux');
});

test("AppArmor: any profile but Unconfined (field or annotation) is refused when the host has none, as the kubelet's AppArmor validator", () => {
  const noAA: NodeInfo = { ...node, appArmor: false };
  const local = pod('aa', { securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'mine' } } });
  assert.deepEqual(admitPod(local, [], noAA), {
    admit: false,
    reason: 'AppArmor',
    message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host (the pod asks for the Localhost profile)',
  });
  assert.equal(admitPod(local, [], { ...node, appArmor: true }).admit, true);
  const annotated = pod('ann');
  annotated.metadata!.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'localhost/mine' };
  assert.equal(admitPod(annotated, [], noAA).admit, false);
  const rd = admitPod(pod('rd', { securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }), [], noAA);
  assert.equal(rd.admit, false, 'RuntimeDefault needs AppArmor too');
  assert.equal(admitPod(pod('un', { securityContext: { appArmorProfile: { type: 'Unconfined' } } }), [], noAA).admit, true);
  const mixed = pod('mixed');
  mixed.spec!.containers[0]!.securityContext = { appArmorProfile: { type: 'RuntimeDefault' } };
  assert.match(
    !admitPod(mixed, [], noAA).admit ? (admitPod(mixed, [], noAA) as { message: string }).message : '',
    /container app asks for the RuntimeDefault profile/,
  );
  const unconfinedAnnotation = pod('ua');
  unconfinedAnnotation.metadata!.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined' };
  assert.equal(admitPod(unconfinedAnnotation, [], noAA).admit, true);
  assert.equal(
    hostHasAppArmor(() => 'Y\n'),
    true,
  );
  assert.equal(
    hostHasAppArmor(() => 'N\n'),
    false,
  );
  assert.equal(
    hostHasAppArmor(() => {
      throw new Error('ENOENT');
    }),
    false,
  );
});

test("supplementalGroupsPolicy: Strict is refused in the kubelet's words, on any node (the runtime cannot honour it); Merge is admitted", () => {
  const strict = pod('strict', { securityContext: { runAsUser: 1000, supplementalGroupsPolicy: 'Strict' } });
  assert.deepEqual(admitPod(strict, [], node), {
    admit: false,
    reason: 'SupplementalGroupsPolicyNotSupported',
    message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
  });
  assert.deepEqual(admitPod(pod('merge', { securityContext: { supplementalGroupsPolicy: 'Merge' } }), [], node), { admit: true });
  const { admitted, rejected } = admitPods([strict, pod('other')], { node });
  assert.deepEqual(
    admitted.map((p) => p.metadata!.name),
    ['other'],
  );
  assert.deepEqual(
    rejected.map((r) => [r.reason, r.message]),
    [
      [
        'SupplementalGroupsPolicyNotSupported',
        'SupplementalGroupsPolicyNotSupported: SupplementalGroupsPolicy=Strict is not supported in this node',
      ],
    ],
  );
});

test(
  'SELinux: a label (pod or container) is refused on a host without SELinux, where the runtime would apply none; an empty ' + 'one is not',
  () => {
    const noSE: NodeInfo = { ...node, seLinux: false };
    const podLabel = pod('se', { securityContext: { seLinuxOptions: { level: 's0:c1,c2' } } });
    assert.deepEqual(admitPod(podLabel, [], noSE), {
      admit: false,
      reason: 'SELinux',
      message: 'Cannot enforce SELinux: SELinux is not enabled on the host (the pod asks for the label level s0:c1,c2)',
    });
    assert.equal(admitPod(podLabel, [], { ...node, seLinux: true }).admit, true);
    assert.equal(admitPod(podLabel, [], node).admit, true, 'unknown counts as SELinux enabled');
    const own = pod('own');
    own.spec!.containers[0]!.securityContext = { seLinuxOptions: { type: 'container_t', user: 'system_u' } };
    const r = admitPod(own, [], noSE);
    assert.match(!r.admit ? r.message : '', /\(container app asks for the label user system_u, type container_t\)$/);
    assert.equal(admitPod(pod('empty', { securityContext: { seLinuxOptions: {} } }), [], noSE).admit, true);
    assert.equal(
      hostHasSELinux(() => true),
      true,
    );
    assert.equal(
      hostHasSELinux(() => false),
      false,
    );
  },
);

test("the kubelet admits each pod a source adds: a rejected one is held Failed with the kubelet's words and never run; an edit that fits is admitted", async () => {
  const { FakeClock } = await import('../../src/core/clock.js');
  const { CriClient } = await import('../../src/core/cri/client.js');
  const { FakeRuntime } = await import('../../fakecri/index.js');
  const { newKubelet } = await import('../../src/core/node/compose.js');
  const clock = new FakeClock();
  const fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  try {
    const kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: '/nonexistent/logs',
      nodeName: 'node-a',
      admission: node,
    });
    const statuses: string[] = [];
    const synced: string[] = [];
    kubelet.observe({
      onStatus: ({ pod: p, status }) => statuses.push(`${p.metadata!.name} ${status.phase} ${status.reason ?? ''}`),
      onSynced: (p) => synced.push(p.metadata!.name!),
    });
    const withUid = (p: IPod, uid: string): IPod => ({ ...p, metadata: { ...p.metadata, uid } });
    const ssd = withUid(pod('ssd', { nodeSelector: { disktype: 'ssd' } }), 'u-ssd');
    const m1 = withUid(pod('m1', {}, { memory: '3Gi' }), 'u-m1');
    const m2 = withUid(pod('m2', {}, { memory: '2Gi' }), 'u-m2');
    const port1 = withUid(pod('port1', {}, {}, [{ hostPort: 8080, containerPort: 80 }]), 'u-p1');
    for (const p of [ssd, m1, m2, port1]) kubelet.addOrUpdatePod(p);
    await kubelet.workers.waitIdle();

    const ssdStatus = kubelet.statusManager.get('u-ssd')!;
    assert.deepEqual([ssdStatus.phase, ssdStatus.reason, ssdStatus.qosClass], ['Failed', 'NodeAffinity', 'BestEffort']);
    assert.match(
      ssdStatus.message!,
      /^Pod was rejected: Predicate NodeAffinity failed: node\(s\) didn't match Pod's node affinity\/selector \(nodeSelector disktype=ssd;/,
    );
    const m2Status = kubelet.statusManager.get('u-m2')!;
    assert.deepEqual([m2Status.phase, m2Status.reason], ['Failed', 'OutOfmemory']);
    assert.equal(kubelet.statusManager.get('u-m1')!.phase, 'Running');
    assert.equal(kubelet.statusManager.get('u-p1')!.phase, 'Running');
    assert.deepEqual(
      fake
        .sandboxes()
        .map((s) => s.metadata.name)
        .sort(),
      ['m1', 'port1'],
      'a rejected pod gets no sandbox',
    );
    assert.ok(kubelet.events.all().some((e) => e.reason === 'OutOfmemory' && e.type === 'Warning'));
    assert.ok(statuses.includes('ssd Failed NodeAffinity'), 'observers hear of the rejection');
    assert.ok(synced.includes('ssd'), 'the rejection settles this version (observedGeneration follows it)');
    assert.equal(kubelet.pods.has('u-ssd'), true, 'the pod manager holds it');

    // The pod limit (3) counts admitted pods only: m1 and port1 are admitted, so one more fits.
    const port2 = withUid(pod('port2', {}, {}, [{ hostPort: 8080, containerPort: 80 }]), 'u-p2');
    kubelet.addOrUpdatePod(port2);
    assert.equal(kubelet.statusManager.get('u-p2')!.reason, 'NodePorts');

    // An edit that fits is admitted and runs.
    kubelet.addOrUpdatePod(withUid(pod('ssd', { nodeSelector: { disktype: 'hdd' } }), 'u-ssd'));
    await kubelet.workers.waitIdle();
    assert.equal(kubelet.statusManager.get('u-ssd')!.phase, 'Running');
    assert.equal(kubelet.rejection('u-ssd'), undefined);

    // A rejected pod removed goes without touching the runtime's other pods.
    kubelet.removePod('u-m2', 0);
    await kubelet.workers.waitIdle();
    assert.equal(kubelet.pods.has('u-m2'), false);
    assert.equal(kubelet.statusManager.get('u-m2'), undefined);
    for (const uid of ['u-m1', 'u-p1', 'u-p2', 'u-ssd']) kubelet.removePod(uid, 0);
    await kubelet.workers.waitIdle();
    assert.equal(fake.sandboxes().filter((s) => s.state === 'SANDBOX_READY').length, 0);
  } finally {
    client.close();
    await fake.stop();
  }
});
