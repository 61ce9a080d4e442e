import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { serveV1 } from '../api/v1.js';
import { FileSource, HttpSource, PodConfigMerger } from '../config/index.js';
import { ephemeralSpecs } from '../kuberuntime/ephemeral.js';
import { Metrics } from '../metrics.js';
import type { SourceObjects } from '../objects.js';
import { podMeta } from '../util/pod-key.js';
import type { AppliedPodRef, DeletedPod, ManifestText, PodWatchEvent } from './agent.js';
import { AppliedSource } from './applied.js';
import { PodGenerations } from './generations.js';
import { PodIdentities } from './identities.js';
import { KEPT_BY_ANNOTATION, type Keeper } from './keeper.js';
import { APPLIED_SOURCE, LocalAgent, RUN_SOURCE } from './local-agent.js';
import { agentSocket, appliedDir, nodeAgentLabel } from './paths.js';
import type { NodeHooks, NodeOptions } from './options.js';
import { wireNode, type NodeWiring } from './wire.js';

export type { AppliedPodRef, NodeHooks, NodeOptions };

type Kubelet = NodeWiring['kubelet'];

/**
 * The standalone node: the one place that wires the kubelet's parts (config sources and their merger,
 * pod workers through the Kubelet, PLEG, prober, status, events, housekeeping, the sync loop), the
 * agent over them (LocalAgent: what its APIs call) and its API socket. Sources: the pods handed to it
 * (<root-dir>/applied, one file per pod, kept across restarts), the pods of a foreground run (kept in
 * memory, gone with it), and watch's PATH and URL.
 */
export class StandaloneNode {
  readonly kubelet: Kubelet;
  readonly pleg: NodeWiring['pleg'];
  readonly loop: NodeWiring['loop'];
  readonly metrics: Metrics;
  readonly socket: string;
  /** What the APIs call: the /v1 API on the socket, and any API served beside it. */
  readonly agent: LocalAgent;
  private readonly merger: PodConfigMerger;
  private readonly applied: AppliedSource;
  private readonly sources: { start(): void; stop(): void }[] = [];
  private readonly expected: string[] = [APPLIED_SOURCE];
  private readonly generations: PodGenerations;
  private readonly identities: PodIdentities;
  private server?: Server;

  constructor(private readonly opts: NodeOptions) {
    const startedAt = opts.clock.now();
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
    this.generations = new PodGenerations(this.kubelet.workers);
    this.identities = new PodIdentities(opts.runtime, opts.rootDir, opts.nodeName);
    this.merger = new PodConfigMerger(
      (u) => this.handleUpdate(u),
      (source, pod, owner, why) => hooks.onConflict?.(source, pod, owner, why),
    );
    this.kubelet.observe({
      onTerminated: (pod) => {
        const uid = podMeta(pod).uid;
        this.generations.terminated(uid, (again) => this.handleUpdate({ op: 'ADD', source: APPLIED_SOURCE, pods: [again] }));
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
        const pod = ref && this.kubelet.podManager.getPodByFullName(ref.namespace, ref.name);
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
    this.agent = new LocalAgent({
      settings: {
        runtime: opts.runtime,
        images: opts.images,
        clock: opts.clock,
        runtimeName: opts.runtimeName,
        hostIP: opts.hostIP,
        rootDir: opts.rootDir,
        nodeName: opts.nodeName,
        socket: this.socket,
        startedAt,
        manifestPath: opts.manifestPath,
        manifestUrl: opts.manifestUrl,
        logFile: opts.logFile,
      },
      kubelet: this.kubelet,
      loop: this.loop,
      pleg: this.pleg,
      merger: this.merger,
      applied: this.applied,
      identities: this.identities,
      generations: this.generations,
      withStatus: (pod) => this.withStatus(pod),
      snapshot: (source, pods, objects) => this.snapshot(source, pods, objects),
    });
  }

  private snapshot(source: string, pods: IPod[], objects: SourceObjects): void {
    this.kubelet.objects.set(source, objects);
    const keeper: Keeper = source === APPLIED_SOURCE ? 'applied' : source === RUN_SOURCE ? 'run' : source === 'http' ? 'http' : 'file';
    this.merger.merge(
      source,
      pods.map((pod) => {
        const adopted = this.identities.adoptedUID(pod);
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

  /** The config branch, with metadata.generation kept per UID. */
  private handleUpdate(u: Parameters<NodeWiring['loop']['handleUpdate']>[0]): void {
    const next = this.generations.next(u);
    if (next) this.loop.handleUpdate(next);
  }

  async start(): Promise<void> {
    await this.identities.readHeld();
    this.applied.start();
    if (this.opts.serve !== false) {
      mkdirSync(this.opts.rootDir, { recursive: true, mode: 0o700 });
      this.server = await serveV1(this.socket, this.agent, this.metrics, { log: (message) => this.opts.hooks?.onApiLog?.(message) });
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
    if (opts.cleanup) await this.agent.terminate([...this.kubelet.pods.keys()]);
    await this.loop.stop();
    await this.kubelet.workers.waitIdle();
    this.opts.lock?.release();
  }

  /** Desired pods with their last status and status.observedGeneration (a v1 PodList's items). */
  pods(): IPod[] {
    return this.agent.pods();
  }

  /** The pod with the status the status manager produced (observedGeneration included), served as it is. */
  private withStatus(p: IPod): IPod {
    const uid = podMeta(p).uid;
    const deletion = this.kubelet.deletionOf(uid);
    if (deletion) p = { ...p, metadata: { ...p.metadata, ...deletion } };
    // Ephemeral containers live in the runtime alone (no source describes them): listed from there.
    const ephemeral = ephemeralSpecs(this.kubelet.podCache.get(uid));
    if (ephemeral.length) p = { ...p, spec: { ...p.spec!, ephemeralContainers: ephemeral } };
    return { ...p, status: this.kubelet.statusManager.get(uid) ?? { phase: 'Pending' } };
  }

  /** Every change of a pod's status, and its end. */
  watchPods(listener: (e: PodWatchEvent) => void): () => void {
    return this.agent.watchPods(listener);
  }

  observe(observer: Parameters<Kubelet['observe']>[0]): () => void {
    return this.kubelet.observe(observer);
  }

  /** Every event the kubelet recorded. */
  events(): ReturnType<LocalAgent['events']> {
    return this.agent.events();
  }

  /** Every event recorded or repeated from now on. */
  subscribeEvents(listener: Parameters<LocalAgent['watchEvents']>[0]): () => void {
    return this.agent.watchEvents(listener);
  }

  /** Hands pods to the node (LocalAgent.apply): all or nothing. */
  apply(files: ManifestText[]): AppliedPodRef[] {
    return this.agent.apply(files);
  }

  /** Forgets a pod handed over or one of the foreground run's, and terminates it (LocalAgent.delete). */
  delete(namespace: string, name: string, gracePeriodSeconds?: number): Promise<DeletedPod> {
    return this.agent.delete(namespace, name, gracePeriodSeconds);
  }

  /** A foreground run's pods: in memory only, never written to the applied dir. Returns those refused. */
  runPods(pods: IPod[], objects: SourceObjects): { pod: IPod; message: string }[] {
    return this.agent.runPods(pods, objects);
  }

  /** Terminates the foreground run's pods and resolves once each is gone from the runtime. */
  stopRunPods(): Promise<void> {
    return this.agent.stopRunPods();
  }
}
