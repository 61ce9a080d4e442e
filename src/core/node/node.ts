import { admitPods, type NodeInfo } from '../admission.js';
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { cpus } from 'node:os';
import type { IPod } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import { FileSource, HttpSource, PodConfigMerger } from '../config/index.js';
import type { ImageService, RuntimeService } from '../cri/client.js';
import { errorMessage } from '../errors.js';
import type { PodEvent } from '../events.js';
import type { HousekeepingResult, Kubelet, KubeletOptions, SyncObserver } from '../kubelet.js';
import type { PodUpdate, SyncLoop } from '../loop.js';
import { Metrics } from '../metrics.js';
import type { SourceObjects } from '../objects.js';
import type { Pleg } from '../pleg/evented.js';
import type { PodLifecycleEvent } from '../pleg/generic.js';
import { planPods, withKeptUIDs, type PlanAnswer } from '../plan.js';
import {
  formatProblem,
  ManifestError,
  manifestSetWithDocuments,
  validateDocument,
  type ManifestDocuments,
  type ManifestProblem,
  type ManifestSet,
  type ReadManifests,
} from '../pod/index.js';
import { PodView, type PodQuery, type PodViewAnswer } from '../podview/index.js';
import { ApiError, startStatusServer, type PodWatchEvent } from '../status/server.js';
import { StatusManager } from '../status/manager.js';
import type { Tracer } from '../trace.js';
import { AppliedSource, appliedPods, splitApplied, type AppliedPod } from './applied.js';
import { agentSocket, appliedDir, nodeAgentLabel, podRefProblem } from './paths.js';
import { wireNode } from './wire.js';
import { KEPT_BY_ANNOTATION, keptByMessage, type Keeper } from './keeper.js';
import { podsHeldByRuntime, settleIdentities, type HeldPod } from '../pod-identity.js';
import { hasDerivedUID, parseManifestText } from '../pod/index.js';
import type { PlegKind } from '../pleg/select.js';
import { podKey, podMeta } from '../util/pod-key.js';

/** What the node says as it runs (the commands print these; the agent's log is their output). */
export interface NodeHooks {
  onPlegEvent?(e: PodLifecycleEvent): void;
  onRuntimeState?(up: boolean, detail?: string): void;
  onHousekeeping?(r: HousekeepingResult): void;
  onError?(err: unknown): void;
  /** A manifest that cannot be read or is invalid (one message naming the file). */
  onSourceError?(message: string): void;
  /** A pod a source gives that another pod's namespace/name or UID already holds: ignored; `why` says which. */
  onConflict?(source: string, pod: IPod, owner: string, why: string): void;
  onPlegFallback?(reason: string): void;
  /** What the API socket says of its clients: a watcher closed for not reading its events. */
  onApiLog?(message: string): void;
}

export interface NodeOptions {
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  /** State dir: applied manifests, per-pod files, the API socket. */
  rootDir: string;
  logRoot: string;
  nodeName: string;
  hostIP?: string;
  runtimeName?: string;
  allowPrivileged?: boolean;
  /** The CRI runtime handler of pods without spec.runtimeClassName. */
  runtimeHandler?: string;
  /** This node for the kubelet's admission of every pod a source adds (labels, allocatable). */
  admission?: NodeInfo;
  pleg?: PlegKind;
  relistPeriodMs?: number;
  /** watch PATH: a manifests file or directory the node follows too. */
  manifestPath?: string;
  fileCheckMs?: number;
  manifestUrl?: string;
  manifestUrlHeaders?: Record<string, string>;
  /** --manifest-url-max-size: a larger body is refused, the last good pods kept. */
  manifestUrlMaxBytes?: number;
  httpCheckMs?: number;
  appliedResyncMs?: number;
  /** Serve the API on <root-dir>/podctl.sock (default true). */
  serve?: boolean;
  /** Released when the node stops (the state dir's lock). */
  lock?: { release(): void };
  /** Said by GET /v1/agent: where this node's output goes. */
  logFile?: string;
  metrics?: Metrics;
  trace?: Tracer;
  hooks?: NodeHooks;
  /** Log rotation, image GC and container GC (the kubelet's flags). */
  hygiene?: Pick<KubeletOptions, 'containerLogs' | 'imageGC' | 'containerGC'>;
  /** Loop and worker periods (unit tests). */
  syncTickMs?: number;
  housekeepingPeriodMs?: number;
  backOffPeriodMs?: number;
}

/** A pod handed over: its key, UID and the generation the agent gave this version of it. */
export interface AppliedPodRef {
  namespace: string;
  name: string;
  uid: string;
  generation: number;
}

const RUN_SOURCE = 'run';
const APPLIED_SOURCE = 'applied';

/**
 * The standalone node: the one place that wires the kubelet's parts (config sources and their merger,
 * pod workers through the Kubelet, PLEG, prober, status, events, housekeeping, the sync loop) and its
 * API socket. Sources: the pods handed to it (<root-dir>/applied, one file per pod, kept across
 * restarts), the pods of a foreground run (kept in memory, gone with it), and watch's PATH and URL.
 */
export class StandaloneNode {
  readonly kubelet: Kubelet;
  readonly pleg: Pleg;
  readonly loop: SyncLoop;
  readonly metrics: Metrics;
  readonly socket: string;
  private readonly merger: PodConfigMerger;
  private readonly applied: AppliedSource;
  private readonly sources: { start(): void; stop(): void }[] = [];
  private readonly expected: string[] = [APPLIED_SOURCE];
  /** metadata.generation per UID: 1 on ADD, one more per UPDATE that changes the pod. */
  private readonly generations = new Map<string, number>();
  /** The generation of the pod object each UID's last finished sync used (status.observedGeneration). */
  private readonly observed = new Map<string, number>();
  /** ADDs of a UID whose previous life is still terminating: replayed once it is gone. */
  private readonly readdAfterTermination = new Map<string, IPod>();
  private server?: Server;
  private readonly startedAt: number;
  /** The podctl sandboxes the runtime held when last read: what a pod handed over must not collide with. */
  private held: HeldPod[] = [];
  /** namespace/name to the UID of the sandbox running it, for pods an older podctl started under a path-hashed UID. */
  private readonly adopted = new Map<string, string>();

  constructor(private readonly opts: NodeOptions) {
    this.startedAt = opts.clock.now();
    this.metrics = opts.metrics ?? new Metrics();
    this.socket = agentSocket(opts.rootDir);
    const hooks = opts.hooks ?? {};
    const wired = wireNode({
      runtime: opts.runtime,
      images: opts.images,
      clock: opts.clock,
      logRoot: opts.logRoot,
      rootDir: opts.rootDir,
      allowPrivileged: opts.allowPrivileged ?? false,
      runtimeHandler: opts.runtimeHandler,
      admission: opts.admission,
      nodeName: opts.nodeName,
      hostIP: opts.hostIP,
      runtimeName: opts.runtimeName,
      agent: nodeAgentLabel(opts.rootDir),
      removeOrphans: true,
      // A pod whose applied file is there but unreadable is kept as it runs, never taken for an orphan.
      sourceClaim: (namespace, name) => this.applied.unreadable(namespace, name),
      ...opts.hygiene,
      // The node owns its root dir (its lock): its events outlive it, so describe shows the crash loop from before a restart.
      eventsJournal: join(opts.rootDir, 'events.jsonl'),
      metrics: this.metrics,
      trace: opts.trace,
      backOffPeriodMs: opts.backOffPeriodMs,
      pleg: opts.pleg,
      relistPeriodMs: opts.relistPeriodMs,
      onPlegFallback: (reason) => hooks.onPlegFallback?.(reason),
      loop: {
        syncTickMs: opts.syncTickMs,
        housekeepingPeriodMs: opts.housekeepingPeriodMs,
        checkRuntime: async () => {
          const s = await opts.runtime.status();
          const down = (s.status?.conditions ?? []).filter((c) => c.type === 'RuntimeReady' && !c.status);
          if (down.length) throw new Error(`RuntimeReady is false: ${down[0]!.reason} ${down[0]!.message}`);
        },
        sourcesReady: () => this.merger.allSourcesReady(this.expected),
        trace: opts.trace,
        onPlegEvent: hooks.onPlegEvent,
        onRuntimeState: hooks.onRuntimeState,
        onHousekeeping: hooks.onHousekeeping,
        onError: hooks.onError,
      },
    });
    this.kubelet = wired.kubelet;
    this.pleg = wired.pleg;
    this.loop = wired.loop;
    opts.trace?.attach(this.kubelet);
    this.merger = new PodConfigMerger(
      (u) => this.handleUpdate(u),
      (source, pod, owner, why) => hooks.onConflict?.(source, pod, owner, why),
    );
    this.kubelet.observe({
      onSynced: (pod) => this.observed.set(podMeta(pod).uid, pod.metadata?.generation ?? 1),
      onTerminated: (pod) => {
        const uid = podMeta(pod).uid;
        this.observed.delete(uid);
        if (!this.readdAfterTermination.has(uid)) {
          this.generations.delete(uid);
          return;
        }
        // The lane is still finishing this termination: its UID is free once it is idle.
        void this.kubelet.workers.idle(uid).then(() => {
          const again = this.readdAfterTermination.get(uid);
          if (!again) return;
          this.readdAfterTermination.delete(uid);
          this.kubelet.workers.forget(uid);
          this.handleUpdate({ op: 'ADD', source: APPLIED_SOURCE, pods: [again] });
        });
      },
    });
    this.applied = new AppliedSource({
      dir: appliedDir(opts.rootDir),
      nodeName: opts.nodeName,
      clock: opts.clock,
      resyncMs: opts.appliedResyncMs,
      onSnapshot: (pods, objects) => this.snapshot(APPLIED_SOURCE, pods, objects),
      onError: (file, message, ref) => {
        hooks.onSourceError?.(message.includes(file) ? message : `${file}: ${message}`);
        // On the pod it keeps (its last good version) too, for describe; one it does not keep yet gets it from housekeeping.
        const pod =
          ref && [...this.kubelet.pods.values()].find((p) => podMeta(p).namespace === ref.namespace && podMeta(p).name === ref.name);
        if (pod)
          this.kubelet.events.record(
            { uid: podMeta(pod).uid, namespace: ref.namespace, name: ref.name },
            'Warning',
            'FailedValidation',
            message.includes(file) ? message : `${file}: ${message}`,
          );
      },
    });
    const onError = (e: { file: string; message: string }) =>
      hooks.onSourceError?.(e.message.includes(e.file) ? e.message : `${e.file}: ${e.message}`);
    // Fields one host cannot honour: said once per file (or URL) and change, like the errors.
    const onWarning = (e: { message: string }) => e.message.split('\n').forEach((line) => hooks.onSourceError?.(`Warning: ${line}`));
    if (opts.manifestPath) {
      this.expected.push('file');
      this.sources.push(
        new FileSource({
          path: opts.manifestPath,
          nodeName: opts.nodeName,
          clock: opts.clock,
          resyncMs: opts.fileCheckMs,
          onSnapshot: (pods, objects) => this.snapshot('file', pods, objects),
          onError,
          onWarning,
        }),
      );
    }
    if (opts.manifestUrl) {
      this.expected.push('http');
      this.sources.push(
        new HttpSource({
          url: opts.manifestUrl,
          headers: opts.manifestUrlHeaders ?? {},
          nodeName: opts.nodeName,
          clock: opts.clock,
          pollMs: opts.httpCheckMs,
          maxBytes: opts.manifestUrlMaxBytes,
          onSnapshot: (pods, objects) => this.snapshot('http', pods, objects),
          onError,
          onWarning,
        }),
      );
    }
  }

  private snapshot(source: string, pods: IPod[], objects: SourceObjects): void {
    this.kubelet.objects.set(source, objects);
    const keeper: Keeper = source === APPLIED_SOURCE ? 'applied' : source === RUN_SOURCE ? 'run' : source === 'http' ? 'http' : 'file';
    this.merger.merge(
      source,
      pods.map((pod) => {
        const adopted = hasDerivedUID(pod, this.opts.nodeName) ? this.adopted.get(podKey(pod)) : undefined;
        return {
          ...pod,
          metadata: {
            ...pod.metadata,
            ...(adopted ? { uid: adopted } : {}),
            annotations: { ...pod.metadata?.annotations, [KEPT_BY_ANNOTATION]: keeper },
          },
        };
      }),
    );
  }

  /**
   * Reads what the runtime holds. A pod this node made whose UID is not the one its namespace/name
   * derives (an older podctl hashed the file's path into it) keeps its UID: its sandbox is adopted,
   * not killed and started again.
   */
  private async readHeld(): Promise<void> {
    this.held = await podsHeldByRuntime(this.opts.runtime).catch(() => this.held);
    const agent = nodeAgentLabel(this.opts.rootDir);
    for (const h of this.held) {
      const key = podKey(h);
      if (h.ready && h.agent === agent && !this.adopted.has(key) && !hasDerivedUID({ metadata: h }, this.opts.nodeName))
        this.adopted.set(key, h.uid);
    }
  }

  /** The config branch, with metadata.generation kept per UID (a copy: the merger's objects stay as read). */
  private handleUpdate(u: PodUpdate): void {
    const pods: IPod[] = [];
    for (const pod of u.pods) {
      const uid = podMeta(pod).uid;
      const state = this.kubelet.workers.state(uid);
      if (u.op === 'ADD' && state === 'terminated' && !this.kubelet.workers.isWorking(uid)) {
        // Its previous life is over (onTerminated has come and gone; housekeeping has not yet dropped
        // the lane): handed over again, it starts anew now, instead of waiting for an end already past.
        this.kubelet.workers.forget(uid);
      } else if (u.op === 'ADD' && (state === 'terminating' || state === 'terminated')) {
        // Handed over again while its previous life ends: start it once that is gone. Its generation
        // moves on now, so that a waiter takes no status of the life that is ending for the new one.
        const generation = (this.generations.get(uid) ?? 0) + 1;
        this.generations.set(uid, generation);
        this.readdAfterTermination.set(uid, { ...pod, metadata: { ...pod.metadata, generation } });
        continue;
      }
      if (u.op === 'REMOVE' || u.op === 'DELETE') this.readdAfterTermination.delete(uid);
      const previous = this.generations.get(uid) ?? 0;
      const generation = u.op === 'ADD' || u.op === 'UPDATE' || previous === 0 ? previous + 1 : previous;
      this.generations.set(uid, generation);
      pods.push({ ...pod, metadata: { ...pod.metadata, generation } });
    }
    if (pods.length) this.loop.handleUpdate({ ...u, pods });
  }

  async start(): Promise<void> {
    await this.readHeld();
    this.applied.start();
    if (this.opts.serve !== false) {
      mkdirSync(this.opts.rootDir, { recursive: true, mode: 0o700 });
      this.server = await startStatusServer(
        this.socket,
        {
          pods: () => this.pods(),
          health: () => this.health(),
          metrics: this.metrics,
          events: () => this.events(),
          agent: () => this.info(),
          view: (q) => this.view(q),
          plan: (body) => this.plan(body),
          planManifests: (body) => this.planManifests(body),
          applyManifests: (body) => this.applyManifests(body),
          watchPods: (listener) => this.watchPods(listener),
          apply: (body, contentType) => this.applyBody(body, contentType),
          remove: (namespace, name, grace) => this.delete(namespace, name, grace),
          setCondition: async (namespace, name, body) => this.setCondition(namespace, name, body) as unknown as Record<string, unknown>,
        },
        { log: (message) => this.opts.hooks?.onApiLog?.(message) },
      );
    }
    this.loop.start();
    this.sources.forEach((s) => s.start());
  }

  /**
   * Stops the loop and the sources; pods keep running (as the kubelet's), unless `cleanup`: then
   * every pod is terminated first. A foreground run's own pods are always terminated.
   */
  async stop(opts: { cleanup?: boolean } = {}): Promise<void> {
    this.sources.forEach((s) => s.stop());
    this.applied.stop();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections?.();
    if (opts.cleanup) await this.terminate([...this.kubelet.pods.keys()]);
    await this.loop.stop();
    await this.kubelet.workers.waitIdle();
    this.opts.lock?.release();
  }

  /** Desired pods with their last status and status.observedGeneration (a v1 PodList's items). */
  pods(): IPod[] {
    return [...this.kubelet.pods.values()].map((p) => this.withStatus(p));
  }

  private podView?: PodView;

  /** Every podctl pod on this node's runtime: its own as it keeps them, any other read from the runtime (GET /v1/podview). */
  async view(q: PodQuery): Promise<PodViewAnswer> {
    this.podView ??= new PodView({
      runtime: this.opts.runtime,
      images: this.opts.images,
      clock: this.opts.clock,
      ownPods: () => this.pods(),
      runtimeName: this.opts.runtimeName,
      hostIP: this.opts.hostIP,
    });
    return { runtimeEndpoint: this.opts.runtime.endpoint, items: await this.podView.list(q) };
  }

  /**
   * POST /v1/plan: the pods planned against this node's runtime, as SyncPod would act on them now (plan's answer without gRPC in the CLI).
   */
  async plan(body: string): Promise<PlanAnswer> {
    let req: { pods?: unknown; prune?: unknown } | undefined;
    try {
      req = JSON.parse(body) as typeof req;
    } catch {
      req = undefined;
    }
    if (req === null || typeof req !== 'object' || !Array.isArray(req.pods)) {
      throw new ApiError(
        400,
        'plan: expected {"pods": [v1 Pods with metadata.name, metadata.uid and spec.containers, defaulted], "prune": true|false}',
      );
    }
    // Each pod validated as apply validates a manifest's, before anything asks the runtime about it.
    const problems: { field: string; message: string }[] = [];
    req.pods.forEach((pod: unknown, i) => {
      const at = `pods[${i}]`;
      if (pod === null || typeof pod !== 'object' || Array.isArray(pod)) {
        return void problems.push({
          field: at,
          message: `expected a v1 Pod (a mapping), got ${pod === null ? 'null' : Array.isArray(pod) ? 'a list' : typeof pod}`,
        });
      }
      for (const p of validateDocument('Pod', pod as Record<string, unknown>, 'error'))
        if (p.severity === 'error') problems.push({ field: `${at}.${p.field}`, message: p.message });
      const uid = (pod as IPod).metadata?.uid;
      if (typeof uid !== 'string' || uid === '')
        problems.push({ field: `${at}.metadata.uid`, message: 'required: the UID the command gave the pod' });
    });
    if (problems.length) {
      throw new ApiError(400, problems.map((p) => `${p.field}: ${p.message}`).join('\n'), { problems });
    }
    const pods = withKeptUIDs(req.pods as IPod[], this.pods());
    const cri = { runtime: this.opts.runtime, images: this.opts.images, statusReader: this.kubelet.runtimeManager.statusReader };
    return {
      runtimeEndpoint: this.opts.runtime.endpoint,
      plan: await planPods(cri, pods, { prune: req.prune === true, now: this.opts.clock.now(), nodeName: this.opts.nodeName }),
    };
  }

  /**
   * POST /v1/manifests/plan: manifests a command read and hands over as they are, read here as the
   * command would have (the same problems, warnings and UIDs), then planned as POST /v1/plan plans
   * pods. The command then loads neither the API validators nor gRPC.
   */
  async planManifests(body: string): Promise<PlanAnswer & { pods: number; warnings: ManifestProblem[] }> {
    const req = parseRequest(body, 'plan');
    const set = readSet(req);
    const pods = withKeptUIDs(
      set.pods.map((p) => p.pod),
      this.pods(),
    );
    const cri = { runtime: this.opts.runtime, images: this.opts.images, statusReader: this.kubelet.runtimeManager.statusReader };
    const plan = await planPods(cri, pods, { prune: req.prune === true, now: this.opts.clock.now(), nodeName: this.opts.nodeName });
    return { runtimeEndpoint: this.opts.runtime.endpoint, plan, pods: set.pods.length, warnings: set.warnings };
  }

  /**
   * POST /v1/manifests/apply: manifests a command read, read here as the command would have (400 with
   * the same problems), their pods admitted with the command's own admission settings (403 naming
   * each pod refused, and nothing handed over), then kept as POST /v1/pods keeps them.
   */
  applyManifests(body: string): Promise<Record<string, unknown>> {
    const req = parseRequest(body, 'apply');
    const admission = req.admission as { allowPrivileged?: unknown; node?: NodeInfo } | undefined;
    if (
      !admission ||
      typeof admission.node?.name !== 'string' ||
      typeof admission.node.allocatable !== 'object' ||
      admission.node.allocatable === null
    ) {
      throw new ApiError(400, 'apply: expected "admission": {"allowPrivileged": true|false, "node": {name, labels, allocatable}}');
    }
    // Each text is parsed and validated once: its documents as loaded are what the applied files are made of.
    const { set, documents } = readSetWithDocuments(req);
    if (set.pods.length === 0) throw new ApiError(400, 'no Pod found in the manifests', { noPods: true, warnings: set.warnings });
    const { rejected } = admitPods(
      set.pods.map((p) => p.pod),
      { allowPrivileged: admission.allowPrivileged === true, node: admission.node },
    );
    if (rejected.length) {
      throw new ApiError(403, `${rejected.length} pod(s) rejected at admission; nothing was handed to the agent`, {
        rejected: rejected.map((r) => ({ pod: podKey(r.pod), reason: r.reason, message: r.message })),
        warnings: set.warnings,
      });
    }
    // The texts as POST /v1/pods takes them: stdin first, then the files by absolute path. Valid, with a pod
    // at least, and no two of one namespace/name (readSet said so): what apply would refuse of them, it has.
    const texts = documents.map(({ entry, docs }) => ({ file: entry.kind === 'file' ? entry.path : '<stdin>', docs }));
    const files = [...texts.filter((t) => t.file === '<stdin>'), ...texts.filter((t) => t.file !== '<stdin>')];
    const uids = new Map(set.pods.map(({ pod }) => [podKey(pod), podMeta(pod).uid]));
    return this.readHeld().then(() => ({
      apiVersion: 'v1',
      kind: 'Applied',
      pods: this.keepApplied(appliedPods(files), uids),
      warnings: set.warnings,
    }));
  }

  /** The pod with the status the status manager produced (observedGeneration included), served as it is. */
  private withStatus(p: IPod): IPod {
    const uid = podMeta(p).uid;
    const deletion = this.kubelet.deletionOf(uid);
    if (deletion) p = { ...p, metadata: { ...p.metadata, ...deletion } };
    return { ...p, status: this.kubelet.statusManager.get(uid) ?? { phase: 'Pending' } };
  }

  events(): PodEvent[] {
    return this.kubelet.events.all();
  }

  /** Every change of a pod's status, and its end. */
  watchPods(listener: (e: PodWatchEvent) => void): () => void {
    // status.observedGeneration moves when a sync ends, which may change nothing else: that is a change too.
    const sentGeneration = new Map<string, number | undefined>();
    const send = (pod: IPod) => {
      const uid = podMeta(pod).uid;
      const object = this.withStatus(this.kubelet.pods.get(uid) ?? pod);
      sentGeneration.set(uid, (object.status as { observedGeneration?: number } | undefined)?.observedGeneration);
      listener({ type: 'MODIFIED', object });
    };
    return this.kubelet.observe({
      onStatus: ({ pod }) => send(pod),
      onSynced: (pod) => {
        const uid = podMeta(pod).uid;
        if (this.kubelet.pods.has(uid) && sentGeneration.get(uid) !== this.observed.get(uid)) send(pod);
      },
      onTerminated: (pod) => {
        sentGeneration.delete(podMeta(pod).uid);
        listener({ type: 'DELETED', object: pod });
      },
    });
  }

  observe(observer: SyncObserver): () => void {
    return this.kubelet.observe(observer);
  }

  /** Every event recorded or repeated from now on. */
  subscribeEvents(listener: (e: PodEvent) => void): () => void {
    return this.kubelet.events.subscribe(listener);
  }

  health(): { ok: boolean; checks: { name: string; ok: boolean; message: string }[] } {
    const plegHealth = this.pleg.healthy();
    return {
      ok: plegHealth.ok && this.loop.isRuntimeUp,
      checks: [
        { name: 'pleg', ok: plegHealth.ok, message: plegHealth.message },
        { name: 'runtime', ok: this.loop.isRuntimeUp, message: 'the runtime does not answer its Status call' },
      ],
    };
  }

  info(): Record<string, unknown> {
    return {
      pid: process.pid,
      rootDir: this.opts.rootDir,
      socket: this.socket,
      applied: appliedDir(this.opts.rootDir),
      ...(this.opts.logFile ? { log: this.opts.logFile } : {}),
      since: new Date(this.startedAt).toISOString(),
      pods: this.kubelet.pods.size,
      cpus: cpus().length,
    };
  }

  /** POST /v1/pods: JSON {files: [{file, text}]} or manifest text (YAML or JSON) as the body. */
  private async applyBody(body: string, contentType: string): Promise<Record<string, unknown>> {
    let files: { file: string; text: string }[];
    if (contentType.includes('json') && body.trimStart().startsWith('{') && body.includes('"files"')) {
      try {
        files = (JSON.parse(body) as { files: { file: string; text: string }[] }).files;
      } catch (err) {
        throw new ApiError(400, `the request body is not valid JSON: ${errorMessage(err)}`);
      }
      if (!Array.isArray(files) || files.some((f) => typeof f?.file !== 'string' || typeof f?.text !== 'string')) {
        throw new ApiError(400, 'expected {"files": [{"file": NAME, "text": MANIFEST}]}');
      }
      // A file's name only says where the pods came from (escaped in their applied files' comment); a path's length at most.
      const long = files.findIndex((f) => Buffer.byteLength(f.file) > 4096);
      if (long >= 0)
        throw new ApiError(
          400,
          `files[${long}].file: expected a file name of at most 4096 bytes (PATH_MAX), got ${Buffer.byteLength(files[long]!.file)}`,
        );
    } else files = [{ file: '<request>', text: body }];
    return { apiVersion: 'v1', kind: 'Applied', pods: this.apply(files) };
  }

  /**
   * Hands pods to the node: each pod's applied file is written (replacing the previous version of the
   * same namespace/name, whichever file it came from) and the applied source re-read at once. All or
   * nothing: an invalid manifest, or a pod another source keeps, changes nothing.
   */
  apply(files: { file: string; text: string }[]): AppliedPodRef[] {
    const split = splitApplied(files, this.opts.nodeName);
    if (split.problems.length) {
      throw new ApiError(400, split.problems.map(formatProblem).join('\n'), { problems: split.problems });
    }
    if (split.pods.length === 0) throw new ApiError(400, `no Pod found in ${files.map((f) => f.file).join(', ')}`);
    const uids = new Map(
      split.pods.map((p) => [
        `${p.namespace}/${p.name}`,
        podMeta(parseManifestText(p.text, { kind: 'file', path: p.name }, { nodeName: this.opts.nodeName }).pods[0]?.pod ?? {}).uid,
      ]),
    );
    return this.keepApplied(split.pods, uids);
  }

  /** The pods' applied files written, all or none: a pod another source keeps refuses the lot (409). */
  private keepApplied(pods: AppliedPod[], uids: Map<string, string>): AppliedPodRef[] {
    const refused = pods.flatMap((p) => {
      const kept = this.keptPod(p.namespace, p.name);
      const owner = this.merger.sourceOfName(p.namespace, p.name);
      if (kept && owner && owner !== APPLIED_SOURCE)
        return [`${p.namespace}/${p.name}: rejected at admission: ${keptByMessage(kept, this.opts.rootDir, this.opts)}`];
      const conflict = this.uidConflict(p, uids.get(`${p.namespace}/${p.name}`) ?? '');
      return conflict ? [`${p.namespace}/${p.name}: rejected at admission: ${conflict}`] : [];
    });
    if (refused.length) throw new ApiError(409, refused.join('\n'));
    // Written, then read back as the agent reads them at a restart or a resync: the pods take their
    // UIDs (their namespace/name's, or the sandbox's they adopt), hashes and objects from the files, so nothing differs later.
    this.applied.write(pods);
    return pods.map((p) => {
      const pod = [...this.kubelet.pods.values()].find((x) => podMeta(x).namespace === p.namespace && podMeta(x).name === p.name);
      const pending = [...this.readdAfterTermination.values()].find(
        (x) => podMeta(x).namespace === p.namespace && podMeta(x).name === p.name,
      );
      const uid = pod?.metadata?.uid ?? pending?.metadata?.uid ?? '';
      return { namespace: p.namespace, name: p.name, uid, generation: this.generations.get(uid) ?? 1 };
    });
  }

  private keptPod(namespace: string, name: string): IPod | undefined {
    return (
      [...this.kubelet.pods.values()].find((x) => podMeta(x).namespace === namespace && podMeta(x).name === name) ??
      this.merger.pods().find((x) => podMeta(x).namespace === namespace && podMeta(x).name === name)
    );
  }

  /**
   * A pod handed over whose UID another pod holds (one this node keeps, or one the runtime runs), or whose namespace/name runs under
   * another explicit UID.
   */
  private uidConflict(p: AppliedPod, uid: string): string | undefined {
    const pod: IPod = { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: p.namespace, name: p.name, uid } };
    const holder = this.merger.pods().find((x) => podMeta(x).uid === uid && podKey(x) !== podKey(pod));
    if (holder)
      return `metadata.uid ${uid} is already the UID of pod ${podKey(holder)} (${keptByMessage(holder, this.opts.rootDir, this.opts)}); give this pod another metadata.uid, or none`;
    // What this node keeps under that namespace/name is its own to update; what else runs is checked.
    const kept = new Set(this.merger.pods().map((x) => podMeta(x).uid));
    const settled = settleIdentities(
      [pod],
      this.held.filter((h) => !kept.has(h.uid)),
      this.opts.nodeName,
    );
    if (settled.refused.length) return settled.refused[0]!.message;
    const adopted = podMeta(settled.pods[0]!).uid;
    // This node's own sandbox of it, when it has one, is the one kept (readHeld found it).
    if (adopted !== uid && !this.adopted.has(podKey(pod))) this.adopted.set(podKey(pod), adopted);
    return undefined;
  }

  /**
   * Forgets a pod handed over (its applied file goes, so it never comes back) or one of the foreground
   * run's, and terminates it with its grace period (or the one given). A pod watch's PATH or URL keeps is
   * refused: that source would bring it back.
   */
  async delete(namespace: string, name: string, gracePeriodSeconds?: number): Promise<Record<string, unknown>> {
    // As the API server: a name that cannot be a pod's is refused before it reaches a path.
    const invalid = podRefProblem(namespace, name);
    if (invalid) throw new ApiError(400, invalid, { reason: 'Invalid' });
    const pod = [...this.kubelet.pods.values()].find((p) => podMeta(p).namespace === namespace && podMeta(p).name === name);
    const owner = this.merger.sourceOfName(namespace, name);
    if (owner && owner !== APPLIED_SOURCE && owner !== RUN_SOURCE) {
      throw new ApiError(
        409,
        `pod ${namespace}/${name} comes from the watch's ${owner === 'file' ? this.opts.manifestPath : this.opts.manifestUrl}; remove it there to delete it for good`,
      );
    }
    const uid = pod?.metadata?.uid;
    if (uid && gracePeriodSeconds !== undefined && gracePeriodSeconds >= 0) this.kubelet.removePod(uid, gracePeriodSeconds);
    const had = this.applied.remove(namespace, name);
    this.adopted.delete(`${namespace}/${name}`);
    if (owner === RUN_SOURCE)
      this.merger.merge(
        RUN_SOURCE,
        this.merger
          .pods()
          .filter((p) => this.merger.sourceOfName(podMeta(p).namespace!, podMeta(p).name) === RUN_SOURCE && podMeta(p).uid !== uid),
      );
    if (!had && !uid) throw new ApiError(404, `pod "${name}" not found in namespace ${namespace}`);
    return { apiVersion: 'v1', kind: 'Deleted', namespace, name, ...(uid ? { uid } : {}) };
  }

  /**
   * POST /v1/pods/NS/NAME/conditions: sets a pod condition, as a controller patches one through the
   * API server (a readiness gate's); the kubelet's own types are refused. Returns the pod.
   */
  setCondition(namespace: string, name: string, body: string): IPod {
    let c: { type?: unknown; status?: unknown; reason?: unknown; message?: unknown };
    try {
      c = JSON.parse(body) as typeof c;
    } catch {
      throw new ApiError(400, 'expected a JSON condition: {"type": "...", "status": "True" | "False" | "Unknown", "reason"?, "message"?}');
    }
    if (typeof c !== 'object' || c === null || typeof c.type !== 'string' || !/^([a-z0-9.-]+\/)?[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(c.type)) {
      throw new ApiError(400, 'type: expected a condition type, e.g. example.com/feature-1 (a qualified name)');
    }
    if (StatusManager.OWNED_CONDITIONS.has(c.type))
      throw new ApiError(400, `type: ${c.type} is set by the kubelet itself; set a readiness gate's condition instead`);
    if (c.status !== 'True' && c.status !== 'False' && c.status !== 'Unknown')
      throw new ApiError(400, `status: expected True, False or Unknown, got ${JSON.stringify(c.status)}`);
    for (const f of ['reason', 'message'] as const)
      if (c[f] !== undefined && typeof c[f] !== 'string') throw new ApiError(400, `${f}: expected a string`);
    const pod = [...this.kubelet.pods.values()].find((p) => podMeta(p).namespace === namespace && podMeta(p).name === name);
    if (!pod) throw new ApiError(404, `pod "${name}" not found in namespace ${namespace}`);
    this.kubelet.setPodCondition(podMeta(pod).uid, {
      type: c.type,
      status: c.status,
      reason: c.reason as string | undefined,
      message: c.message as string | undefined,
    });
    return this.withStatus(pod);
  }

  /** A foreground run's pods: in memory only, never written to the applied dir. Returns those refused. */
  runPods(pods: IPod[], objects: SourceObjects): { pod: IPod; message: string }[] {
    const refused: { pod: IPod; message: string }[] = [];
    const accepted = pods.filter((pod) => {
      const owner = this.merger.sourceOfName(podMeta(pod).namespace!, podMeta(pod).name);
      if (!owner || owner === RUN_SOURCE) return true;
      refused.push({
        pod,
        message: keptByMessage(this.keptPod(podMeta(pod).namespace, podMeta(pod).name) ?? pod, this.opts.rootDir, this.opts),
      });
      return false;
    });
    // What else runs under the same namespace/name is that pod; a UID another pod holds is refused.
    const kept = new Set(this.merger.pods().map((x) => podMeta(x).uid));
    const settled = settleIdentities(
      accepted,
      this.held.filter((h) => !kept.has(h.uid)),
      this.opts.nodeName,
    );
    refused.push(...settled.refused);
    for (const pod of settled.pods)
      if (!accepted.some((a) => podMeta(a).uid === podMeta(pod).uid)) this.adopted.set(podKey(pod), podMeta(pod).uid);
    this.snapshot(
      RUN_SOURCE,
      accepted.filter((pod) => !settled.refused.some((r) => r.pod === pod)),
      objects,
    );
    return refused;
  }

  /** Terminates the foreground run's pods and resolves once each is gone from the runtime. */
  async stopRunPods(): Promise<void> {
    const uids = this.merger
      .pods()
      .filter((p) => this.merger.sourceOfName(podMeta(p).namespace!, podMeta(p).name) === RUN_SOURCE)
      .map((p) => podMeta(p).uid);
    const done = this.whenTerminated(uids);
    this.merger.merge(RUN_SOURCE, []);
    await done;
  }

  /** Kills the pods through their workers and resolves once each is terminated and removed. */
  async terminate(uids: string[]): Promise<void> {
    const done = this.whenTerminated(uids);
    this.loop.removePods(uids);
    await done;
  }

  private whenTerminated(uids: string[]): Promise<void> {
    const left = new Set(uids.filter((uid) => this.kubelet.pods.has(uid)));
    return new Promise((resolve) => {
      if (left.size === 0) return resolve();
      const stop = this.kubelet.observe({
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

interface ManifestsBody {
  manifests: ReadManifests;
  nodeName: string;
  prune?: unknown;
  admission?: unknown;
}

/** The body of POST /v1/manifests/*: {manifests: {entries: [{kind, path, display, text} | {problem}]}, nodeName, ...}. */
function parseRequest(body: string, what: string): ManifestsBody {
  let req: Partial<ManifestsBody> | undefined;
  try {
    req = JSON.parse(body) as Partial<ManifestsBody>;
  } catch {
    req = undefined;
  }
  const entryOK = (e: unknown): boolean => {
    const x = e as Record<string, unknown> | null;
    if (typeof x !== 'object' || x === null) return false;
    if ('problem' in x) return typeof (x.problem as { file?: unknown; message?: unknown } | null)?.message === 'string';
    return (
      (x.kind === 'file' || x.kind === 'stdin') && typeof x.path === 'string' && typeof x.display === 'string' && typeof x.text === 'string'
    );
  };
  if (
    !req ||
    typeof req.nodeName !== 'string' ||
    !req.nodeName ||
    !Array.isArray(req.manifests?.entries) ||
    !req.manifests.entries.every(entryOK)
  ) {
    throw new ApiError(
      400,
      `${what}: expected {"manifests": {"entries": [{"kind": "file"|"stdin", "path", "display", "text"} | {"problem"}]}, "nodeName"}`,
    );
  }
  return req as ManifestsBody;
}

/** The manifest set of a request, read as the command would have; its problems as a 400 that carries them. */
function readSet(req: ManifestsBody): ManifestSet {
  return readSetWithDocuments(req).set;
}

/** readSet, with each text's documents as loaded. */
function readSetWithDocuments(req: ManifestsBody): { set: ManifestSet; documents: ManifestDocuments[] } {
  try {
    return manifestSetWithDocuments(req.manifests, { nodeName: req.nodeName });
  } catch (err) {
    if (err instanceof ManifestError) throw new ApiError(400, err.message, { problems: err.problems, warnings: err.warnings });
    throw err;
  }
}
