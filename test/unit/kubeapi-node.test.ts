import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Node } from 'kubernetes-models/v1';
import {
  binaryQuantity,
  cpuQuantity,
  firstHostIPv4,
  nodeObject,
  osImageOf,
  readNodeFacts,
  type NodeObjectInput,
} from '../../src/core/kubeapi/node-object.js';
import { toTable } from '../../src/core/kubeapi/table.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');

const input = (o: Partial<NodeObjectInput> = {}): NodeObjectInput => ({
  name: 'node-a',
  labels: { 'kubernetes.io/hostname': 'node-a', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', disktype: 'ssd' },
  uid: 'b0d1b3c4-0000-4000-8000-000000000001',
  creationTimestamp: NOW - 2 * 86_400_000,
  resourceVersion: '12',
  heartbeat: NOW - 5000,
  capacity: { cpu: 4000, memory: 8232701952, 'ephemeral-storage': 103865303040, pods: 110 },
  allocatable: { cpu: 3500, memory: 8232701952 - 512 * 1024 ** 2, 'ephemeral-storage': 47268948709, pods: 110 },
  conditions: {
    ready: { ok: true, since: NOW - 86_400_000 },
    memoryPressure: { pressure: false, since: NOW - 2 * 86_400_000 },
    diskPressure: { pressure: false, since: NOW - 2 * 86_400_000 },
    pidPressure: { pressure: false, since: NOW - 2 * 86_400_000 },
  },
  addresses: { InternalIP: '192.168.1.20', Hostname: 'node-a' },
  nodeInfo: {
    kernelVersion: '6.8.0-90-generic',
    osImage: 'Ubuntu 24.04.3 LTS',
    containerRuntimeVersion: 'containerd://1.7.24',
    kubeletVersion: 'v0.1.0-podctl',
    architecture: 'amd64',
    operatingSystem: 'linux',
    machineID: 'ec364030abf24d4892774fc716d9f108',
    systemUUID: 'b8eca071-b24d-3b4a-861d-b3c8d46e4fea',
    bootID: '1bb17f48-b4a9-4f4c-9a19-1639d0a5a2da',
  },
  ...o,
});

test("a v1 Node as the kubelet posts it: the four conditions with the kubelet's reasons and messages, quantities, labels, nodeInfo", () => {
  const node = nodeObject(input());
  new Node(node).validate();
  assert.deepEqual(
    node.status?.conditions?.map((c) => [c.type, c.status, c.reason, c.message, c.lastHeartbeatTime]),
    [
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available', '2026-03-01T11:59:55Z'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure', '2026-03-01T11:59:55Z'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available', '2026-03-01T11:59:55Z'],
      ['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status', '2026-03-01T11:59:55Z'],
    ],
  );
  assert.equal(node.status?.conditions?.[3]?.lastTransitionTime, '2026-02-28T12:00:00Z');
  assert.deepEqual(node.status?.capacity, { cpu: '4', 'ephemeral-storage': '101430960Ki', memory: '8039748Ki', pods: '110' });
  assert.deepEqual(node.status?.allocatable, { cpu: '3500m', 'ephemeral-storage': '47268948709', memory: '7515460Ki', pods: '110' });
  assert.deepEqual(node.metadata?.labels, {
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'kubernetes.io/hostname': 'node-a',
    'kubernetes.io/os': 'linux',
    disktype: 'ssd',
  });
  assert.deepEqual(node.status?.addresses, [
    { type: 'InternalIP', address: '192.168.1.20' },
    { type: 'Hostname', address: 'node-a' },
  ]);
  assert.equal(node.status?.nodeInfo?.containerRuntimeVersion, 'containerd://1.7.24');
  assert.equal(node.status?.nodeInfo?.kubeProxyVersion, '');
  assert.deepEqual(node.status?.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
  assert.equal(node.metadata?.creationTimestamp, '2026-02-27T12:00:00Z');
  assert.equal(node.metadata?.resourceVersion, '12');
});

test('pressure, a node not ready and one cordoned: the conditions say so, and get nodes prints NotReady,SchedulingDisabled', () => {
  const node = nodeObject(
    input({
      unschedulable: true,
      labels: { 'node-role.kubernetes.io/control-plane': '', 'kubernetes.io/role': 'edge' },
      conditions: {
        ready: { ok: false, message: 'container runtime is down', since: NOW - 60_000 },
        memoryPressure: { pressure: true, since: NOW },
        diskPressure: { pressure: true, since: NOW },
        pidPressure: { pressure: true, since: NOW },
      },
    }),
  );
  new Node(node).validate();
  assert.deepEqual(
    node.status?.conditions?.map((c) => [c.status, c.reason, c.message]),
    [
      ['True', 'KubeletHasInsufficientMemory', 'kubelet has insufficient memory available'],
      ['True', 'KubeletHasDiskPressure', 'kubelet has disk pressure'],
      ['True', 'KubeletHasInsufficientPID', 'kubelet has insufficient PID available'],
      ['False', 'KubeletNotReady', 'container runtime is down'],
    ],
  );
  assert.deepEqual(toTable('nodes', [node], { now: NOW }).rows[0]!.cells, [
    'node-a',
    'NotReady,SchedulingDisabled',
    'control-plane,edge',
    '2d',
    'v0.1.0-podctl',
    '192.168.1.20',
    '<none>',
    'Ubuntu 24.04.3 LTS',
    '6.8.0-90-generic',
    'containerd://1.7.24',
  ]);
  assert.deepEqual(toTable('nodes', [nodeObject(input())], { now: NOW }).rows[0]!.cells.slice(0, 5), [
    'node-a',
    'Ready',
    '<none>',
    '2d',
    'v0.1.0-podctl',
  ]);
});

test('quantities in canonical form; bad input is refused, naming the field', () => {
  assert.deepEqual([0, 1000, 1500, 250].map(cpuQuantity), ['0', '1', '1500m', '250m']);
  assert.deepEqual([0, 1000, 1024, 16 * 1024 ** 3, 1536, 1024 ** 2 * 3].map(binaryQuantity), ['0', '1000', '1Ki', '16Gi', '1536', '3Mi']);
  assert.throws(
    () => nodeObject(input({ heartbeat: 'yesterday' })),
    /nodeObject: heartbeat is "yesterday", expected epoch milliseconds or an RFC 3339 time/,
  );
  assert.throws(
    () => nodeObject(input({ capacity: { cpu: -1, memory: 1, 'ephemeral-storage': 1, pods: 1 } })),
    /nodeObject: cpu is -1, expected a non-negative number/,
  );
  assert.throws(() => nodeObject(input({ name: '' })), /nodeObject: name is empty/);
});

test("readNodeFacts: what the host gives (os-release's PRETTY_NAME, uname -r, machine and boot IDs, the first external IPv4)", () => {
  const files: Record<string, string> = {
    '/etc/os-release': 'NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n',
    '/etc/machine-id': 'ec364030abf24d4892774fc716d9f108\n',
    '/proc/sys/kernel/random/boot_id': '1bb17f48-b4a9-4f4c-9a19-1639d0a5a2da\n',
  };
  const iface = (address: string, family: 'IPv4' | 'IPv6', internal: boolean) => ({
    address,
    family,
    internal,
    netmask: '',
    mac: '00:00:00:00:00:00',
    cidr: null,
    ...(family === 'IPv6' ? { scopeid: 0 } : {}),
  });
  const facts = readNodeFacts(
    { rootDir: '/var/lib/podctl', maxPods: 110 },
    {
      readFile: (p) => files[p],
      capacity: (rootDir, maxPods) => ({
        cpu: rootDir === '/var/lib/podctl' ? 2000 : 0,
        memory: 4 * 1024 ** 3,
        'ephemeral-storage': 0,
        pods: maxPods,
      }),
      release: () => '6.1.0-18-amd64',
      hostname: () => 'Box-1',
      labels: (name) => ({ 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'arm64' }),
      networkInterfaces: () =>
        ({
          lo: [iface('127.0.0.1', 'IPv4', true)],
          eth0: [iface('fe80::1', 'IPv6', false), iface('10.0.0.7', 'IPv4', false)],
        }) as ReturnType<typeof import('node:os').networkInterfaces>,
    },
  );
  assert.deepEqual(facts, {
    hostname: 'box-1',
    capacity: { cpu: 2000, memory: 4 * 1024 ** 3, 'ephemeral-storage': 0, pods: 110 },
    osImage: 'Debian GNU/Linux 12 (bookworm)',
    kernelVersion: '6.1.0-18-amd64',
    machineID: 'ec364030abf24d4892774fc716d9f108',
    systemUUID: '',
    bootID: '1bb17f48-b4a9-4f4c-9a19-1639d0a5a2da',
    internalIP: '10.0.0.7',
    architecture: 'arm64',
    operatingSystem: 'linux',
  });
  assert.equal(osImageOf(undefined), 'Linux');
  assert.equal(osImageOf("PRETTY_NAME='Alpine Linux v3.20'"), 'Alpine Linux v3.20');
  assert.equal(osImageOf('PRETTY_NAME="Say \\"hi\\""'), 'Say "hi"');
  assert.equal(firstHostIPv4({ lo: [iface('127.0.0.1', 'IPv4', true)] } as never), '127.0.0.1');
  // On this host, with its own readers: whatever it has, in the shape a Node takes.
  const here = readNodeFacts({ rootDir: '/', maxPods: 110 });
  assert.ok(here.capacity.cpu >= 1000 && here.capacity.memory > 0);
  assert.match(here.internalIP, /^\d+\.\d+\.\d+\.\d+$/);
  assert.ok(here.kernelVersion.length > 0 && here.osImage.length > 0);
});
