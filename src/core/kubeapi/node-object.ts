import { readFileSync } from 'node:fs';
import { hostname, networkInterfaces, release } from 'node:os';
import type { INode, INodeCondition } from 'kubernetes-models/v1';
import { hostCapacity, nodeLabels, type NodeResources } from '../admission.js';

/**
 * The v1 Node this host's kubelet would post (pkg/kubelet/kubelet_node_status.go and nodestatus/setters.go):
 * the default labels, capacity and allocatable, the four conditions with the kubelet's reasons and messages,
 * addresses and nodeInfo.
 */

export interface NodeConditionInput {
  /** Since when the condition has said what it says now (its lastTransitionTime): epoch ms or RFC 3339. */
  since: number | string;
}

export interface NodeObjectInput {
  name: string;
  /** --node-labels (and admission's labels): over the kubelet's default ones. */
  labels?: Record<string, string>;
  uid?: string;
  creationTimestamp: number | string;
  resourceVersion?: string;
  /** When the kubelet last posted its status: every condition's lastHeartbeatTime. */
  heartbeat: number | string;
  /** Milli-CPU and bytes, as admission's NodeResources. */
  capacity: NodeResources;
  allocatable: NodeResources;
  conditions: {
    /** Not ready: the kubelet's message says why ("container runtime is down", "PLEG is not healthy: …"). */
    ready: NodeConditionInput & { ok: boolean; reason?: string; message?: string };
    memoryPressure: NodeConditionInput & { pressure: boolean };
    diskPressure: NodeConditionInput & { pressure: boolean };
    pidPressure: NodeConditionInput & { pressure: boolean };
  };
  addresses: { InternalIP: string; Hostname: string };
  nodeInfo: {
    kernelVersion: string;
    osImage: string;
    /** The runtime's name and version as the CRI's Version gives them: "containerd://1.7.24". */
    containerRuntimeVersion: string;
    kubeletVersion: string;
    architecture: string;
    operatingSystem: string;
    machineID: string;
    systemUUID: string;
    bootID: string;
  };
  unschedulable?: boolean;
}

/** The kubelet's port, which the Node's daemonEndpoints name (podctl serves no kubelet API there). */
const KUBELET_PORT = 10250;

const rfc3339 = (t: number | string, field: string): string => {
  const ms = typeof t === 'number' ? t : Date.parse(t);
  if (!Number.isFinite(ms))
    throw new TypeError(`nodeObject: ${field} is ${JSON.stringify(t)}, expected epoch milliseconds or an RFC 3339 time`);
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
};

/** A CPU quantity in canonical form: whole cores as "2", else milli-CPU as "1500m". */
export function cpuQuantity(milli: number): string {
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

/** A byte quantity in canonical binary form (resource.Quantity's BinarySI): "16Gi", "8039748Ki", "1000". */
export function binaryQuantity(bytes: number): string {
  if (bytes === 0) return '0';
  const suffixes = ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'];
  for (let i = 0; i < suffixes.length; i++) {
    const unit = 1024 ** (suffixes.length - i);
    if (bytes % unit === 0) return `${bytes / unit}${suffixes[i]}`;
  }
  return String(bytes);
}

function resourceList(r: NodeResources): Record<string, string> {
  const field = (k: keyof NodeResources) => {
    const v = r[k];
    if (!Number.isFinite(v) || v < 0) throw new TypeError(`nodeObject: ${k} is ${String(v)}, expected a non-negative number`);
    return v;
  };
  return {
    cpu: cpuQuantity(field('cpu')),
    'ephemeral-storage': binaryQuantity(field('ephemeral-storage')),
    memory: binaryQuantity(field('memory')),
    pods: String(field('pods')),
  };
}

type PressureWords = [type: string, what: string];
const PRESSURE: Record<'memoryPressure' | 'diskPressure' | 'pidPressure', PressureWords> = {
  memoryPressure: ['MemoryPressure', 'Memory'],
  diskPressure: ['DiskPressure', 'Disk'],
  pidPressure: ['PIDPressure', 'PID'],
};

/** The kubelet's reason and message of a pressure condition (setters.go MemoryPressureCondition and the others). */
function pressureCondition(key: keyof typeof PRESSURE, c: NodeConditionInput & { pressure: boolean }, heartbeat: string): INodeCondition {
  const [type, what] = PRESSURE[key];
  let reason: string;
  let message: string;
  if (what === 'Disk') {
    reason = c.pressure ? 'KubeletHasDiskPressure' : 'KubeletHasNoDiskPressure';
    message = c.pressure ? 'kubelet has disk pressure' : 'kubelet has no disk pressure';
  } else {
    reason = c.pressure ? `KubeletHasInsufficient${what}` : `KubeletHasSufficient${what}`;
    message = `kubelet has ${c.pressure ? 'insufficient' : 'sufficient'} ${what === 'PID' ? 'PID' : 'memory'} available`;
  }
  return {
    type,
    status: c.pressure ? 'True' : 'False',
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: rfc3339(c.since, `conditions.${key}.since`),
    reason,
    message,
  };
}

export function nodeObject(input: NodeObjectInput): INode {
  if (!input.name) throw new TypeError('nodeObject: name is empty, expected the node name');
  const heartbeat = rfc3339(input.heartbeat, 'heartbeat');
  const { ready } = input.conditions;
  const info = input.nodeInfo;
  const labels = {
    'beta.kubernetes.io/arch': info.architecture,
    'beta.kubernetes.io/os': info.operatingSystem,
    'kubernetes.io/arch': info.architecture,
    'kubernetes.io/hostname': input.addresses.Hostname || input.name,
    'kubernetes.io/os': info.operatingSystem,
    ...(input.labels ?? {}),
  };
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: {
      name: input.name,
      ...(input.uid ? { uid: input.uid } : {}),
      ...(input.resourceVersion ? { resourceVersion: input.resourceVersion } : {}),
      creationTimestamp: rfc3339(input.creationTimestamp, 'creationTimestamp'),
      labels,
      // What the kubelet annotates its Node with at registration.
      annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    },
    spec: input.unschedulable ? { unschedulable: true } : {},
    status: {
      capacity: resourceList(input.capacity),
      allocatable: resourceList(input.allocatable),
      conditions: [
        pressureCondition('memoryPressure', input.conditions.memoryPressure, heartbeat),
        pressureCondition('diskPressure', input.conditions.diskPressure, heartbeat),
        pressureCondition('pidPressure', input.conditions.pidPressure, heartbeat),
        {
          type: 'Ready',
          status: ready.ok ? 'True' : 'False',
          lastHeartbeatTime: heartbeat,
          lastTransitionTime: rfc3339(ready.since, 'conditions.ready.since'),
          reason: ready.reason ?? (ready.ok ? 'KubeletReady' : 'KubeletNotReady'),
          message: ready.message ?? (ready.ok ? 'kubelet is posting ready status' : ''),
        },
      ],
      addresses: [
        { type: 'InternalIP', address: input.addresses.InternalIP },
        { type: 'Hostname', address: input.addresses.Hostname },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: KUBELET_PORT } },
      nodeInfo: {
        machineID: info.machineID,
        systemUUID: info.systemUUID,
        bootID: info.bootID,
        kernelVersion: info.kernelVersion,
        osImage: info.osImage,
        containerRuntimeVersion: info.containerRuntimeVersion,
        kubeletVersion: info.kubeletVersion,
        // Deprecated; kubelets since 1.31 leave it empty.
        kubeProxyVersion: '',
        operatingSystem: info.operatingSystem,
        architecture: info.architecture,
      },
    },
  };
}

/** What the host tells of itself for its Node. */
export interface NodeFacts {
  hostname: string;
  capacity: NodeResources;
  osImage: string;
  kernelVersion: string;
  machineID: string;
  systemUUID: string;
  bootID: string;
  internalIP: string;
  architecture: string;
  operatingSystem: string;
}

export interface NodeFactReaders {
  /** A file's text, or undefined when it cannot be read. */
  readFile: (path: string) => string | undefined;
  /** Admission's reading of the host's CPUs, memory and the root dir's file system. */
  capacity: (rootDir: string, maxPods: number) => NodeResources;
  release: () => string;
  hostname: () => string;
  networkInterfaces: typeof networkInterfaces;
  /** The kubelet's default labels, which say the host's kubernetes.io/os and kubernetes.io/arch. */
  labels: (nodeName: string) => Record<string, string>;
}

const readText = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

const HOST_READERS: NodeFactReaders = {
  readFile: readText,
  capacity: hostCapacity,
  release,
  hostname,
  networkInterfaces,
  labels: nodeLabels,
};

/** /etc/os-release's PRETTY_NAME (quotes and escapes as os-release(5) allows), else "Linux", as cadvisor falls back. */
export function osImageOf(osRelease: string | undefined): string {
  const line = (osRelease ?? '').split('\n').find((l) => l.startsWith('PRETTY_NAME='));
  if (!line) return 'Linux';
  let v = line.slice('PRETTY_NAME='.length).trim();
  if (/^(["']).*\1$/.test(v)) v = v.slice(1, -1);
  return v.replace(/\\(["'\\$`])/g, '$1') || 'Linux';
}

/** The first non-internal IPv4 address of the host's interfaces, else loopback. */
export function firstHostIPv4(interfaces: ReturnType<typeof networkInterfaces>): string {
  for (const addrs of Object.values(interfaces)) {
    const a = (addrs ?? []).find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return a.address;
  }
  return '127.0.0.1';
}

/** The host's facts for its Node, read once (readers injectable for tests). */
export function readNodeFacts(o: { rootDir: string; maxPods: number }, readers: Partial<NodeFactReaders> = {}): NodeFacts {
  const r = { ...HOST_READERS, ...readers };
  const name = r.hostname().toLowerCase();
  const labels = r.labels(name);
  const line = (path: string) => (r.readFile(path) ?? '').trim();
  return {
    hostname: name,
    capacity: r.capacity(o.rootDir, o.maxPods),
    osImage: osImageOf(r.readFile('/etc/os-release')),
    kernelVersion: r.release(),
    machineID: line('/etc/machine-id'),
    // Readable by root only on most hosts: empty otherwise, as the kubelet leaves it when cadvisor cannot read it.
    systemUUID: line('/sys/class/dmi/id/product_uuid'),
    bootID: line('/proc/sys/kernel/random/boot_id'),
    internalIP: firstHostIPv4(r.networkInterfaces()),
    architecture: labels['kubernetes.io/arch'] ?? '',
    operatingSystem: labels['kubernetes.io/os'] ?? '',
  };
}
