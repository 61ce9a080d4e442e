import type { IContainer, IPod, IResourceRequirements } from 'kubernetes-models/v1';
import type { RuntimeContainerStatus } from '../container/types.js';
import type { RuntimeService } from '../cri/client.js';
import { formatBytesQuantity } from '../eviction/local-storage.js';
import { bytes, milliCPU } from '../util/quantity.js';
import { linuxResources, oomScoreAdj } from './config.js';
import { hashContainer } from './hash.js';

/** What a running container's cgroup holds, as the CRI reports it (ContainerStatus.resources.linux). */
export interface EffectiveResources {
  cpuShares: number;
  cpuQuota: number;
  cpuPeriod: number;
  memoryLimitInBytes: number;
}

/** One cpu or memory request or limit that a resize changes, in the quantities of the spec. */
export interface ResourceChange {
  resource: 'cpu' | 'memory';
  field: 'requests' | 'limits';
  from?: string;
  to?: string;
}

export type ResizeDecision =
  /** Nothing to do: what is in effect is what the spec asks. */
  | { kind: 'none' }
  | { kind: 'resize'; changes: ResourceChange[]; linux: EffectiveResources }
  | { kind: 'restart'; changes: ResourceChange[]; message: string };

type ResourceName = 'cpu' | 'memory';
const RESIZABLE: ResourceName[] = ['cpu', 'memory'];

function specOf(cs: RuntimeContainerStatus): IContainer | undefined {
  if (!cs.specJSON) return undefined;
  try {
    return JSON.parse(cs.specJSON) as IContainer;
  } catch {
    return undefined;
  }
}

const quantities = (r: IResourceRequirements | undefined, field: 'requests' | 'limits') =>
  (r?.[field] ?? {}) as Record<string, string | number>;

/** Whether two resource requirements differ in anything but cpu and memory (those restart the container). */
function otherResourcesDiffer(a: IResourceRequirements | undefined, b: IResourceRequirements | undefined): boolean {
  for (const field of ['requests', 'limits'] as const) {
    const qa = quantities(a, field);
    const qb = quantities(b, field);
    for (const k of new Set([...Object.keys(qa), ...Object.keys(qb)])) {
      if (RESIZABLE.includes(k as ResourceName)) continue;
      if (String(qa[k]) !== String(qb[k])) return true;
    }
  }
  return JSON.stringify(a?.claims ?? []) !== JSON.stringify(b?.claims ?? []);
}

const sameValue = (resource: ResourceName, a: string | number | undefined, b: string | number | undefined) =>
  a === undefined || b === undefined ? a === b : resource === 'cpu' ? milliCPU(a) === milliCPU(b) : bytes(a) === bytes(b);

/**
 * The runtime's cgroup settings back in the spec's terms: cpu from shares and quota, the memory limit; memory requests as the spec said.
 */
export function resourcesFromRuntime(linux: EffectiveResources, spec: IResourceRequirements | undefined): IResourceRequirements {
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  const req = quantities(spec, 'requests');
  const cores = (milli: number) => (milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`);
  if (req.cpu !== undefined) requests.cpu = cores(Math.round((linux.cpuShares * 1000) / 1024));
  if (req.memory !== undefined) requests.memory = String(req.memory);
  if (linux.cpuQuota > 0 && linux.cpuPeriod > 0) limits.cpu = cores(Math.round((linux.cpuQuota * 1000) / linux.cpuPeriod));
  if (linux.memoryLimitInBytes > 0) limits.memory = formatBytesQuantity(linux.memoryLimitInBytes);
  return { ...(Object.keys(requests).length ? { requests } : {}), ...(Object.keys(limits).length ? { limits } : {}) };
}

const toEffective = (r: ReturnType<typeof linuxResources>): EffectiveResources => ({
  cpuShares: Number(r.cpuShares ?? 0),
  cpuQuota: Number(r.cpuQuota ?? 0),
  cpuPeriod: Number(r.cpuPeriod ?? 0),
  memoryLimitInBytes: Number(r.memoryLimitInBytes ?? 0),
});

/** The resources a running container has now: the runtime's report, else what it was created with. */
export function effectiveResources(cs: RuntimeContainerStatus, created: IContainer): EffectiveResources {
  return cs.resources ?? toEffective(linuxResources(created));
}

/** The resize policy of one resource: NotRequired (the API default) or RestartContainer. */
function policyOf(c: IContainer, resource: ResourceName): string {
  return c.resizePolicy?.find((p) => p.resourceName === resource)?.restartPolicy ?? 'NotRequired';
}

/**
 * The kubelet's in-place resize decision for a running container whose spec hash changed
 * (computePodResizeAction): undefined when anything but cpu or memory requests and limits (or
 * resizePolicy) changed, so the container restarts as for any spec change. Otherwise a resize
 * through UpdateContainerResources, a restart when a changed resource's resizePolicy says
 * RestartContainer, or nothing when the cgroup already holds what the spec asks.
 */
export function resizeDecision(c: IContainer, cs: RuntimeContainerStatus): ResizeDecision | undefined {
  const created = specOf(cs);
  if (!created) return undefined;
  if (hashContainer({ ...c, resources: created.resources, resizePolicy: created.resizePolicy }) !== cs.hash) return undefined;
  if (otherResourcesDiffer(created.resources, c.resources)) return undefined;
  const now = effectiveResources(cs, created);
  const wanted = toEffective(linuxResources(c));
  // No quota is no quota, whatever period a runtime reports with it; no memory limit likewise.
  const quota = (r: EffectiveResources) => (r.cpuQuota > 0 ? `${r.cpuQuota}/${r.cpuPeriod}` : 'none');
  const cpuMoved = now.cpuShares !== wanted.cpuShares || quota(now) !== quota(wanted);
  const memoryMoved = Math.max(0, now.memoryLimitInBytes) !== Math.max(0, wanted.memoryLimitInBytes);
  if (!cpuMoved && !memoryMoved) return { kind: 'none' };
  const before = cs.resources ? resourcesFromRuntime(cs.resources, created.resources) : (created.resources ?? {});
  const changes: ResourceChange[] = [];
  for (const field of ['requests', 'limits'] as const) {
    for (const resource of RESIZABLE) {
      if ((resource === 'cpu' && !cpuMoved) || (resource === 'memory' && !memoryMoved)) continue;
      // A request left out follows the limit (the API server's default): the limit's change says it.
      const value = (r: IResourceRequirements | undefined) =>
        quantities(r, field)[resource] ?? (field === 'requests' ? quantities(r, 'limits')[resource] : undefined);
      const followsLimit = (r: IResourceRequirements | undefined) => sameValue(resource, value(r), quantities(r, 'limits')[resource]);
      if (field === 'requests' && followsLimit(before) && followsLimit(c.resources)) continue;
      const from = value(before);
      const to = value(c.resources);
      if (sameValue(resource, from, to)) continue;
      changes.push({
        resource,
        field,
        ...(from === undefined ? {} : { from: String(from) }),
        ...(to === undefined ? {} : { to: String(to) }),
      });
    }
  }
  const moved = RESIZABLE.filter((r) => (r === 'cpu' ? cpuMoved : memoryMoved));
  if (moved.some((r) => policyOf(c, r) === 'RestartContainer'))
    return { kind: 'restart', changes, message: `Container ${c.name} resize requires restart` };
  return { kind: 'resize', changes, linux: wanted };
}

/** `cpu limit 250m → 500m, memory limit 64Mi → 128Mi`. */
export function formatResourceChanges(changes: ResourceChange[]): string {
  const word = (c: ResourceChange) => `${c.resource}${c.field === 'requests' ? ' request' : ' limit'}`;
  return changes.map((c) => `${word(c)} ${c.from ?? '(unset)'} → ${c.to ?? '(unset)'}`).join(', ');
}

/**
 * The pod as its running containers were created (each container's resources from its spec copy),
 * for the QoS class a resize may not change.
 */
export function podAsCreated(pod: IPod, statuses: RuntimeContainerStatus[]): IPod {
  const asCreated = (c: IContainer): IContainer => {
    const cs = statuses.find((s) => s.name === c.name && s.state === 'running');
    const created = cs ? specOf(cs) : undefined;
    if (!cs || !created) return c;
    const effective = cs.resources ? resourcesFromRuntime(cs.resources, created.resources) : created.resources;
    return { ...c, resources: effective };
  };
  return {
    ...pod,
    spec: { ...pod.spec!, containers: pod.spec!.containers.map(asCreated), initContainers: pod.spec!.initContainers?.map(asCreated) },
  };
}

/**
 * In-place resize (CRI UpdateContainerResources) with the cgroup settings container start
 * computes. A memory limit below what the container uses now is not applied, as the kubelet decides.
 */
export async function updateContainerResources(
  runtime: RuntimeService,
  pod: IPod,
  r: { id: string; name: string; container: IContainer; linux: EffectiveResources },
  memoryCapacityBytes: number,
): Promise<void> {
  const status = (await runtime.containerStatus(r.id)).status;
  const current = Number(status?.resources?.linux?.memoryLimitInBytes ?? 0);
  const wanted = r.linux.memoryLimitInBytes;
  if (wanted > 0 && (current === 0 || wanted < current)) {
    const stats = await runtime.containerStats(r.id).catch(() => undefined);
    const usage = Number(stats?.memory?.usageBytes?.value ?? stats?.memory?.workingSetBytes?.value ?? 0);
    if (usage > wanted)
      throw new Error(`attempting to set container ${r.name}'s memory limit (${wanted}) below its current usage (${usage})`);
  }
  await runtime.updateContainerResources(r.id, {
    cpuShares: r.linux.cpuShares,
    cpuQuota: r.linux.cpuQuota,
    cpuPeriod: r.linux.cpuPeriod,
    memoryLimitInBytes: r.linux.memoryLimitInBytes,
    oomScoreAdj: oomScoreAdj(pod, r.container, memoryCapacityBytes),
  });
}
