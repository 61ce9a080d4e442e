import { AsyncResource } from 'node:async_hooks';
import { existsSync } from 'node:fs';
import { CallLimiter } from './limiter.js';
import { CriError, GrpcStatus, mapGrpcError, noRuntimeError, type GrpcFailure } from './errors.js';
import { socketPath } from './endpoint.js';
import { criServices } from './proto.js';
import { failure, grpc, passBytes, runtimeClient, serverStream } from './channel.js';
import type * as T from './types.js';
import type { ContainerSummary, PodSandboxSummary } from './types.js';
import type * as G from './generated-calls.js';
import { containerSummaryDecoder, podSandboxSummaryDecoder } from './summaries.js';

/** The runtime half of the CRI, as the core uses it. */
export interface RuntimeService {
  readonly endpoint: string;
  /**
   * Runs a pod sync once calls are not piling up in the client (CallLimiter.admitted): the pod
   * workers run each sync through it.
   */
  admitSync?<T>(sync: () => Promise<T>): Promise<T>;
  version(): Promise<T.VersionResponse>;
  status(verbose?: boolean): Promise<T.StatusResponse>;
  runPodSandbox(config: T.PodSandboxConfigInput, runtimeHandler?: string): Promise<string>;
  stopPodSandbox(podSandboxId: string): Promise<void>;
  removePodSandbox(podSandboxId: string): Promise<void>;
  podSandboxStatus(podSandboxId: string, verbose?: boolean): Promise<T.PodSandboxStatusResponse>;
  listPodSandbox(filter?: T.PodSandboxFilterInput): Promise<T.PodSandbox[]>;
  createContainer(podSandboxId: string, config: T.ContainerConfigInput, sandboxConfig: T.PodSandboxConfigInput): Promise<string>;
  startContainer(containerId: string): Promise<void>;
  /** timeoutSeconds: grace before the runtime sends SIGKILL. */
  stopContainer(containerId: string, timeoutSeconds: number): Promise<void>;
  removeContainer(containerId: string): Promise<void>;
  listContainers(filter?: T.ContainerFilterInput): Promise<T.Container[]>;
  /** ListPodSandbox and ListContainers without annotations (or image specs): for relists, cheap at any scale. */
  listPodSandboxSummaries(filter?: T.PodSandboxFilterInput): Promise<PodSandboxSummary[]>;
  listContainerSummaries(filter?: T.ContainerFilterInput): Promise<ContainerSummary[]>;
  containerStatus(containerId: string, verbose?: boolean): Promise<T.ContainerStatusResponse>;
  /** In-place resize: new CPU and memory settings for a running container. */
  updateContainerResources(containerId: string, linux: T.LinuxContainerResourcesInput): Promise<void>;
  execSync(containerId: string, cmd: string[], timeoutSeconds: number): Promise<T.ExecSyncResponse>;
  exec(request: T.ExecRequestInput): Promise<T.ExecResponse>;
  containerStats(containerId: string): Promise<T.ContainerStats | undefined>;
  listContainerStats(filter?: T.ContainerStatsFilterInput): Promise<T.ContainerStats[]>;
  /** A stream of container events; cancel() ends it. */
  getContainerEvents(handlers: ContainerEventHandlers): ContainerEventStream;
  /** Asks the runtime to reopen a running container's log file (after it was renamed for rotation). */
  reopenContainerLog(containerId: string): Promise<void>;
}

export interface ContainerEventHandlers {
  onEvent(event: T.ContainerEventResponse): void;
  onError(err: CriError): void;
  onEnd?(): void;
}

export interface ContainerEventStream {
  cancel(): void;
}

/** The image half of the CRI. */
export interface ImageService {
  readonly endpoint: string;
  listImages(filter?: T.ImageFilterInput): Promise<T.Image[]>;
  /** undefined when the image is not present. */
  imageStatus(image: string, verbose?: boolean): Promise<T.Image | undefined>;
  /** Returns the image reference (digest) the runtime pulled. */
  pullImage(image: string, sandboxConfig?: T.PodSandboxConfigInput, auth?: T.AuthConfigInput): Promise<string>;
  removeImage(image: string): Promise<void>;
  imageFsInfo(): Promise<T.ImageFsInfoResponse>;
}

/** Every CRI call made, with its latency and outcome (metrics and --trace). */
export type CallObserver = (call: { method: string; durationMs: number; error?: CriError }) => void;

export interface CriClientOptions {
  runtimeEndpoint: string;
  imageEndpoint?: string;
  timeoutMs: number;
  pullTimeoutMs: number;
  observer?: CallObserver;
  /** CRI calls in flight at once (default 64); the rest wait their turn, lists first. */
  maxInFlight?: number;
}

/** Calls that last as long as their work (a grace period, a pull, a command): never queued behind the bound. */
const UNBOUNDED_CALLS = new Set(['StopContainer', 'ExecSync', 'PullImage']);
/** What the PLEG relist, housekeeping and the runtime check read: ahead of the pod workers' calls. */
const PRIORITY_CALLS = new Set(['ListPodSandbox', 'ListContainers', 'ListContainerStats', 'Status', 'Version']);
const DEFAULT_MAX_IN_FLIGHT = 64;

/** Request and response types of each unary CRI method. */
interface RuntimeCalls {
  Version: [G.VersionRequest, G.VersionResponse__Output];
  Status: [G.StatusRequest, G.StatusResponse__Output];
  RunPodSandbox: [G.RunPodSandboxRequest, G.RunPodSandboxResponse__Output];
  StopPodSandbox: [G.StopPodSandboxRequest, G.StopPodSandboxResponse__Output];
  RemovePodSandbox: [G.RemovePodSandboxRequest, G.RemovePodSandboxResponse__Output];
  PodSandboxStatus: [G.PodSandboxStatusRequest, G.PodSandboxStatusResponse__Output];
  ListPodSandbox: [G.ListPodSandboxRequest, G.ListPodSandboxResponse__Output];
  CreateContainer: [G.CreateContainerRequest, G.CreateContainerResponse__Output];
  StartContainer: [G.StartContainerRequest, G.StartContainerResponse__Output];
  StopContainer: [G.StopContainerRequest, G.StopContainerResponse__Output];
  RemoveContainer: [G.RemoveContainerRequest, G.RemoveContainerResponse__Output];
  ListContainers: [G.ListContainersRequest, G.ListContainersResponse__Output];
  ContainerStatus: [G.ContainerStatusRequest, G.ContainerStatusResponse__Output];
  UpdateContainerResources: [G.UpdateContainerResourcesRequest, G.UpdateContainerResourcesResponse__Output];
  ExecSync: [G.ExecSyncRequest, G.ExecSyncResponse__Output];
  Exec: [G.ExecRequest, G.ExecResponse__Output];
  Attach: [G.AttachRequest, G.AttachResponse__Output];
  PortForward: [G.PortForwardRequest, G.PortForwardResponse__Output];
  ContainerStats: [G.ContainerStatsRequest, G.ContainerStatsResponse__Output];
  ReopenContainerLog: [G.ReopenContainerLogRequest, G.ReopenContainerLogResponse__Output];
  ListContainerStats: [G.ListContainerStatsRequest, G.ListContainerStatsResponse__Output];
}

interface ImageCalls {
  ListImages: [G.ListImagesRequest, G.ListImagesResponse__Output];
  ImageStatus: [G.ImageStatusRequest, G.ImageStatusResponse__Output];
  PullImage: [G.PullImageRequest, G.PullImageResponse__Output];
  RemoveImage: [G.RemoveImageRequest, G.RemoveImageResponse__Output];
  ImageFsInfo: [G.ImageFsInfoRequest, G.ImageFsInfoResponse__Output];
}

type Service = 'RuntimeService' | 'ImageService';

/** The client of both CRI services over unix sockets, with grpc-js: one channel per endpoint. */
export class CriClient implements RuntimeService, ImageService {
  readonly endpoint: string;
  readonly imageEndpoint: string;
  private readonly runtime: grpc.Client;
  private readonly images: grpc.Client;
  private readonly runtimeSocket: string;
  private readonly imageSocket: string;
  private readonly opts: CriClientOptions;
  /** The bound on calls in flight (see CallLimiter). */
  readonly limiter: CallLimiter;
  /** The list decoders, which reuse the records unchanged since the last answer. */
  private readonly sandboxSummaries = podSandboxSummaryDecoder();
  private readonly containerSummaries = containerSummaryDecoder();

  constructor(opts: CriClientOptions) {
    this.opts = opts;
    this.limiter = new CallLimiter(opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT);
    this.endpoint = opts.runtimeEndpoint;
    this.imageEndpoint = opts.imageEndpoint ?? opts.runtimeEndpoint;
    this.runtimeSocket = socketPath(this.endpoint);
    this.imageSocket = socketPath(this.imageEndpoint);
    this.runtime = runtimeClient(this.endpoint);
    this.images = this.imageSocket === this.runtimeSocket ? this.runtime : runtimeClient(this.imageEndpoint);
  }

  admitSync<T>(sync: () => Promise<T>): Promise<T> {
    return this.limiter.admitted(sync);
  }

  close(): void {
    this.runtime.close();
    if (this.images !== this.runtime) this.images.close();
  }

  private call<Req, Res>(
    service: Service,
    method: string,
    request: Req,
    opts: { timeoutMs?: number; decode?: (buf: Buffer) => Res } = {},
  ): Promise<Res> {
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    const client = service === 'ImageService' ? this.images : this.runtime;
    const socket = service === 'ImageService' ? this.imageSocket : this.runtimeSocket;
    const endpoint = service === 'ImageService' ? this.imageEndpoint : this.endpoint;
    // performance (a global) loads perf_hooks when first read: read only for an observer.
    const started = this.opts.observer ? performance.now() : 0;
    // Run in the caller's async context, so an observer can tell which unit of work made the call.
    // (AsyncResource.bind would do, but makes a bound function with deprecation wrappers per call:
    // some 8 MB live at once while 5,000 pods start.)
    const observer = this.opts.observer;
    const scope = observer && new AsyncResource('CriCall');
    const observe = (error?: CriError) =>
      scope?.runInAsyncScope(observer!, undefined, { method, durationMs: performance.now() - started, error });
    // A missing socket fails at once instead of waiting for a connect timeout.
    if (!existsSync(socket)) {
      const err = noRuntimeError(endpoint, method);
      observe(err);
      return Promise.reject(err);
    }
    const def = criServices()[service][method]!;
    const decode = opts.decode ?? (def.responseDeserialize as (buf: Buffer) => Res);
    // The deadline runs from the caller's request: time spent waiting for a slot counts.
    const deadline = Date.now() + timeoutMs;
    const fail = (err: GrpcFailure) => {
      const mapped = mapGrpcError(err, method, endpoint, timeoutMs);
      observe(mapped);
      return mapped;
    };
    const send = (release: () => void): Promise<Res> => {
      // Encoded here, not by grpc-js: a request that cannot be encoded is refused naming its field, and nothing is sent.
      let bytes: Buffer;
      try {
        bytes = (def.requestSerialize as (req: Req) => Buffer)(request);
      } catch (err) {
        release();
        return Promise.reject(fail(failure(GrpcStatus.INTERNAL, `the request cannot be encoded: ${(err as Error).message}`)));
      }
      return new Promise<Res>((resolve, reject) => {
        try {
          client.makeUnaryRequest<Buffer, Res>(def.path, passBytes, decode, bytes, new grpc.Metadata(), { deadline }, (err, res) => {
            release();
            if (err) return reject(fail(err));
            observe();
            resolve(res!);
          });
        } catch (err) {
          // grpc-js throws at once on a channel already closed.
          release();
          reject(fail(failure(GrpcStatus.UNAVAILABLE, (err as Error).message)));
        }
      });
    };
    if (UNBOUNDED_CALLS.has(method)) return send(() => undefined);
    return this.limiter.acquire(PRIORITY_CALLS.has(method) ? 'high' : 'normal').then(send);
  }

  private rt<M extends keyof RuntimeCalls>(method: M, request: RuntimeCalls[M][0], timeoutMs?: number): Promise<RuntimeCalls[M][1]> {
    return this.call('RuntimeService', method, request, { timeoutMs });
  }

  private img<M extends keyof ImageCalls>(method: M, request: ImageCalls[M][0], timeoutMs?: number): Promise<ImageCalls[M][1]> {
    return this.call('ImageService', method, request, { timeoutMs });
  }

  version(): Promise<T.VersionResponse> {
    return this.rt('Version', { version: '0.1.0' });
  }

  status(verbose = false): Promise<T.StatusResponse> {
    return this.rt('Status', { verbose });
  }

  async runPodSandbox(config: T.PodSandboxConfigInput, runtimeHandler = ''): Promise<string> {
    const res = await this.rt('RunPodSandbox', { config, runtimeHandler });
    return res.podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string): Promise<void> {
    await this.rt('StopPodSandbox', { podSandboxId });
  }

  async removePodSandbox(podSandboxId: string): Promise<void> {
    await this.rt('RemovePodSandbox', { podSandboxId });
  }

  podSandboxStatus(podSandboxId: string, verbose = false): Promise<T.PodSandboxStatusResponse> {
    return this.rt('PodSandboxStatus', { podSandboxId, verbose });
  }

  async listPodSandbox(filter?: T.PodSandboxFilterInput): Promise<T.PodSandbox[]> {
    const res = await this.rt('ListPodSandbox', { filter });
    return res.items;
  }

  async listPodSandboxSummaries(filter?: T.PodSandboxFilterInput): Promise<PodSandboxSummary[]> {
    return this.call('RuntimeService', 'ListPodSandbox', { filter }, { decode: (buf) => this.sandboxSummaries.decode(buf) });
  }

  async createContainer(podSandboxId: string, config: T.ContainerConfigInput, sandboxConfig: T.PodSandboxConfigInput): Promise<string> {
    const res = await this.rt('CreateContainer', { podSandboxId, config, sandboxConfig });
    return res.containerId;
  }

  async startContainer(containerId: string): Promise<void> {
    await this.rt('StartContainer', { containerId });
  }

  async stopContainer(containerId: string, timeoutSeconds: number): Promise<void> {
    // The call lasts as long as the grace period; the deadline must outlast it.
    await this.rt('StopContainer', { containerId, timeout: timeoutSeconds }, this.opts.timeoutMs + timeoutSeconds * 1000);
  }

  async removeContainer(containerId: string): Promise<void> {
    await this.rt('RemoveContainer', { containerId });
  }

  async listContainers(filter?: T.ContainerFilterInput): Promise<T.Container[]> {
    const res = await this.rt('ListContainers', { filter });
    return res.containers;
  }

  async listContainerSummaries(filter?: T.ContainerFilterInput): Promise<ContainerSummary[]> {
    return this.call('RuntimeService', 'ListContainers', { filter }, { decode: (buf) => this.containerSummaries.decode(buf) });
  }

  containerStatus(containerId: string, verbose = false): Promise<T.ContainerStatusResponse> {
    return this.rt('ContainerStatus', { containerId, verbose });
  }

  async updateContainerResources(containerId: string, linux: T.LinuxContainerResourcesInput): Promise<void> {
    await this.rt('UpdateContainerResources', { containerId, linux });
  }

  execSync(containerId: string, cmd: string[], timeoutSeconds: number): Promise<T.ExecSyncResponse> {
    return this.rt('ExecSync', { containerId, cmd, timeout: timeoutSeconds }, this.opts.timeoutMs + timeoutSeconds * 1000);
  }

  exec(request: T.ExecRequestInput): Promise<T.ExecResponse> {
    return this.rt('Exec', request);
  }

  async reopenContainerLog(containerId: string): Promise<void> {
    await this.rt('ReopenContainerLog', { containerId });
  }

  /** The streaming URL to attach to a running container's stdio (one use). */
  async attach(request: T.AttachRequestInput): Promise<string> {
    return (await this.rt('Attach', request)).url;
  }

  /** The streaming URL to forward connections into a sandbox's network namespace (one use). */
  async portForward(podSandboxId: string, port: number[]): Promise<string> {
    return (await this.rt('PortForward', { podSandboxId, port })).url;
  }

  async containerStats(containerId: string): Promise<T.ContainerStats | undefined> {
    const res = await this.rt('ContainerStats', { containerId });
    return res.stats ?? undefined;
  }

  async listContainerStats(filter?: T.ContainerStatsFilterInput): Promise<T.ContainerStats[]> {
    const res = await this.rt('ListContainerStats', { filter });
    return res.stats;
  }

  getContainerEvents(handlers: ContainerEventHandlers): ContainerEventStream {
    const started = this.opts.observer ? performance.now() : 0;
    const observe = (error?: CriError) =>
      this.opts.observer?.({ method: 'GetContainerEvents', durationMs: performance.now() - started, error });
    if (!existsSync(this.runtimeSocket)) {
      const err = noRuntimeError(this.endpoint, 'GetContainerEvents');
      observe(err);
      queueMicrotask(() => handlers.onError(err));
      return { cancel: () => undefined };
    }
    const def = criServices().RuntimeService.GetContainerEvents!;
    return serverStream(
      this.runtime,
      def.path,
      (def.requestSerialize as (req: object) => Buffer)({}),
      def.responseDeserialize as (buf: Buffer) => T.ContainerEventResponse,
      {
        onMessage: (event) => handlers.onEvent(event),
        onEnd: () => handlers.onEnd?.(),
        onError: (err) => {
          const mapped = mapGrpcError(err, 'GetContainerEvents', this.endpoint, 0);
          observe(mapped);
          handlers.onError(mapped);
        },
      },
    );
  }

  async listImages(filter?: T.ImageFilterInput): Promise<T.Image[]> {
    const res = await this.img('ListImages', { filter });
    return res.images;
  }

  async imageStatus(image: string, verbose = false): Promise<T.Image | undefined> {
    const res = await this.img('ImageStatus', { image: { image }, verbose });
    return res.image && res.image.id ? res.image : undefined;
  }

  async pullImage(image: string, sandboxConfig?: T.PodSandboxConfigInput, auth?: T.AuthConfigInput): Promise<string> {
    const res = await this.img('PullImage', { image: { image }, auth, sandboxConfig }, this.opts.pullTimeoutMs);
    return res.imageRef;
  }

  async removeImage(image: string): Promise<void> {
    await this.img('RemoveImage', { image: { image } });
  }

  imageFsInfo(): Promise<T.ImageFsInfoResponse> {
    return this.img('ImageFsInfo', {});
  }
}
