import type { IEphemeralContainer, IPod } from 'kubernetes-models/v1';
import type { NodeInfo } from '../admission.js';
import type { PodEvent } from '../events.js';
import type { SourceObjects } from '../objects.js';
import type { PlanAnswer } from '../plan.js';
import type { ManifestProblem, ReadManifests } from '../pod/index.js';
import type { PodQuery, PodViewAnswer } from '../podview/index.js';

/**
 * What the agent does for its clients, whatever the protocol: podctl's /v1 API (src/core/api) and the
 * kube API both call it, parse their requests into these arguments and render its answers in their
 * own wire types. Refusals throw ApiError, whose status is the HTTP code both APIs answer with.
 */
export interface NodeAgent {
  /** Desired pods with their last status and status.observedGeneration (a v1 PodList's items). */
  pods(): IPod[];
  /** Every change of a pod's status, and its end, from now on; returns the unsubscribe. */
  watchPods(listener: (e: PodWatchEvent) => void): () => void;
  /** The kubelet's events, every one recorded (a v1 EventList's, once rendered). */
  events(): PodEvent[];
  /** Every event recorded or repeated from now on; returns the unsubscribe. */
  watchEvents(listener: (e: PodEvent) => void): () => void;
  /** Every podctl pod on this node's runtime: its own as it keeps them, any other read from the runtime. */
  view(q: PodQuery): Promise<PodViewAnswer>;
  /**
   * Hands pods to the node: manifest texts, each pod's applied file written (replacing the previous
   * version of the same namespace/name), all or nothing. 400 an invalid manifest, 409 a pod another
   * source keeps or whose UID another pod holds.
   */
  apply(files: ManifestText[]): AppliedPodRef[];
  /** Manifests as a command read them, read here as it would have, admitted with its settings, then kept as apply keeps them (403). */
  applyManifests(req: ApplyManifestsRequest): Promise<{ pods: AppliedPodRef[]; warnings: ManifestProblem[] }>;
  /** Forgets a pod and terminates it, with its grace period or the one given (400, 404, 409 a pod watch's PATH or URL keeps). */
  delete(namespace: string, name: string, gracePeriodSeconds?: number): Promise<DeletedPod>;
  /** Pods as a command validated and defaulted them (each validated again here): what SyncPod would do to them now, changing nothing. */
  plan(req: { pods: unknown[]; prune: boolean }): Promise<PlanAnswer>;
  /** Manifests as a command read them, read here as it would have, then planned as plan plans pods. */
  planManifests(req: ManifestsRequest): Promise<PlanAnswer & { pods: number; warnings: ManifestProblem[] }>;
  /** Sets a pod condition, as a controller patches one (a readiness gate's); the kubelet's own types are refused. Returns the pod. */
  setCondition(namespace: string, name: string, condition: PodConditionInput): IPod;
  /**
   * Adds an ephemeral container to a running pod (pods/ephemeralcontainers; kubectl debug) and starts it
   * in its sandbox; returns the pod, which lists it. 404 no such pod, 409 a pod with no running sandbox.
   */
  addEphemeralContainer(namespace: string, name: string, container: IEphemeralContainer): Promise<IPod>;
  /**
   * The ConfigMaps and Secrets the node's Kubernetes API keeps, all of them, each time they change. Each is its
   * namespace's: a change reaches a running pod's volumes at its next sync, whatever copy its file carries.
   */
  setApiObjects(objects: SourceObjects): void;
  /** Sync loop and PLEG health: every check, with why it failed. */
  health(): AgentHealth;
  /** Who serves: pid, root dir, socket, log, since, pods, cpus. */
  info(): Record<string, unknown>;
}

/**
 * The agent's bound on a request body (its own API, not the Kubernetes API's 3 MiB): manifests come in
 * whole, as a command read them, up to 8 MiB a file, several files at once, escaped as JSON strings.
 */
export const MAX_REQUEST_BODY_BYTES = 32 << 20;

/** A request the agent refuses, with why: 400 (bad input), 403 (rejected at admission), 404 (no such pod), 409 (another keeps it). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** One change of a pod, as the API server's watch event. */
export interface PodWatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: IPod;
}

/** A manifest's text and the file it came from (which only says where the pods came from). */
export interface ManifestText {
  file: string;
  text: string;
}

/** A pod handed over: its key, UID and the generation the agent gave this version of it. */
export interface AppliedPodRef {
  namespace: string;
  name: string;
  uid: string;
  generation: number;
}

export interface DeletedPod {
  namespace: string;
  name: string;
  /** Absent when only its applied file was left (the pod was not running). */
  uid?: string;
}

/** Manifests as a command read them (readManifests), with the node name it reads them for. */
export interface ManifestsRequest {
  manifests: ReadManifests;
  nodeName: string;
  prune?: boolean;
}

export interface ApplyManifestsRequest extends ManifestsRequest {
  /** The command's own admission settings. */
  admission: { allowPrivileged: boolean; node: NodeInfo };
}

export interface PodConditionInput {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
}

export interface AgentHealth {
  ok: boolean;
  checks: { name: string; ok: boolean; message: string }[];
}
