import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { arch, cpus, platform, totalmem } from 'node:os';
import type { IContainer, INodeSelectorRequirement, INodeSelectorTerm, IPod } from 'kubernetes-models/v1';
import { PodctlError } from './errors.js';
import { bytes, milliCPU } from './util/quantity.js';
import { podKey } from './util/pod-key.js';

/** cpu in millicores, the rest in bytes or a count: the kubelet's Resource. */
export interface NodeResources {
  cpu: number;
  memory: number;
  'ephemeral-storage': number;
  pods: number;
}

/** What admission knows of this node: its labels and its allocatable. */
export interface NodeInfo {
  name: string;
  labels: Record<string, string>;
  allocatable: NodeResources;
  /** Whether the host enforces AppArmor (/sys/module/apparmor/parameters/enabled); unknown counts as yes. */
  appArmor?: boolean;
  /** Whether the host enforces SELinux (selinuxfs mounted: /sys/fs/selinux/enforce); unknown counts as yes. */
  seLinux?: boolean;
}

/** go-selinux's check, which containerd makes before it applies a label: selinuxfs is mounted. */
export function hostHasSELinux(exists: (path: string) => boolean = existsSync): boolean {
  return exists('/sys/fs/selinux/enforce');
}

type SELinuxOptions = { user?: string; role?: string; type?: string; level?: string };
const seLinuxLabel = (o: SELinuxOptions | undefined) =>
  (['user', 'role', 'type', 'level'] as const)
    .filter((k) => o?.[k])
    .map((k) => `${k} ${o![k]}`)
    .join(', ');

/**
 * The first place that asks for an SELinux label. On a host without SELinux containerd applies none:
 * the container would run unconfined by what it asked for, so such a pod is refused, as AppArmor is.
 */
function seLinuxRequired(pod: IPod): string | undefined {
  const own = seLinuxLabel(pod.spec?.securityContext?.seLinuxOptions);
  if (own) return `the pod asks for the label ${own}`;
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    const label = seLinuxLabel(c.securityContext?.seLinuxOptions);
    if (label) return `container ${c.name} asks for the label ${label}`;
  }
  return undefined;
}

/**
 * The kubelet's SupplementalGroupsPolicy admission: Strict needs a runtime that reports the feature
 * (the node's status.features). The CRI podctl speaks (containerd 1.6's) has no field for the policy,
 * so the image's /etc/group memberships would be merged (Merge): a pod asking Strict is refused.
 */
export const SUPPLEMENTAL_GROUPS_POLICY_REFUSAL = {
  reason: 'SupplementalGroupsPolicyNotSupported',
  message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
} as const;

/** The kubelet's AppArmor check: the module loaded and enabled. */
export function hostHasAppArmor(read: (path: string) => string = (p) => readFileSync(p, 'utf8')): boolean {
  try {
    return read('/sys/module/apparmor/parameters/enabled').trim().startsWith('Y');
  } catch {
    return false;
  }
}

const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';

/**
 * The first container that asks for AppArmor (a profile other than Unconfined, by field or
 * annotation): the kubelet's AppArmor validator refuses such a pod on a host without AppArmor.
 */
function appArmorRequired(pod: IPod): string | undefined {
  const podType = pod.spec?.securityContext?.appArmorProfile?.type;
  if (podType !== undefined && podType !== 'Unconfined') return `the pod asks for the ${podType} profile`;
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  for (const c of containers) {
    const type = c.securityContext?.appArmorProfile?.type;
    if (type !== undefined && type !== 'Unconfined') return `container ${c.name} asks for the ${type} profile`;
  }
  for (const c of containers) {
    const annotation = pod.metadata?.annotations?.[`${APPARMOR_ANNOTATION}${c.name}`];
    if (annotation !== undefined && annotation !== 'unconfined') return `container ${c.name} asks for the ${annotation} profile`;
  }
  return undefined;
}

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

/** Go's GOARCH for Node's arch(), for the kubernetes.io/arch label. */
const GOARCH: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'arm',
  ia32: '386',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

/** The kubelet's default node labels, then --node-labels over them. */
export function nodeLabels(nodeName: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'kubernetes.io/hostname': nodeName, 'kubernetes.io/os': platform(), 'kubernetes.io/arch': GOARCH[arch()] ?? arch(), ...extra };
}

/** Parses the kubelet's map flags: `key=value,key2=value2` (--node-labels, --system-reserved). */
export function parseMapFlag(value: string | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (value ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const i = part.indexOf('=');
    if (i <= 0)
      throw new PodctlError(
        `${flag}: "${part}" is not key=value; expected e.g. ${flag === '--node-labels' ? 'disktype=ssd,zone=a' : 'cpu=100m,memory=100Mi'}`,
        { exitCode: 2 },
      );
    out[part.slice(0, i)] = part.slice(i + 1);
  }
  return out;
}

/** A reserved amount (--system-reserved, --kube-reserved) as NodeResources. */
export function parseReserved(value: string | undefined, flag: string): Partial<NodeResources> {
  const out: Partial<NodeResources> = {};
  for (const [k, v] of Object.entries(parseMapFlag(value, flag))) {
    if (k !== 'cpu' && k !== 'memory' && k !== 'ephemeral-storage' && k !== 'pid') {
      throw new PodctlError(`${flag}: unknown resource "${k}"; expected cpu, memory, ephemeral-storage or pid`, { exitCode: 2 });
    }
    if (k === 'pid') continue;
    const n = k === 'cpu' ? milliCPU(v) : bytes(v);
    if (n === undefined || n < 0)
      throw new PodctlError(`${flag}: ${k}=${v} is not a quantity; expected e.g. ${k === 'cpu' ? '100m' : '100Mi'}`, { exitCode: 2 });
    out[k] = n;
  }
  return out;
}

/** This host's capacity: its CPUs, memory, the root dir's file system and --max-pods. */
export function hostCapacity(rootDir: string, maxPods: number): NodeResources {
  let storage = 0;
  try {
    const st = statfsSync(rootDir);
    storage = st.blocks * st.bsize;
  } catch {
    storage = 0;
  }
  return { cpu: cpus().length * 1000, memory: totalmem(), 'ephemeral-storage': storage, pods: maxPods };
}

/** Allocatable = capacity - system-reserved - kube-reserved (never below zero). */
export function allocatable(capacity: NodeResources, ...reserved: Partial<NodeResources>[]): NodeResources {
  const out = { ...capacity };
  for (const r of reserved) for (const k of ['cpu', 'memory', 'ephemeral-storage'] as const) out[k] = Math.max(0, out[k] - (r[k] ?? 0));
  return out;
}

const RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const;

function containerRequests(c: IContainer): Record<(typeof RESOURCES)[number], number> {
  const req = (c.resources?.requests ?? {}) as Record<string, string | number>;
  const lim = (c.resources?.limits ?? {}) as Record<string, string | number>;
  // The API server defaults a request to its limit.
  const v = (k: string) => req[k] ?? lim[k];
  return { cpu: milliCPU(v('cpu')) ?? 0, memory: bytes(v('memory')) ?? 0, 'ephemeral-storage': bytes(v('ephemeral-storage')) ?? 0 };
}

/**
 * The pod's effective request: app containers and sidecars together, or
 * an init container with the sidecars started before it, whichever is more
 * (the kubelet's PodRequests).
 */
export function podRequests(pod: IPod): Record<(typeof RESOURCES)[number], number> {
  const total = { cpu: 0, memory: 0, 'ephemeral-storage': 0 };
  const sidecars = { cpu: 0, memory: 0, 'ephemeral-storage': 0 };
  const initMax = { cpu: 0, memory: 0, 'ephemeral-storage': 0 };
  for (const c of pod.spec?.initContainers ?? []) {
    const r = containerRequests(c);
    for (const k of RESOURCES) {
      if (c.restartPolicy === 'Always') sidecars[k] += r[k];
      else initMax[k] = Math.max(initMax[k], r[k] + sidecars[k]);
    }
  }
  for (const c of pod.spec?.containers ?? []) {
    const r = containerRequests(c);
    for (const k of RESOURCES) total[k] += r[k];
  }
  for (const k of RESOURCES) total[k] = Math.max(total[k] + sidecars[k], initMax[k]);
  return total;
}

function requirementMatches(r: INodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
      return value !== undefined && /^-?\d+$/.test(value) && Number(value) > Number(values[0]);
    case 'Lt':
      return value !== undefined && /^-?\d+$/.test(value) && Number(value) < Number(values[0]);
    default:
      return false;
  }
}

function termMatches(term: INodeSelectorTerm, node: NodeInfo): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  // A term with no requirement matches nothing.
  if (exprs.length === 0 && fields.length === 0) return false;
  return (
    exprs.every((r) => requirementMatches(r, node.labels[r.key])) &&
    fields.every((r) => requirementMatches(r, r.key === 'metadata.name' ? node.name : undefined))
  );
}

const describeTerm = (t: INodeSelectorTerm) =>
  [...(t.matchExpressions ?? []), ...(t.matchFields ?? [])]
    .map((r) => `${r.key} ${r.operator}${r.values?.length ? ` [${r.values.join(', ')}]` : ''}`)
    .join(', ') || '{}';

/** nodeSelector and the required node affinity against the node's labels (the kubelet's NodeAffinity predicate). */
function nodeAffinityFailure(pod: IPod, node: NodeInfo): string | undefined {
  const unmet = Object.entries(pod.spec?.nodeSelector ?? {}).filter(([k, v]) => node.labels[k] !== v);
  if (unmet.length) return `nodeSelector ${unmet.map(([k, v]) => `${k}=${v}`).join(', ')}`;
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && terms.length && !terms.some((t) => termMatches(t, node))) {
    return `required node affinity ${terms.map((t) => `{${describeTerm(t)}}`).join(' or ')}`;
  }
  return undefined;
}

const hostPorts = (pod: IPod) =>
  [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].flatMap((c) =>
    (c.ports ?? []).filter((p) => p.hostPort).map((p) => ({ protocol: p.protocol ?? 'TCP', ip: p.hostIP || '0.0.0.0', port: p.hostPort! })),
  );

/**
 * The kubelet's GeneralPredicates for one pod against those already admitted:
 * node affinity, host ports, then resources (requests plus the admitted pods'
 * requests within allocatable, and the pod count within --max-pods).
 */
export function admitPod(pod: IPod, admitted: IPod[], node: NodeInfo): AdmitResult {
  // The security the pod asks for, before anything of the node's: never run with a looser one.
  if (pod.spec?.securityContext?.supplementalGroupsPolicy === 'Strict') return { admit: false, ...SUPPLEMENTAL_GROUPS_POLICY_REFUSAL };
  // Only Unconfined (or no profile: the runtime's default) runs on a host without AppArmor.
  const apparmor = node.appArmor === false ? appArmorRequired(pod) : undefined;
  if (apparmor)
    return { admit: false, reason: 'AppArmor', message: `Cannot enforce AppArmor: AppArmor is not enabled on the host (${apparmor})` };
  const selinux = node.seLinux === false ? seLinuxRequired(pod) : undefined;
  if (selinux)
    return { admit: false, reason: 'SELinux', message: `Cannot enforce SELinux: SELinux is not enabled on the host (${selinux})` };
  const affinity = nodeAffinityFailure(pod, node);
  if (affinity)
    return {
      admit: false,
      reason: 'NodeAffinity',
      message:
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector " +
        `(${affinity}; node labels: ${Object.entries(node.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')})`,
    };
  const taken = admitted.flatMap(hostPorts);
  const clash = hostPorts(pod).find((p) =>
    taken.some((t) => t.port === p.port && t.protocol === p.protocol && (t.ip === p.ip || t.ip === '0.0.0.0' || p.ip === '0.0.0.0')),
  );
  if (clash)
    return {
      admit: false,
      reason: 'NodePorts',
      message:
        `Predicate NodePorts failed: node(s) didn't have free ports for the ` +
        `requested pod ports (${clash.protocol} ${clash.ip}:${clash.port})`,
    };
  const alloc = node.allocatable;
  if (admitted.length + 1 > alloc.pods) {
    return {
      admit: false,
      reason: 'OutOfpods',
      message: `Node didn't have enough resource: pods, requested: 1, used: ${admitted.length}, capacity: ${alloc.pods}`,
    };
  }
  const want = podRequests(pod);
  const used = { cpu: 0, memory: 0, 'ephemeral-storage': 0 };
  for (const p of admitted) {
    const r = podRequests(p);
    for (const k of RESOURCES) used[k] += r[k];
  }
  for (const k of RESOURCES) {
    if (want[k] > 0 && used[k] + want[k] > alloc[k]) {
      return {
        admit: false,
        reason: `OutOf${k}`,
        message: `Node didn't have enough resource: ${k}, requested: ${want[k]}, used: ${used[k]}, capacity: ${alloc[k]}`,
      };
    }
  }
  return { admit: true };
}

/**
 * The kubelet's admission, for what one node can check before running
 * anything: privileged containers need --allow-privileged, a pod a running
 * watch keeps is left to it, and, given the node, the GeneralPredicates
 * (node affinity, host ports, resources: src/core/admission.ts). Without the
 * node (plans), only host ports are checked.
 */
export function admitPods(
  pods: IPod[],
  opts: { allowPrivileged?: boolean; node?: NodeInfo } = {},
): { admitted: IPod[]; rejected: { pod: IPod; reason: string; message: string }[] } {
  const claimed = new Map<string, string>();
  const admitted: IPod[] = [];
  const rejected: { pod: IPod; reason: string; message: string }[] = [];
  for (const pod of pods) {
    const name = podKey(pod);
    const privileged = [...(pod.spec!.initContainers ?? []), ...pod.spec!.containers].find((c) => c.securityContext?.privileged);
    if (privileged && !opts.allowPrivileged) {
      rejected.push({
        pod,
        reason: 'Forbidden',
        message: `container ${privileged.name} is privileged; pass --allow-privileged to run privileged containers`,
      });
      continue;
    }
    if (opts.node) {
      const result = admitPod(pod, admitted, opts.node);
      if (!result.admit) {
        rejected.push({ pod, reason: result.reason, message: `${result.reason}: ${result.message}` });
        continue;
      }
      admitted.push(pod);
      continue;
    }
    const ports = pod.spec!.containers.flatMap((c) =>
      (c.ports ?? []).filter((p) => p.hostPort).map((p) => `${p.protocol ?? 'TCP'}/${p.hostIP ?? '0.0.0.0'}:${p.hostPort}`),
    );
    const conflict = ports.find((p) => claimed.has(p));
    if (conflict) {
      rejected.push({ pod, reason: 'NodePorts', message: `host port ${conflict} is already claimed by pod ${claimed.get(conflict)}` });
      continue;
    }
    for (const p of ports) claimed.set(p, name);
    admitted.push(pod);
  }
  return { admitted, rejected };
}
