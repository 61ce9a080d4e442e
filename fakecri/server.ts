import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { realClock, type Clock } from '../src/core/clock.js';
import { criServices } from '../src/core/cri/proto.js';
import type { ContainerConfig__Output } from '../src/generated/cri/runtime/v1/ContainerConfig.js';
import type { ContainerEventResponse } from '../src/generated/cri/runtime/v1/ContainerEventResponse.js';
import type { GetEventsRequest__Output } from '../src/generated/cri/runtime/v1/GetEventsRequest.js';
import type { ImageServiceHandlers } from '../src/generated/cri/runtime/v1/ImageService.js';
import type { RuntimeCondition } from '../src/generated/cri/runtime/v1/RuntimeCondition.js';
import type { RuntimeServiceHandlers } from '../src/generated/cri/runtime/v1/RuntimeService.js';
import { normalizeImageRef, toCriImage } from './images.js';
import {
  FakeCriError,
  RuntimeState,
  type ContainerRecord,
  type ExecHandler,
  type FakeContainer,
  type FakeSandbox,
  type SandboxRecord,
} from './state.js';

export interface FakeRuntimeOptions {
  clock?: Clock;
  /** Where cri.sock goes; default a fresh fs.mkdtempSync(os.tmpdir()/podctl-fake-), removed by stop(). */
  socketDir?: string;
  runtimeName?: string;
  runtimeVersion?: string;
  /** Present at start, e.g. ['docker.io/library/busybox:1.36']. */
  images?: string[];
  /** What PullImage can find; default any name containing 'busybox' or 'pause'. */
  registry?: string[];
  /**
   * Registry hosts that want credentials, e.g. {'127.0.0.1:5055': {username, password}}: a pull without them fails 401 as containerd words
   * it.
   */
  registryAuth?: Record<string, { username: string; password: string }>;
  networkReady?: boolean;
  /** Pod IPs are `${ipPrefix}x.y`; default '10.99.'. */
  ipPrefix?: string;
  /** false: GetContainerEvents answers UNIMPLEMENTED, as containerd 1.6 does. */
  implementEvents?: boolean;
  /** Sandbox lifecycle events (containerId = sandbox id), as containerd >= 1.7 sends; default true. */
  sandboxEvents?: boolean;
}

export interface StatusCondition {
  type: string;
  status: boolean;
  reason?: string;
  message?: string;
}

interface Failure {
  code: grpc.status;
  message: string;
  remaining: number;
}

/** A call held by hang(): it goes on when unhung, or fails when the fake stops. */
interface Parked {
  proceed(): void;
  abort(code: grpc.status, message: string): void;
}

type EventCall = grpc.ServerWritableStream<GetEventsRequest__Output, ContainerEventResponse>;

/** How many distinct filters a list method keeps its last answer for. */
const LIST_ANSWERS_KEPT = 8;

/**
 * Large lists are answered from per-item encodings cached on the records (exported for its unit test): protobuf concatenates
 * repeated fields, so the one-item responses joined are the full response (no re-serialisation of
 * 10,000 containers per relist).
 */
export class ListAnswers<Rec extends { wire: Buffer | undefined }> {
  private readonly kept = new Map<string, { wires: Buffer[]; bytes: Buffer }>();

  constructor(private readonly encode: (r: Rec) => Buffer) {}

  /**
   * The last answer for this filter is given again while the same records match with the same
   * encodings: joining 12 MB afresh on every relist (fresh pages, slow to fault in on a VM) made the
   * fake, not the kubelet, much of a 5,000-pod relist. The Buffer reaches the wire through
   * passThroughBuffers(); the handler type cannot say so.
   */
  answer<Res>(filter: unknown, records: Rec[]): Res {
    const key = JSON.stringify(filter ?? null);
    const wires = records.map((r) => (r.wire ??= this.encode(r)));
    const last = this.kept.get(key);
    if (last && last.wires.length === wires.length && last.wires.every((w, i) => w === wires[i])) {
      // Most recently used last, so the oldest filter is the one dropped.
      this.kept.delete(key);
      this.kept.set(key, last);
      return last.bytes as unknown as Res;
    }
    const bytes = Buffer.concat(wires);
    this.kept.delete(key);
    this.kept.set(key, { wires, bytes });
    if (this.kept.size > LIST_ANSWERS_KEPT) this.kept.delete(this.kept.keys().next().value!);
    return bytes as unknown as Res;
  }
}

/** The service definition with the given methods' response serialisers accepting ready bytes. */
function passThroughBuffers<D extends grpc.ServiceDefinition>(def: D, methods: (keyof D & string)[]): D {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...def };
  for (const m of methods) {
    const method = def[m]!;
    const serialize = method.responseSerialize;
    out[m] = { ...method, responseSerialize: (value: unknown) => (Buffer.isBuffer(value) ? value : serialize(value)) };
  }
  return out as D;
}

function toStatus(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof FakeCriError) return { code: err.code, details: err.message };
  return { code: grpc.status.INTERNAL, details: err instanceof Error ? err.message : String(err) };
}

/**
 * An in-memory CRI runtime (RuntimeService and ImageService) served over
 * gRPC on a unix socket, so that tests and benchmarks exercise the real
 * client. Semantics follow containerd's CRI plugin; see state.ts.
 */
export class FakeRuntime {
  readonly endpoint: string;
  private readonly state: RuntimeState;
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': 16 * 1024 * 1024 });
  private readonly dir: string;
  private readonly ownsDir: boolean;
  private readonly opts: FakeRuntimeOptions;
  private counts: Record<string, number> = {};
  private readonly failures = new Map<string, Failure[]>();
  private readonly latency = new Map<string, number>();
  private readonly hung = new Set<string>();
  private readonly parked = new Map<string, Set<Parked>>();
  /** Calls waiting out their latency, with how to fail them if the fake stops first. */
  private readonly latencyTimers = new Map<NodeJS.Timeout, Parked['abort']>();
  private readonly subscribers = new Set<EventCall>();
  private conditions: RuntimeCondition[];
  private readonly inRegistry: (normalized: string) => boolean;
  private stopped = false;
  private readonly encodeContainer: (c: ContainerRecord) => Buffer;
  private readonly encodeSandbox: (s: SandboxRecord) => Buffer;
  private readonly containerAnswers: ListAnswers<ContainerRecord>;
  private readonly sandboxAnswers: ListAnswers<SandboxRecord>;

  private constructor(opts: FakeRuntimeOptions) {
    this.opts = opts;
    this.ownsDir = opts.socketDir === undefined;
    this.dir = opts.socketDir ?? mkdtempSync(join(tmpdir(), 'podctl-fake-'));
    this.endpoint = `unix://${join(this.dir, 'cri.sock')}`;
    this.conditions = [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      opts.networkReady === false
        ? {
            type: 'NetworkReady',
            status: false,
            reason: 'NetworkPluginNotReady',
            message: 'Network plugin returns error: cni plugin not initialized',
          }
        : { type: 'NetworkReady', status: true, reason: '', message: '' },
    ];
    if (opts.registry) {
      const known = new Set(opts.registry.map(normalizeImageRef));
      this.inRegistry = (n) => known.has(n);
    } else {
      this.inRegistry = (n) => n.includes('busybox') || n.includes('pause');
    }
    this.state = new RuntimeState({
      clock: opts.clock ?? realClock,
      ipPrefix: opts.ipPrefix ?? '10.99.',
      images: opts.images ?? [],
      networkReady: () => this.conditions.find((c) => c.type === 'NetworkReady')?.status === true,
      sandboxEvents: opts.sandboxEvents ?? true,
    });
    // The client's own definitions, so that the server sees what the client means.
    const services = criServices();
    const runtimeService = services.RuntimeService;
    this.encodeContainer = (c) => runtimeService.ListContainers.responseSerialize({ containers: [this.state.toContainer(c)] });
    this.encodeSandbox = (sb) => runtimeService.ListPodSandbox.responseSerialize({ items: [this.state.toPodSandbox(sb)] });
    this.containerAnswers = new ListAnswers(this.encodeContainer);
    this.sandboxAnswers = new ListAnswers(this.encodeSandbox);
    this.server.addService(passThroughBuffers(runtimeService, ['ListContainers', 'ListPodSandbox']), this.runtimeHandlers());
    this.server.addService(services.ImageService, this.imageHandlers());
  }

  static async start(opts: FakeRuntimeOptions = {}): Promise<FakeRuntime> {
    const fake = new FakeRuntime(opts);
    // A socket left by a crashed run in a reused socketDir would make the bind fail.
    if (!fake.ownsDir) rmSync(join(fake.dir, 'cri.sock'), { force: true });
    await new Promise<void>((resolve, reject) => {
      fake.server.bindAsync(fake.endpoint, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
    }).catch((err: unknown) => {
      fake.removeFiles();
      throw err;
    });
    return fake;
  }

  /** Ends event streams, fails held calls, shuts the server down and removes the temp dir. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.state.clearAllTimers();
    for (const [timer, abort] of this.latencyTimers) {
      clearTimeout(timer);
      abort(grpc.status.UNAVAILABLE, 'fake runtime stopped');
    }
    this.latencyTimers.clear();
    for (const set of this.parked.values()) for (const p of set) p.abort(grpc.status.UNAVAILABLE, 'fake runtime stopped');
    this.parked.clear();
    for (const call of this.subscribers) call.end();
    this.subscribers.clear();
    this.state.eventSink = undefined;
    await new Promise<void>((resolve) => {
      // Every held call was failed above; a stuck client must still not keep stop() waiting.
      const force = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, 500);
      this.server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    this.removeFiles();
  }

  private removeFiles(): void {
    rmSync(this.ownsDir ? this.dir : join(this.dir, 'cri.sock'), { recursive: true, force: true });
  }

  // ---- fault injection and control -------------------------------------------

  /** The next `times` calls of that RPC fail with that status (queued after earlier failNext calls). */
  failNext(method: string, code: grpc.status, message?: string, times = 1): void {
    const queue = this.failures.get(method) ?? [];
    queue.push({ code, message: message ?? `fake: injected ${grpc.status[code]} for ${method}`, remaining: times });
    this.failures.set(method, queue);
  }

  /** Real-timer latency before answering; a method's own setting (even 0) wins over '*'. */
  setLatency(method: string, ms: number): void {
    if (method === '*' && ms <= 0) this.latency.delete(method);
    else this.latency.set(method, Math.max(0, ms));
  }

  /** Calls of that RPC are held until unhang() or stop(): for deadline tests. */
  hang(method: string): void {
    this.hung.add(method);
  }

  unhang(method: string): void {
    this.hung.delete(method);
    const held = this.parked.get(method);
    this.parked.delete(method);
    if (held) for (const p of held) p.proceed();
  }

  exitContainer(containerId: string, exitCode: number, opts?: { reason?: string; message?: string }): void {
    this.state.exitContainer(containerId, exitCode, opts);
  }

  setWritableLayerUsage(containerId: string, bytes: number): void {
    this.state.setWritableLayerUsage(containerId, bytes);
  }

  relabelExit(containerId: string, reason: string): void {
    this.state.relabelExit(containerId, reason);
  }

  /** Replaces the default (commands like `sh -c 'exit 3'` or `true` exit at once); return undefined to keep running. */
  setContainerBehaviour(match: (config: ContainerConfig__Output) => { exitCode: number; afterMs?: number } | undefined): void {
    this.state.behaviour = match;
  }

  /**
   * Decides what ExecSync answers (probes, hooks): return undefined to fall
   * back to the commands the fake understands.
   */
  setExecHandler(handler: ExecHandler | undefined): void {
    this.state.execHandler = handler;
  }

  setStatusConditions(conds: StatusCondition[]): void {
    this.conditions = conds.map((c) => ({ type: c.type, status: c.status, reason: c.reason ?? '', message: c.message ?? '' }));
  }

  addImage(ref: string): void {
    this.state.images.add(ref);
  }

  removeImageRef(ref: string): void {
    this.state.images.removeRef(ref);
  }

  // ---- inspection ----------------------------------------------------------------

  calls(): Record<string, number> {
    return { ...this.counts };
  }

  resetCalls(): void {
    this.counts = {};
  }

  sandboxes(): readonly FakeSandbox[] {
    return this.state.sandboxes();
  }

  containers(): readonly FakeContainer[] {
    return this.state.containers();
  }

  /** Running pods in bulk for scale tests: no events, no timers, shared immutable pieces. */
  seed(n: { pods: number; containersPerPod: number; labels?: (i: number) => Record<string, string> }): void {
    this.state.seed(n);
  }

  // ---- gRPC plumbing -----------------------------------------------------------------

  private count(method: string): void {
    this.counts[method] = (this.counts[method] ?? 0) + 1;
  }

  private takeFailure(method: string): Failure | undefined {
    const queue = this.failures.get(method);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    if (--head.remaining <= 0) queue.shift();
    return head;
  }

  /** Latency, then hang, then the caller's continuation; the fast path stays synchronous. */
  private gate(
    method: string,
    call: { cancelled: boolean; on(event: 'cancelled', fn: () => void): unknown },
    proceed: () => void,
    abort: Parked['abort'],
  ): void {
    if (this.stopped) {
      abort(grpc.status.UNAVAILABLE, 'fake runtime stopped');
      return;
    }
    const afterLatency = () => {
      if (call.cancelled) return;
      if (!this.hung.has(method)) {
        proceed();
        return;
      }
      let set = this.parked.get(method);
      if (!set) this.parked.set(method, (set = new Set()));
      const parked: Parked = { proceed, abort };
      set.add(parked);
      call.on('cancelled', () => this.parked.get(method)?.delete(parked));
    };
    const ms = this.latency.get(method) ?? this.latency.get('*') ?? 0;
    if (ms <= 0) {
      afterLatency();
      return;
    }
    const timer = setTimeout(() => {
      this.latencyTimers.delete(timer);
      afterLatency();
    }, ms);
    this.latencyTimers.set(timer, abort);
  }

  private unary<Req, Res>(method: string, fn: (req: Req) => Res): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      this.count(method);
      this.gate(
        method,
        call,
        () => {
          if (call.cancelled) return;
          const failure = this.takeFailure(method);
          if (failure) {
            callback({ code: failure.code, details: failure.message });
            return;
          }
          let res: Res;
          try {
            res = fn(call.request);
          } catch (err) {
            callback(toStatus(err));
            return;
          }
          callback(null, res);
        },
        (code, details) => callback({ code, details }),
      );
    };
  }

  private unimplemented<Req, Res>(method: string): grpc.handleUnaryCall<Req, Res> {
    return this.unary<Req, Res>(method, () => {
      throw new FakeCriError(grpc.status.UNIMPLEMENTED, `method ${method} not implemented`);
    });
  }

  private getContainerEvents(call: EventCall): void {
    const method = 'GetContainerEvents';
    this.count(method);
    const fail = (code: grpc.status, details: string) => call.emit('error', { code, details });
    if (this.opts.implementEvents === false) {
      fail(grpc.status.UNIMPLEMENTED, `method ${method} not implemented`);
      return;
    }
    this.gate(
      method,
      call,
      () => {
        const failure = this.takeFailure(method);
        if (failure) {
          fail(failure.code, failure.message);
          return;
        }
        if (this.stopped) {
          call.end();
          return;
        }
        this.subscribers.add(call);
        this.state.eventSink = (event) => {
          for (const sub of this.subscribers) if (!sub.cancelled) sub.write(event);
        };
        call.on('cancelled', () => {
          this.subscribers.delete(call);
          if (this.subscribers.size === 0) this.state.eventSink = undefined;
        });
      },
      fail,
    );
  }

  private runtimeHandlers(): RuntimeServiceHandlers {
    const s = this.state;
    return {
      Version: this.unary('Version', () => ({
        version: '0.1.0',
        runtimeName: this.opts.runtimeName ?? 'fake',
        runtimeVersion: this.opts.runtimeVersion ?? '0.0.0-fake',
        runtimeApiVersion: 'v1',
      })),
      // Verbose, containerd names its sandbox image in info.config, as here.
      Status: this.unary('Status', (req) => ({
        status: { conditions: this.conditions },
        info: (req.verbose ? { config: JSON.stringify({ sandboxImage: 'registry.k8s.io/pause:3.6' }) } : {}) as Record<string, string>,
      })),
      UpdateRuntimeConfig: this.unary('UpdateRuntimeConfig', () => ({})),
      RunPodSandbox: this.unary('RunPodSandbox', (req) => ({ podSandboxId: s.runPodSandbox(req) })),
      StopPodSandbox: this.unary('StopPodSandbox', (req) => {
        s.stopPodSandbox(req.podSandboxId);
        return {};
      }),
      RemovePodSandbox: this.unary('RemovePodSandbox', (req) => {
        s.removePodSandbox(req.podSandboxId);
        return {};
      }),
      PodSandboxStatus: this.unary('PodSandboxStatus', (req) => {
        const { status, info } = s.podSandboxStatus(req.podSandboxId, req.verbose);
        return { status, info, containersStatuses: [], timestamp: 0 };
      }),
      ListPodSandbox: this.unary('ListPodSandbox', (req) => this.sandboxAnswers.answer(req.filter, s.selectSandboxes(req.filter))),
      CreateContainer: this.unary('CreateContainer', (req) => ({ containerId: s.createContainer(req) })),
      StartContainer: this.unary('StartContainer', (req) => {
        s.startContainer(req.containerId);
        return {};
      }),
      StopContainer: this.unary('StopContainer', (req) => {
        s.stopContainer(req.containerId, req.timeout);
        return {};
      }),
      RemoveContainer: this.unary('RemoveContainer', (req) => {
        s.removeContainer(req.containerId);
        return {};
      }),
      ListContainers: this.unary('ListContainers', (req) => this.containerAnswers.answer(req.filter, s.selectContainers(req.filter))),
      ContainerStatus: this.unary('ContainerStatus', (req) => s.containerStatus(req.containerId, req.verbose)),
      UpdateContainerResources: this.unary('UpdateContainerResources', (req) => {
        s.updateContainerResources(req.containerId, req.linux);
        return {};
      }),
      ReopenContainerLog: this.unary('ReopenContainerLog', (req) => {
        if (s.requireContainer(req.containerId).state !== 'CONTAINER_RUNNING') {
          throw new FakeCriError(grpc.status.FAILED_PRECONDITION, 'container is not running');
        }
        return {};
      }),
      ExecSync: this.unary('ExecSync', (req) => s.execSync(req.containerId, req.cmd)),
      Exec: this.unimplemented('Exec'),
      Attach: this.unimplemented('Attach'),
      PortForward: this.unimplemented('PortForward'),
      ContainerStats: this.unary('ContainerStats', (req) => ({ stats: s.containerStats(req.containerId) })),
      ListContainerStats: this.unary('ListContainerStats', (req) => ({ stats: s.listContainerStats(req.filter) })),
      PodSandboxStats: this.unimplemented('PodSandboxStats'),
      ListPodSandboxStats: this.unimplemented('ListPodSandboxStats'),
      GetContainerEvents: (call) => this.getContainerEvents(call),
    };
  }

  private imageHandlers(): ImageServiceHandlers {
    const images = this.state.images;
    return {
      ListImages: this.unary('ListImages', (req) => {
        const wanted = req.filter?.image?.image;
        if (wanted) {
          const image = images.resolve(wanted);
          return { images: image ? [toCriImage(image)] : [] };
        }
        return { images: images.list().map(toCriImage) };
      }),
      ImageStatus: this.unary('ImageStatus', (req) => {
        const image = images.resolve(req.image?.image ?? '');
        const info: Record<string, string> = image && req.verbose ? { info: JSON.stringify({ chainID: image.id, size: image.size }) } : {};
        return { image: image ? toCriImage(image) : null, info };
      }),
      PullImage: this.unary('PullImage', (req) => {
        const ref = req.image?.image ?? '';
        if (!ref) throw new FakeCriError(grpc.status.INVALID_ARGUMENT, 'failed to parse image reference "": invalid reference format');
        const normalized = normalizeImageRef(ref);
        const host = normalized.split('/')[0]!;
        const wanted = this.opts.registryAuth?.[host];
        if (wanted) {
          const given = req.auth?.auth
            ? Buffer.from(req.auth.auth, 'base64').toString('utf8')
            : `${req.auth?.username ?? ''}:${req.auth?.password ?? ''}`;
          if (given !== `${wanted.username}:${wanted.password}`) {
            const tag = normalized.slice(normalized.lastIndexOf(':') + 1);
            throw new FakeCriError(
              grpc.status.UNKNOWN,
              `failed to pull and unpack image "${normalized}": failed to resolve reference "${normalized}": ` +
                `pulling from host ${host} failed with status code [manifests ${tag}]: 401 Unauthorized`,
            );
          }
        }
        // A pull always asks the registry, even for an image that is present, as containerd does.
        if (!this.inRegistry(normalized)) {
          throw new FakeCriError(
            grpc.status.NOT_FOUND,
            `failed to pull and unpack image "${normalized}": failed to resolve reference "${normalized}": ${normalized}: not found`,
          );
        }
        return { imageRef: images.add(normalized).id };
      }),
      RemoveImage: this.unary('RemoveImage', (req) => {
        const image = images.resolve(req.image?.image ?? '');
        if (image) images.remove(image.id);
        return {};
      }),
      ImageFsInfo: this.unary('ImageFsInfo', () => {
        const list = images.list();
        return {
          imageFilesystems: [
            {
              timestamp: (this.opts.clock ?? realClock).now() * 1e6,
              fsId: { mountpoint: join(this.dir, 'images') },
              usedBytes: { value: images.totalSize() },
              inodesUsed: { value: list.length * 100 },
            },
          ],
          containerFilesystems: [],
        };
      }),
    };
  }
}
