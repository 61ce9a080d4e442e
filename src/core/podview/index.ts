import type { IContainer, IEphemeralContainer, IPod, IPodSpec } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { ImageService, RuntimeService } from '../cri/client.js';
import type * as T from '../cri/types.js';
import * as L from '../kuberuntime/labels.js';
import { PodStatusReader } from '../kuberuntime/pod-status.js';
import { withPodSpecCopy } from '../kuberuntime/spec-copy.js';
import { newerFirst, type RuntimeContainerStatus, type RuntimePodStatus } from '../container/types.js';
import { getFromStatusSocket } from '../status/client.js';
import { generateAPIPodStatus, type WaitingReason } from '../status/generate.js';
import { crashBackoffMs } from '../kuberuntime/crash-backoff.js';
import { podKey, podMeta } from '../util/pod-key.js';

/** Where a pod's view came from: the running watch's status socket, or the runtime read by podctl's labels. */
export type PodViewSource = 'watch' | 'runtime';

export interface ViewedPod {
  /** A v1 Pod with its status. */
  pod: IPod;
  source: PodViewSource;
  /** Containers whose readiness comes from a probe only a running agent knows (runtime view only). */
  readinessUnknown: string[];
  /** The runtime's error when the pod's status could not be read (the pod shows as Unknown). */
  runtimeError?: string;
}

export interface PodQuery {
  /** Undefined: every namespace. */
  namespace?: string;
  name?: string;
}

export interface PodViewOptions {
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  /** The running watch's status socket (<root-dir>/podctl.sock); skipped when absent or silent. */
  statusSocket?: string;
  /** The agent's own view, in place of a socket: its desired pods with their last status. */
  ownPods?: () => IPod[];
  runtimeName?: string;
  hostIP?: string;
}

/** GET /v1/podview: what an agent sees of every podctl pod on its runtime, its own and any other. */
export interface PodViewAnswer {
  /** The runtime the agent reads: a client on another runtime reads its own instead. */
  runtimeEndpoint: string;
  items: ViewedPod[];
}

function parseJSON<V>(text: string | undefined): V | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as V;
  } catch {
    return undefined;
  }
}

/** Labels the pod had, without the keys the kubelet and podctl add to its sandbox. */
function podLabels(labels: Record<string, string>): Record<string, string> | undefined {
  const own = Object.entries(labels).filter(([k]) => !k.startsWith('io.kubernetes.') && !k.startsWith('io.podctl.'));
  return own.length ? Object.fromEntries(own) : undefined;
}

/**
 * The pod spec as recorded for its newest sandbox (its annotation, or the pod-directory copy
 * sandboxesByPod put there); for sandboxes made before the copy existed, rebuilt from each
 * container's spec copy.
 */
export function specFromRuntime(sandbox: T.PodSandbox | undefined, runtime: RuntimePodStatus): IPodSpec {
  const recorded = parseJSON<IPodSpec>(sandbox?.annotations[L.POD_SPEC_ANNOTATION]);
  if (recorded?.containers) return recorded;
  // Containers in the order they were first created, which is spec order.
  const byName = new Map<string, RuntimeContainerStatus[]>();
  for (const c of runtime.containers) byName.set(c.name, [...(byName.get(c.name) ?? []), c]);
  const groups = [...byName.values()].map((list) => list.sort(newerFirst)).sort((a, b) => a.at(-1)!.createdAt - b.at(-1)!.createdAt);
  const toSpec = (c: RuntimeContainerStatus): IContainer => parseJSON<IContainer>(c.specJSON) ?? { name: c.name, image: c.image };
  const inits = groups.filter((g) => g[0]!.kind !== 'app').map((g) => toSpec(g[0]!));
  const grace = runtime.containers.find((c) => c.terminationGracePeriod !== undefined)?.terminationGracePeriod;
  return {
    containers: groups.filter((g) => g[0]!.kind === 'app').map((g) => toSpec(g[0]!)),
    ...(inits.length ? { initContainers: inits } : {}),
    ...(grace === undefined ? {} : { terminationGracePeriodSeconds: grace }),
    hostNetwork: runtime.sandboxes[0]?.hostNetwork || undefined,
  };
}

/** Whether the kubelet would start this exited container again under the pod's restartPolicy. */
export function wouldRestart(
  spec: IPodSpec,
  container: IContainer | undefined,
  kind: RuntimeContainerStatus['kind'],
  exitCode: number | undefined,
): boolean {
  if (kind === 'sidecar' || container?.restartPolicy === 'Always') return true;
  const policy = spec.restartPolicy ?? 'Always';
  if (kind === 'init') return policy !== 'Never' && exitCode !== 0;
  return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
}

/**
 * Why an exited container waits, as the kubelet's reasonCache would say it:
 * CrashLoopBackOff with the delay its backoff would impose.
 */
export function inferWaiting(pod: IPod, runtime: RuntimePodStatus, name: string): WaitingReason | undefined {
  const spec = pod.spec!;
  const newest = runtime.containers.filter((c) => c.name === name).sort(newerFirst)[0];
  if (!newest || newest.state !== 'exited') return undefined;
  if (!runtime.sandboxes.some((s) => s.state === 'ready')) return undefined;
  const container = [...(spec.initContainers ?? []), ...spec.containers].find((c) => c.name === name);
  if (!wouldRestart(spec, container, newest.kind, newest.exitCode)) return undefined;
  // A first exit is restarted at once: the agent shows it terminated until then.
  if (newest.restartCount === 0) return undefined;
  const delay = Math.round(crashBackoffMs(newest.restartCount) / 1000);
  const m = podMeta(pod);
  return {
    reason: 'CrashLoopBackOff',
    message: `back-off ${delay}s restarting failed container=${name} pod=${m.name}_${m.namespace}(${m.uid})`,
  };
}

/** A v1 Pod with status from what the runtime records under podctl's labels. */
export function podFromRuntime(
  sandbox: T.PodSandbox | undefined,
  runtime: RuntimePodStatus,
  opts: { now: number; runtimeName?: string; hostIP?: string },
): ViewedPod {
  const spec = specFromRuntime(sandbox, runtime);
  // Debug containers (`podctl debug`) as the API lists ephemeral ones, from their spec copies.
  const ephemeral = [
    ...new Map(
      (runtime.ephemeral ?? []).map((c) => [c.name, parseJSON<IEphemeralContainer>(c.specJSON) ?? { name: c.name, image: c.image }]),
    ).values(),
  ];
  if (ephemeral.length) spec.ephemeralContainers = ephemeral;
  const annotations = { ...(sandbox?.annotations ?? {}) };
  delete annotations[L.POD_SPEC_ANNOTATION];
  for (const k of L.RECORDED_ANNOTATIONS) delete annotations[k];
  const oldest = runtime.sandboxes.at(-1)?.createdAt;
  const pod: IPod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: runtime.name,
      namespace: runtime.namespace,
      uid: runtime.uid,
      ...(oldest ? { creationTimestamp: new Date(oldest).toISOString() } : {}),
      labels: podLabels(sandbox?.labels ?? {}),
      annotations: Object.keys(annotations).length ? annotations : undefined,
    },
    spec,
  };
  // Readiness probes run in the agent: without it, a probed container's readiness is unknown (not ready).
  const probed = new Set(spec.containers.filter((c) => c.readinessProbe).map((c) => c.name));
  const idToName = new Map(runtime.containers.map((c) => [c.id, c.name]));
  // The status path's own function: with no agent there is no status manager, but the same overrides apply.
  const status = generateAPIPodStatus({
    pod,
    runtime,
    waitingReason: (name) => inferWaiting(pod, runtime, name),
    ready: (id) => (probed.has(idToName.get(id) ?? '') ? false : undefined),
    now: opts.now,
    runtimeName: opts.runtimeName,
    hostIP: opts.hostIP,
  });
  return { pod: { ...pod, status }, source: 'runtime', readinessUnknown: [...probed] };
}

/**
 * A pod whose status the runtime would not give (a sandbox stuck in removal, say): shown with
 * phase Unknown and the runtime's error, as the API server shows a pod its node stopped
 * reporting, so one broken sandbox never hides the others.
 */
export function unknownPod(sandbox: T.PodSandbox, error: unknown): ViewedPod {
  const l = sandbox.labels;
  const message = error instanceof Error ? error.message : String(error);
  const pod: IPod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: l[L.POD_NAME_LABEL]!,
      namespace: l[L.POD_NAMESPACE_LABEL]!,
      uid: l[L.POD_UID_LABEL]!,
      ...(sandbox.createdAt ? { creationTimestamp: new Date(Math.floor(sandbox.createdAt / 1e6)).toISOString() } : {}),
      labels: podLabels(l),
    },
    spec: parseJSON<IPodSpec>(sandbox.annotations[L.POD_SPEC_ANNOTATION]) ?? { containers: [] },
    status: { phase: 'Unknown', reason: 'RuntimeError', message: `the runtime could not report this pod: ${message}` },
  };
  return { pod, source: 'runtime', readinessUnknown: [], runtimeError: message };
}

const byNamespaceAndName = (a: ViewedPod, b: ViewedPod) => podKey(a.pod).localeCompare(podKey(b.pod));

/**
 * The pods podctl runs, as v1 Pods with status, whether or not `watch` runs:
 * the watch's own /pods when it answers (its status knows probes and the
 * reasons of its last sync), and every other podctl pod read from the runtime.
 */
export class PodView {
  /** Reads only: acting on a pod (delete) is podview/delete's, with a runtime manager of its own. */
  readonly statusReader: PodStatusReader;

  constructor(readonly opts: PodViewOptions) {
    this.statusReader = new PodStatusReader({ runtime: opts.runtime, clock: opts.clock });
  }

  private matches(q: PodQuery, namespace: string | undefined, name: string | undefined): boolean {
    return (q.namespace === undefined || namespace === q.namespace) && (q.name === undefined || name === q.name);
  }

  /** The watch's pods, or undefined when no watch answers on the socket. */
  async fromWatch(q: PodQuery = {}): Promise<IPod[] | undefined> {
    if (this.opts.ownPods) return this.opts.ownPods().filter((p) => this.matches(q, p.metadata?.namespace, p.metadata?.name));
    if (!this.opts.statusSocket) return undefined;
    try {
      const list = await getFromStatusSocket<{ items: IPod[] }>(this.opts.statusSocket, '/pods');
      return list.items.filter((p) => this.matches(q, p.metadata?.namespace, p.metadata?.name));
    } catch {
      return undefined;
    }
  }

  /** podctl's sandboxes matching the query, grouped by pod UID, newest sandbox first. */
  async sandboxesByPod(q: PodQuery = {}): Promise<Map<string, T.PodSandbox[]>> {
    const selector: Record<string, string> = { [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
    if (q.namespace !== undefined) selector[L.POD_NAMESPACE_LABEL] = q.namespace;
    if (q.name !== undefined) selector[L.POD_NAME_LABEL] = q.name;
    const sandboxes = await this.opts.runtime.listPodSandbox({ labelSelector: selector });
    const byUid = new Map<string, T.PodSandbox[]>();
    for (const s of sandboxes) {
      const uid = s.labels[L.POD_UID_LABEL];
      if (!uid) continue;
      byUid.set(uid, [...(byUid.get(uid) ?? []), s]);
    }
    for (const list of byUid.values()) list.sort((a, b) => b.createdAt - a.createdAt);
    // The newest sandbox is the one whose spec copy the views read: from the pod directory when it is kept there.
    await Promise.all([...byUid.values()].map(async (list) => (list[0] = await withPodSpecCopy(list[0]!, this.statusReader.specCopies))));
    return byUid;
  }

  /** The runtime's view of one pod (every sandbox and container instance podctl made for it). */
  async runtimeStatus(sandbox: T.PodSandbox): Promise<RuntimePodStatus> {
    const l = sandbox.labels;
    return this.statusReader.getPodStatus(l[L.POD_UID_LABEL]!, l[L.POD_NAME_LABEL]!, l[L.POD_NAMESPACE_LABEL]!);
  }

  async list(q: PodQuery = {}): Promise<ViewedPod[]> {
    const [watched, sandboxes] = await Promise.all([this.fromWatch(q), this.sandboxesByPod(q)]);
    const result: ViewedPod[] = (watched ?? []).map((pod) => ({ pod, source: 'watch', readinessUnknown: [] }));
    const seen = new Set(result.map((v) => podMeta(v.pod).uid));
    const now = this.opts.clock.now();
    const fromRuntime = await Promise.all(
      [...sandboxes.entries()]
        .filter(([uid]) => !seen.has(uid))
        .map(async ([, list]) => {
          try {
            return podFromRuntime(list[0], await this.runtimeStatus(list[0]!), {
              now,
              runtimeName: this.opts.runtimeName,
              hostIP: this.opts.hostIP,
            });
          } catch (err) {
            return unknownPod(list[0]!, err);
          }
        }),
    );
    return [...result, ...fromRuntime].sort(byNamespaceAndName);
  }

  /** One pod by namespace and name; undefined when podctl runs no such pod. */
  async get(namespace: string, name: string): Promise<ViewedPod | undefined> {
    return (await this.list({ namespace, name }))[0];
  }
}

/** One pod as the runtime holds it, for the commands that act on its containers (logs, exec, delete, describe). */
export interface RuntimePod {
  sandbox: T.PodSandbox;
  /** Every sandbox of the pod, newest first. */
  sandboxes: T.PodSandbox[];
  runtime: RuntimePodStatus;
  spec: IPodSpec;
}

/** Finds a pod podctl made by namespace and name; undefined when the runtime has none. */
export async function findRuntimePod(view: PodView, namespace: string, name: string): Promise<RuntimePod | undefined> {
  const byUid = await view.sandboxesByPod({ namespace, name });
  // Two UIDs under one name happen while a pod is replaced: the newest sandbox wins.
  const lists = [...byUid.values()].sort((a, b) => b[0]!.createdAt - a[0]!.createdAt);
  const sandboxes = lists[0];
  if (!sandboxes) return undefined;
  const runtime = await view.runtimeStatus(sandboxes[0]!);
  return { sandbox: sandboxes[0]!, sandboxes, runtime, spec: specFromRuntime(sandboxes[0], runtime) };
}

/** The newest instance of a container, if it was ever created. */
export function newestInstance(pod: RuntimePod, container: string): RuntimeContainerStatus | undefined {
  return pod.runtime.containers.filter((c) => c.name === container).sort(newerFirst)[0];
}

/** kubectl's default container: the annotation kubectl.kubernetes.io/default-container, else the first. */
export function defaultContainer(pod: RuntimePod): string | undefined {
  const named = pod.sandbox.annotations['kubectl.kubernetes.io/default-container'];
  if (named && pod.spec.containers.some((c) => c.name === named)) return named;
  return pod.spec.containers[0]?.name;
}
