import { cpus } from 'node:os';
import type { IEphemeralContainer, IPod } from 'kubernetes-models/v1';
import { errorMessage } from '../errors.js';
import type { PodConfigMerger } from '../config/index.js';
import type { Kubelet } from '../kubelet.js';
import type { SyncLoop } from '../loop.js';
import { API_OBJECTS_SOURCE, type SourceObjects } from '../objects.js';
import type { Pleg } from '../pleg/evented.js';
import { PodView, type PodQuery, type PodViewOptions } from '../podview/index.js';
import { podKey, podMeta } from '../util/pod-key.js';
import {
  ApiError,
  type ApplyManifestsRequest,
  type AppliedPodRef,
  type DeletedPod,
  type ManifestsRequest,
  type ManifestText,
  type NodeAgent,
  type PodConditionInput,
  type PodWatchEvent,
} from './agent.js';
import { checkCondition, planManifestsRequest, planRequest, readAdmitted, readApplied, type PlanContext } from './agent-requests.js';
import type { AppliedPod, AppliedSource } from './applied.js';
import type { PodGenerations } from './generations.js';
import type { PodIdentities } from './identities.js';
import { keptByMessage } from './keeper.js';
import { appliedDir, podRefProblem } from './paths.js';

/** The merger's name of each source the agent itself keeps pods of. */
export const RUN_SOURCE = 'run';
export const APPLIED_SOURCE = 'applied';

/** What the agent is told of its node; the runtime and images are what plan and the pod view ask. */
export interface AgentSettings extends Pick<PodViewOptions, 'runtime' | 'images' | 'clock' | 'runtimeName' | 'hostIP'> {
  rootDir: string;
  nodeName: string;
  socket: string;
  startedAt: number;
  /** watch's PATH and URL, named when a pod they keep is refused. */
  manifestPath?: string;
  manifestUrl?: string;
  logFile?: string;
}

/** The parts of the standalone node the agent acts through (StandaloneNode wires them). */
export interface AgentParts {
  settings: AgentSettings;
  kubelet: Kubelet;
  loop: SyncLoop;
  pleg: Pleg;
  merger: PodConfigMerger;
  applied: AppliedSource;
  identities: PodIdentities;
  generations: PodGenerations;
  /** A pod with its last status, as every answer carries it. */
  withStatus(pod: IPod): IPod;
  /** A source's pods handed to the merger, marked with who keeps them. */
  snapshot(source: string, pods: IPod[], objects: SourceObjects): void;
}

/**
 * The agent's business logic over its node: the applied store (one file per pod handed over), the
 * rules of who keeps a pod (the keeper; a pod another source keeps is refused), UID conflicts with
 * what else runs, and terminations awaited. Every API front end calls it through NodeAgent.
 */
export class LocalAgent implements NodeAgent {
  private podView?: PodView;

  constructor(private readonly parts: AgentParts) {}

  private get settings(): AgentSettings {
    return this.parts.settings;
  }

  pods(): IPod[] {
    return [...this.parts.kubelet.pods.values()].map((p) => this.parts.withStatus(p));
  }

  watchPods(listener: (e: PodWatchEvent) => void): () => void {
    const { kubelet, withStatus } = this.parts;
    // status.observedGeneration moves when a sync ends, which may change nothing else: that is a change too.
    const sentGeneration = new Map<string, number | undefined>();
    const observedOf = (object: IPod) => (object.status as { observedGeneration?: number } | undefined)?.observedGeneration;
    const send = (object: IPod) => {
      sentGeneration.set(podMeta(object).uid, observedOf(object));
      listener({ type: 'MODIFIED', object });
    };
    return kubelet.observe({
      onStatus: ({ pod }) => send(withStatus(kubelet.pods.get(podMeta(pod).uid) ?? pod)),
      onSynced: (pod) => {
        const kept = kubelet.pods.get(podMeta(pod).uid);
        const object = kept && withStatus(kept);
        if (object && sentGeneration.get(podMeta(pod).uid) !== observedOf(object)) send(object);
      },
      onTerminated: (pod) => {
        sentGeneration.delete(podMeta(pod).uid);
        listener({ type: 'DELETED', object: pod });
      },
    });
  }

  events() {
    return this.parts.kubelet.events.all();
  }

  watchEvents(listener: Parameters<NodeAgent['watchEvents']>[0]): () => void {
    return this.parts.kubelet.events.subscribe(listener);
  }

  async view(q: PodQuery) {
    const s = this.settings;
    this.podView ??= new PodView({
      runtime: s.runtime,
      images: s.images,
      clock: s.clock,
      ownPods: () => this.pods(),
      runtimeName: s.runtimeName,
      hostIP: s.hostIP,
    });
    return { runtimeEndpoint: s.runtime.endpoint, items: await this.podView.list(q) };
  }

  apply(files: ManifestText[]): AppliedPodRef[] {
    const { pods, uids } = readApplied(files, this.settings.nodeName);
    return this.keepApplied(pods, uids);
  }

  setApiObjects(objects: SourceObjects): void {
    this.parts.kubelet.objects.set(API_OBJECTS_SOURCE, objects);
  }

  async applyManifests(req: ApplyManifestsRequest) {
    const { pods, uids, warnings } = readAdmitted(req);
    await this.parts.identities.readHeld();
    return { pods: this.keepApplied(pods, uids), warnings };
  }

  /**
   * The pods' applied files written, all or none (the applied source re-reads them at once): a pod
   * another source keeps, or whose UID another pod holds, refuses the lot (409).
   */
  private keepApplied(pods: AppliedPod[], uids: Map<string, string>): AppliedPodRef[] {
    const { merger, kubelet, generations } = this.parts;
    const refused = pods.flatMap((p) => {
      const kept = this.keptPod(p.namespace, p.name);
      const owner = merger.sourceOfName(p.namespace, p.name);
      if (kept && owner && owner !== APPLIED_SOURCE)
        return [`${p.namespace}/${p.name}: rejected at admission: ${keptByMessage(kept, this.settings.rootDir, this.settings)}`];
      const conflict = this.uidConflict(p, uids.get(`${p.namespace}/${p.name}`) ?? '');
      return conflict ? [`${p.namespace}/${p.name}: rejected at admission: ${conflict}`] : [];
    });
    if (refused.length) throw new ApiError(409, refused.join('\n'));
    // Written, then read back as the agent reads them at a restart or a resync: the pods take their
    // UIDs (their namespace/name's, or the sandbox's they adopt), hashes and objects from the files, so nothing differs later.
    this.parts.applied.write(pods);
    return pods.map((p) => {
      const pod = kubelet.podManager.getPodByFullName(p.namespace, p.name);
      const uid = pod?.metadata?.uid ?? generations.pending(p.namespace, p.name)?.metadata?.uid ?? '';
      return { namespace: p.namespace, name: p.name, uid, generation: generations.of(uid) };
    });
  }

  private keptPod(namespace: string, name: string): IPod | undefined {
    return (
      this.parts.kubelet.podManager.getPodByFullName(namespace, name) ??
      this.parts.merger.pods().find((x) => podMeta(x).namespace === namespace && podMeta(x).name === name)
    );
  }

  /**
   * A pod handed over whose UID another pod holds (one this node keeps, or one the runtime runs), or whose namespace/name runs under
   * another explicit UID.
   */
  private uidConflict(p: AppliedPod, uid: string): string | undefined {
    const { merger, identities } = this.parts;
    const pod: IPod = { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: p.namespace, name: p.name, uid } };
    const holder = merger.pods().find((x) => podMeta(x).uid === uid && podKey(x) !== podKey(pod));
    if (holder)
      return (
        `metadata.uid ${uid} is already the UID of ` +
        `pod ${podKey(holder)} (${keptByMessage(holder, this.settings.rootDir, this.settings)}); ` +
        `give this pod another metadata.uid, or none`
      );
    // What this node keeps under that namespace/name is its own to update; what else runs is checked.
    const settled = identities.settle([pod], new Set(merger.pods().map((x) => podMeta(x).uid)));
    if (settled.refused.length) return settled.refused[0]!.message;
    const adopted = podMeta(settled.pods[0]!).uid;
    // This node's own sandbox of it, when it has one, is the one kept (readHeld found it).
    if (adopted !== uid && !identities.isAdopted(podKey(pod))) identities.adopt(podKey(pod), adopted);
    return undefined;
  }

  /**
   * Forgets a pod handed over (its applied file goes, so it never comes back) or one of the foreground
   * run's, and terminates it with its grace period (or the one given). A pod watch's PATH or URL keeps is
   * refused: that source would bring it back.
   */
  async delete(namespace: string, name: string, gracePeriodSeconds?: number): Promise<DeletedPod> {
    const { merger, kubelet } = this.parts;
    // As the API server: a name that cannot be a pod's is refused before it reaches a path.
    const invalid = podRefProblem(namespace, name);
    if (invalid) throw new ApiError(400, invalid, { reason: 'Invalid' });
    const pod = kubelet.podManager.getPodByFullName(namespace, name);
    const owner = merger.sourceOfName(namespace, name);
    if (owner && owner !== APPLIED_SOURCE && owner !== RUN_SOURCE) {
      throw new ApiError(
        409,
        `pod ${namespace}/${name} comes from the ` +
          `watch's ${owner === 'file' ? this.settings.manifestPath : this.settings.manifestUrl}; remove it there to delete it for good`,
      );
    }
    const uid = pod?.metadata?.uid;
    if (uid && gracePeriodSeconds !== undefined && gracePeriodSeconds >= 0) kubelet.removePod(uid, gracePeriodSeconds);
    const had = this.parts.applied.remove(namespace, name);
    this.parts.identities.forget(`${namespace}/${name}`);
    if (owner === RUN_SOURCE)
      merger.merge(
        RUN_SOURCE,
        merger.pods().filter((p) => merger.sourceOfName(podMeta(p).namespace!, podMeta(p).name) === RUN_SOURCE && podMeta(p).uid !== uid),
      );
    if (!had && !uid) throw new ApiError(404, `pod "${name}" not found in namespace ${namespace}`);
    return { namespace, name, ...(uid ? { uid } : {}) };
  }

  setCondition(namespace: string, name: string, condition: PodConditionInput): IPod {
    checkCondition(condition);
    const pod = this.parts.kubelet.podManager.getPodByFullName(namespace, name);
    if (!pod) throw new ApiError(404, `pod "${name}" not found in namespace ${namespace}`);
    this.parts.kubelet.setPodCondition(podMeta(pod).uid, condition);
    return this.parts.withStatus(pod);
  }

  async addEphemeralContainer(namespace: string, name: string, container: IEphemeralContainer): Promise<IPod> {
    const { kubelet } = this.parts;
    const pod = kubelet.podManager.getPodByFullName(namespace, name);
    if (!pod) throw new ApiError(404, `pod "${name}" not found in namespace ${namespace}`);
    const uid = podMeta(pod).uid;
    const phase = kubelet.statusManager.get(uid)?.phase;
    if (kubelet.deletionOf(uid))
      throw new ApiError(409, `pod ${namespace}/${name} is being deleted: no ephemeral container can start in it`);
    if (phase === 'Succeeded' || phase === 'Failed')
      throw new ApiError(409, `pod ${namespace}/${name} has completed (phase ${phase}): no ephemeral container can start in it`);
    try {
      await kubelet.startEphemeralContainer(uid, container);
    } catch (err) {
      // A pod not running (no ready sandbox, its target stopped) is the pod's state; anything else the runtime's failure.
      const reason = (err as { reason?: string }).reason;
      throw new ApiError(
        reason === 'CreateContainerConfigError' ? 409 : 500,
        `ephemeral container ${container.name}: ${errorMessage(err)}`,
      );
    }
    return this.parts.withStatus(kubelet.pods.get(uid) ?? pod);
  }

  plan(req: { pods: unknown[]; prune: boolean }) {
    return planRequest(this.planContext(), req);
  }

  planManifests(req: ManifestsRequest) {
    return planManifestsRequest(this.planContext(), req);
  }

  private planContext(): PlanContext {
    const s = this.settings;
    const cri = { runtime: s.runtime, images: s.images, statusReader: this.parts.kubelet.runtimeManager.statusReader };
    return { cri, kept: this.pods(), now: s.clock.now(), nodeName: s.nodeName };
  }

  health() {
    const plegHealth = this.parts.pleg.healthy();
    const runtimeUp = this.parts.loop.isRuntimeUp;
    return {
      ok: plegHealth.ok && runtimeUp,
      checks: [
        { name: 'pleg', ok: plegHealth.ok, message: plegHealth.message },
        { name: 'runtime', ok: runtimeUp, message: 'the runtime does not answer its Status call' },
      ],
    };
  }

  info(): Record<string, unknown> {
    const s = this.settings;
    return {
      pid: process.pid,
      rootDir: s.rootDir,
      socket: s.socket,
      applied: appliedDir(s.rootDir),
      ...(s.logFile ? { log: s.logFile } : {}),
      since: new Date(s.startedAt).toISOString(),
      pods: this.parts.kubelet.pods.size,
      cpus: cpus().length,
    };
  }

  /** A foreground run's pods: in memory only, never written to the applied dir. Returns those refused. */
  runPods(pods: IPod[], objects: SourceObjects): { pod: IPod; message: string }[] {
    const { merger, identities } = this.parts;
    const refused: { pod: IPod; message: string }[] = [];
    const accepted = pods.filter((pod) => {
      const owner = merger.sourceOfName(podMeta(pod).namespace!, podMeta(pod).name);
      if (!owner || owner === RUN_SOURCE) return true;
      refused.push({
        pod,
        message: keptByMessage(this.keptPod(podMeta(pod).namespace, podMeta(pod).name) ?? pod, this.settings.rootDir, this.settings),
      });
      return false;
    });
    // What else runs under the same namespace/name is that pod; a UID another pod holds is refused.
    const settled = identities.settle(accepted, new Set(merger.pods().map((x) => podMeta(x).uid)));
    refused.push(...settled.refused);
    for (const pod of settled.pods)
      if (!accepted.some((a) => podMeta(a).uid === podMeta(pod).uid)) identities.adopt(podKey(pod), podMeta(pod).uid);
    this.parts.snapshot(
      RUN_SOURCE,
      accepted.filter((pod) => !settled.refused.some((r) => r.pod === pod)),
      objects,
    );
    return refused;
  }

  /** Terminates the foreground run's pods and resolves once each is gone from the runtime. */
  async stopRunPods(): Promise<void> {
    const { merger } = this.parts;
    const uids = merger
      .pods()
      .filter((p) => merger.sourceOfName(podMeta(p).namespace!, podMeta(p).name) === RUN_SOURCE)
      .map((p) => podMeta(p).uid);
    const done = this.whenTerminated(uids);
    merger.merge(RUN_SOURCE, []);
    await done;
  }

  /** Kills the pods through their workers and resolves once each is terminated and removed. */
  async terminate(uids: string[]): Promise<void> {
    const done = this.whenTerminated(uids);
    this.parts.loop.removePods(uids);
    await done;
  }

  private whenTerminated(uids: string[]): Promise<void> {
    const { kubelet } = this.parts;
    const left = new Set(uids.filter((uid) => kubelet.pods.has(uid)));
    return new Promise((resolve) => {
      if (left.size === 0) return resolve();
      const stop = kubelet.observe({
        onTerminated: (pod) => {
          left.delete(podMeta(pod).uid);
          if (left.size) return;
          stop();
          resolve();
        },
      });
    });
  }
}
