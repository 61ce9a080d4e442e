import type { IContainer, IPod } from 'kubernetes-models/v1';
import { computePodActions, noProbeFailures, type ContainerToStart, type PodActions, type ProbeVerdicts } from './kuberuntime/actions.js';
import { crashLoopBackOff } from './kuberuntime/crash-backoff.js';
import { pullDecision, pullPolicyOf, type PullPolicy } from './kuberuntime/images.js';
import { isManagedByPodctl, podIdentityFromLabels, type PodIdentity } from './kuberuntime/labels.js';
import type { ImageService, RuntimeService } from './cri/client.js';
import type { PodStatusReader } from './kuberuntime/pod-status.js';
import { diffContainerSpec, type SpecChange } from './kuberuntime/spec-diff.js';
import { formatResourceChanges, type ResourceChange } from './kuberuntime/resize.js';
import { findContainerStatus, newerFirst, type RuntimeContainerStatus, type RuntimePodStatus } from './container/types.js';
import { podMeta } from './util/pod-key.js';
import { podsHeldByRuntime, settleIdentities } from './pod-identity.js';

/**
 * One step SyncPod would take. The names are SyncPod's steps (SyncStepResult)
 * plus PullImage and RemovePod; `-o json` prints these as they are, so fields
 * are only ever added.
 */
export interface PlannedAction {
  action: 'KillPod' | 'CreatePodSandbox' | 'KillContainer' | 'Resize' | 'PullImage' | 'StartContainer' | 'RemovePod';
  reason: string;
  container?: string;
  kind?: ContainerToStart['kind'];
  /** CreatePodSandbox: the sandbox attempt number. */
  attempt?: number;
  /** KillContainer: the kubelet's kill reason (SpecChanged, Unhealthy, ...). */
  killReason?: string;
  /** KillContainer for a changed spec: the fields that differ (absent when the running container kept no spec copy). */
  changes?: SpecChange[];
  /** Resize: the cpu and memory requests and limits that change in place. */
  resources?: ResourceChange[];
  image?: string;
  pullPolicy?: PullPolicy;
  imagePresent?: boolean;
  /** StartContainer under CrashLoopBackOff: when it would start. */
  backoff?: { delaySeconds: number; remainingSeconds: number };
}

export interface PodPlan {
  namespace: string;
  name: string;
  uid: string;
  /** Nothing would change in the runtime. */
  inDesiredState: boolean;
  actions: PlannedAction[];
}

export interface Plan {
  apiVersion: 'podctl/v1';
  kind: 'Plan';
  /** True when any pod would change (exit code 2). */
  changes: boolean;
  pods: PodPlan[];
}

/** POST /v1/plan: the agent's plan of the pods it was given, against the runtime it reads. */
export interface PlanAnswer {
  runtimeEndpoint: string;
  plan: Plan;
}

/**
 * The pods as an agent keeps them: a pod handed to it has the UID of its applied file, not of the
 * file given to plan, so the plan compares with what runs instead of planning a second pod.
 */
export function withKeptUIDs(pods: IPod[], kept: IPod[]): IPod[] {
  return pods.map((pod) => {
    const k = kept.find((p) => p.metadata?.namespace === podMeta(pod).namespace && p.metadata?.name === podMeta(pod).name);
    return k?.metadata?.uid ? { ...pod, metadata: { ...pod.metadata, uid: k.metadata.uid } } : pod;
  });
}

export interface PlanPodInput {
  pod: IPod;
  status: RuntimePodStatus;
  now: number;
  /** Whether the runtime holds an image, by the name the spec gives. */
  imagePresent: (image: string) => boolean;
  probes?: ProbeVerdicts;
}

/** The plan for one pod: the very computePodActions SyncPod runs, said in words. */
export function planPod({ pod, status, now, imagePresent, probes = noProbeFailures }: PlanPodInput): PodPlan {
  const actions = computePodActions(pod, status, probes);
  const m = podMeta(pod);
  const planned = describeActions(pod, status, actions, now, imagePresent);
  return { namespace: m.namespace ?? 'default', name: m.name!, uid: m.uid!, inDesiredState: planned.length === 0, actions: planned };
}

function describeActions(
  pod: IPod,
  status: RuntimePodStatus,
  actions: PodActions,
  now: number,
  imagePresent: (image: string) => boolean,
): PlannedAction[] {
  const out: PlannedAction[] = [];
  if (actions.killPod && hasSomethingToStop(status)) {
    const running = status.containers.filter((c) => c.state === 'running').map((c) => c.name);
    const reason = actions.createSandbox
      ? `a new sandbox is needed (${actions.sandboxReason ?? 'sandbox changed'})`
      : running.length
        ? `no container will run again; stopping ${running.join(', ')} and the sandbox`
        : 'no container will run again; stopping the sandbox';
    out.push({ action: 'KillPod', reason });
  } else {
    for (const kill of actions.containersToKill) {
      const spec = kill.container;
      const cs = status.containers.find((c) => c.id === kill.id);
      const item: PlannedAction = { action: 'KillContainer', container: kill.name, killReason: kill.reason, reason: kill.message };
      if (kill.reason === 'SpecChanged' && spec && cs) {
        const isInit = (pod.spec?.initContainers ?? []).includes(spec);
        const changes = diffContainerSpec(cs.specJSON, spec, `${isInit ? 'initContainers' : 'containers'}[${spec.name}]`);
        if (changes) item.changes = changes;
      }
      out.push(item);
    }
    for (const r of actions.containersToResize) {
      out.push({
        action: 'Resize',
        container: r.name,
        kind: r.kind,
        resources: r.changes,
        reason: r.refused
          ? `refused: ${formatResourceChanges(r.changes)}: ${r.refused}`
          : `${formatResourceChanges(r.changes)} (no restart)`,
      });
    }
  }
  if (actions.createSandbox) {
    out.push({ action: 'CreatePodSandbox', attempt: actions.attempt, reason: actions.sandboxReason ?? 'sandbox changed' });
  } else if (actions.killPod) {
    return out;
  }
  const inits = pod.spec?.initContainers ?? [];
  const start = (item: ContainerToStart, container: IContainer) => {
    const image = container.image ?? '';
    const policy = pullPolicyOf(container);
    const present = imagePresent(image);
    const decision = pullDecision(policy, present);
    if (decision === 'pull') {
      out.push({
        action: 'PullImage',
        container: item.name,
        image,
        pullPolicy: policy,
        imagePresent: present,
        reason: policy === 'Always' ? 'pull policy Always' : `not present (pull policy ${policy})`,
      });
    }
    const planned: PlannedAction = { action: 'StartContainer', container: item.name, kind: item.kind, reason: item.reason };
    if (decision === 'never') planned.reason += `; cannot start: image "${image}" is not present with pull policy of Never`;
    const last = lastExited(status, item.name);
    // CrashLoopBackOff applies to a container that is not running and exited before (as startContainer checks it).
    if (last && findContainerStatus(status, item.name)?.state !== 'running') {
      const b = crashLoopBackOff(last, now);
      if (b.delayMs > 0) {
        const remainingSeconds = Math.ceil(b.remainingMs / 1000);
        planned.backoff = { delaySeconds: b.delayMs / 1000, remainingSeconds };
        planned.reason +=
          remainingSeconds > 0
            ? `; back-off ${b.delayMs / 1000}s expires in ${remainingSeconds}s`
            : `; back-off ${b.delayMs / 1000}s has expired`;
      }
    }
    out.push(planned);
  };
  for (const item of actions.initContainersToStart) start(item, inits[item.index]!);
  for (const item of actions.containersToStart) start(item, pod.spec!.containers[item.index]!);
  return out;
}

/** What KillPod stops: without it, killing is a no-op not worth a line. */
export function hasSomethingToStop(status: RuntimePodStatus): boolean {
  return status.sandboxes.some((s) => s.state === 'ready') || status.containers.some((c) => c.state !== 'exited');
}

function lastExited(status: RuntimePodStatus, name: string): RuntimeContainerStatus | undefined {
  return status.containers.filter((c) => c.name === name && c.state === 'exited').sort(newerFirst)[0];
}

/** A pod podctl made that the given manifests no longer describe: what housekeeping would remove. */
export function planRemoval(id: PodIdentity): PodPlan {
  return { ...id, inDesiredState: false, actions: [{ action: 'RemovePod', reason: 'no longer in any source' }] };
}

export interface PlanOptions {
  /** Also plan the removal of every pod podctl labelled in the runtime that `pods` does not name. */
  prune?: boolean;
  now: number;
  /**
   * The node's name: a pod whose UID its namespace/name derives is planned against the sandbox
   * already running under that namespace/name (an older podctl's, whose UID hashed the file's
   * path), as every command now runs it: an update, not a second sandbox.
   */
  nodeName?: string;
}

/**
 * Plans every pod against the runtime without changing it: the kubelet's
 * GetPodStatus (the status reader SyncPod uses too), then planPod. Only List/Status calls are made.
 */
export async function planPods(
  cri: { runtime: RuntimeService; images: ImageService; statusReader: PodStatusReader },
  given: IPod[],
  opts: PlanOptions,
): Promise<Plan> {
  const held = opts.nodeName === undefined ? undefined : await podsHeldByRuntime(cri.runtime);
  const pods = held ? given.map((pod) => settleIdentities([pod], held, opts.nodeName!).pods[0] ?? pod) : given;
  const imageNames = [
    ...new Set(pods.flatMap((pod) => [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.image ?? ''))),
  ];
  // The reads are independent: made at once, a plan waits for the slowest instead of their sum (the CRI client bounds how many run).
  const [present, statuses, sandboxes] = await Promise.all([
    Promise.all(imageNames.map(async (image) => [image, (await cri.images.imageStatus(image)) !== undefined] as const)),
    Promise.all(
      pods.map((pod) => {
        const m = podMeta(pod);
        return cri.statusReader.getPodStatus(m.uid!, m.name!, m.namespace ?? 'default');
      }),
    ),
    opts.prune ? cri.runtime.listPodSandbox({}) : [],
  ]);
  const images = new Map(present);
  const plans: PodPlan[] = pods.map((pod, i) =>
    planPod({ pod, status: statuses[i]!, now: opts.now, imagePresent: (image) => images.get(image) ?? false }),
  );
  if (opts.prune) {
    const wanted = new Set(pods.map((p) => podMeta(p).uid));
    const seen = new Set<string>();
    for (const s of sandboxes) {
      if (!isManagedByPodctl(s.labels)) continue;
      const id = podIdentityFromLabels(s.labels);
      if (!id || wanted.has(id.uid) || seen.has(id.uid)) continue;
      seen.add(id.uid);
      plans.push(planRemoval(id));
    }
  }
  return { apiVersion: 'podctl/v1', kind: 'Plan', changes: plans.some((p) => !p.inDesiredState), pods: plans };
}
