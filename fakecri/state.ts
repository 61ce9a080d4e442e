import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { status as Code } from '@grpc/grpc-js';
import type { Clock, TimerHandle } from '../src/core/clock.js';
import type { Container } from '../src/generated/cri/runtime/v1/Container.js';
import type { ContainerConfig__Output } from '../src/generated/cri/runtime/v1/ContainerConfig.js';
import type { LinuxContainerResources__Output } from '../src/generated/cri/runtime/v1/LinuxContainerResources.js';
import type { ContainerEventResponse } from '../src/generated/cri/runtime/v1/ContainerEventResponse.js';
import type { ContainerEventType } from '../src/generated/cri/runtime/v1/ContainerEventType.js';
import type { ContainerFilter__Output } from '../src/generated/cri/runtime/v1/ContainerFilter.js';
import type { ContainerStats } from '../src/generated/cri/runtime/v1/ContainerStats.js';
import type { ContainerStatsFilter__Output } from '../src/generated/cri/runtime/v1/ContainerStatsFilter.js';
import type { ContainerStatus } from '../src/generated/cri/runtime/v1/ContainerStatus.js';
import type { ContainerState__Output } from '../src/generated/cri/runtime/v1/ContainerState.js';
import type { CreateContainerRequest__Output } from '../src/generated/cri/runtime/v1/CreateContainerRequest.js';
import type { ExecSyncResponse } from '../src/generated/cri/runtime/v1/ExecSyncResponse.js';
import type { ImageSpec } from '../src/generated/cri/runtime/v1/ImageSpec.js';
import type { Mount } from '../src/generated/cri/runtime/v1/Mount.js';
import type { NamespaceOption__Output } from '../src/generated/cri/runtime/v1/NamespaceOption.js';
import type { PodSandbox } from '../src/generated/cri/runtime/v1/PodSandbox.js';
import type { PodSandboxFilter__Output } from '../src/generated/cri/runtime/v1/PodSandboxFilter.js';
import type { PodSandboxState__Output } from '../src/generated/cri/runtime/v1/PodSandboxState.js';
import type { PodSandboxStatus } from '../src/generated/cri/runtime/v1/PodSandboxStatus.js';
import type { RunPodSandboxRequest__Output } from '../src/generated/cri/runtime/v1/RunPodSandboxRequest.js';
import { ImageStore, normalizeImageRef } from './images.js';

/** A failure the fake answers with: a gRPC code and containerd's wording. */
export class FakeCriError extends Error {
  constructor(
    readonly code: Code,
    message: string,
  ) {
    super(message);
    this.name = 'FakeCriError';
  }
}

type Labels = Readonly<Record<string, string>>;

export interface FakeSandbox {
  readonly id: string;
  readonly metadata: { readonly name: string; readonly uid: string; readonly namespace: string; readonly attempt: number };
  readonly state: PodSandboxState__Output;
  /** Nanoseconds. */
  readonly createdAt: number;
  /** '' for host-network sandboxes and once stopped (containerd closes the netns). */
  readonly ip: string;
  readonly labels: Labels;
  readonly annotations: Labels;
  readonly runtimeHandler: string;
  readonly logDirectory: string;
  readonly namespaceOptions: Readonly<NamespaceOption__Output>;
  readonly containers: readonly FakeContainer[];
}

export interface FakeContainer {
  readonly id: string;
  readonly podSandboxId: string;
  readonly metadata: { readonly name: string; readonly attempt: number };
  /** The image spec as requested (often an image id, as the kubelet sends it). */
  readonly image: Readonly<ImageSpec>;
  /** The resolved image's id. */
  readonly imageId: string;
  readonly state: ContainerState__Output;
  readonly createdAt: number;
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly exitCode: number;
  /** As set by exitContainer; ContainerStatus derives 'Completed'/'Error' when empty, as containerd does. */
  readonly reason: string;
  readonly message: string;
  readonly labels: Labels;
  readonly annotations: Labels;
  /** Full path (sandbox log directory + config.logPath), or ''. */
  readonly logPath: string;
  readonly mounts: readonly Mount[];
  /** undefined for seeded containers. */
  readonly config: ContainerConfig__Output | undefined;
}

// Mutable records behind the readonly views; one class each keeps objects small and monomorphic.
export class SandboxRecord implements FakeSandbox {
  state: PodSandboxState__Output = 'SANDBOX_READY';
  readonly containers: ContainerRecord[] = [];
  /** This sandbox's PodSandbox list entry, encoded once; cleared whenever the entry changes. */
  wire: Buffer | undefined = undefined;
  constructor(
    readonly id: string,
    readonly metadata: FakeSandbox['metadata'],
    readonly reservedName: string,
    readonly createdAt: number,
    public ip: string,
    readonly labels: Labels,
    readonly annotations: Labels,
    readonly runtimeHandler: string,
    readonly logDirectory: string,
    readonly namespaceOptions: Readonly<NamespaceOption__Output>,
  ) {}
}

export class ContainerRecord implements FakeContainer {
  writableBytes?: number;
  /** What UpdateContainerResources set last; until then, the resources it was created with. */
  resources?: LinuxContainerResources__Output;
  state: ContainerState__Output = 'CONTAINER_CREATED';
  /** This container's Container list entry, encoded once; cleared whenever the entry changes. */
  wire: Buffer | undefined = undefined;
  startedAt = 0;
  finishedAt = 0;
  exitCode = 0;
  reason = '';
  message = '';
  constructor(
    readonly id: string,
    readonly sandbox: SandboxRecord,
    readonly metadata: FakeContainer['metadata'],
    readonly reservedName: string,
    readonly image: Readonly<ImageSpec>,
    readonly imageId: string,
    readonly createdAt: number,
    readonly labels: Labels,
    readonly annotations: Labels,
    readonly logPath: string,
    readonly mounts: readonly Mount[],
    readonly config: ContainerConfig__Output | undefined,
    /** The directory logPath was joined to; the fake writes logs only when it exists. */
    readonly logDirectory: string,
  ) {}
  get podSandboxId(): string {
    return this.sandbox.id;
  }
}

/** A test's say over ExecSync: the container's name and the command, or undefined for the default. */
export type ExecHandler = (exec: {
  containerId: string;
  containerName: string;
  cmd: readonly string[];
}) => { exitCode: number; stdout?: string } | undefined;

export type ContainerBehaviour = (config: ContainerConfig__Output) => { exitCode: number; afterMs?: number } | undefined;

/**
 * The few commands the fake understands, shared by ExecSync and by the
 * default behaviour (a container whose command obviously ends, ends).
 */
export function interpretCommand(argv: readonly string[]): { exitCode: number; stdout: string } | undefined {
  if (argv.length === 0) return undefined;
  const prog = argv[0]!.slice(argv[0]!.lastIndexOf('/') + 1);
  if (prog === 'true') return { exitCode: 0, stdout: '' };
  if (prog === 'false') return { exitCode: 1, stdout: '' };
  if (prog === 'echo') return { exitCode: 0, stdout: `${argv.slice(1).join(' ')}\n` };
  if (prog === 'sh' && argv[1] === '-c' && argv.length >= 3) {
    const script = argv[2]!.trim();
    const exit = /^exit\s+(\d+)$/.exec(script);
    if (exit) return { exitCode: Number(exit[1]) & 0xff, stdout: '' };
    if (/[;&|<>`$()]/.test(script)) return undefined;
    return interpretCommand(script.split(/\s+/));
  }
  return undefined;
}

/** Default: containers whose command is one the fake understands exit with its code right away. */
export const defaultBehaviour: ContainerBehaviour = (config) => {
  const result = interpretCommand([...config.command, ...config.args]);
  return result ? { exitCode: result.exitCode } : undefined;
};

const EMPTY: Labels = Object.freeze({});
const NO_MOUNTS: readonly Mount[] = Object.freeze([]);
/** What a runtime reports when the config names no namespace options (every enum at its zero, POD). */
const DEFAULT_NAMESPACES: Readonly<NamespaceOption__Output> = Object.freeze({ network: 'POD', pid: 'POD', ipc: 'POD', targetId: '' });
/** The kubelet's usual choice, for seeded pods. */
const SEED_NAMESPACES: Readonly<NamespaceOption__Output> = Object.freeze({ network: 'POD', pid: 'CONTAINER', ipc: 'POD', targetId: '' });

// Random IDs come from one pooled buffer: seeding 15,000 objects must not cost 15,000 syscalls.
let idPool = Buffer.alloc(0);
let idOffset = 0;
export function newId(): string {
  if (idOffset + 32 > idPool.length) {
    idPool = randomBytes(32 * 512);
    idOffset = 0;
  }
  const id = idPool.toString('hex', idOffset, idOffset + 32);
  idOffset += 32;
  return id;
}

/** Go's time.RFC3339Nano in UTC, as containerd stamps CRI log lines. */
export function rfc3339Nano(ms: number): string {
  const iso = new Date(ms).toISOString();
  const frac = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}

/** The label every per-pod list of the kubelet selects on. */
const POD_UID_KEY = 'io.kubernetes.pod.uid';

/**
 * Records by their pod UID label, in creation order: containerd answers a
 * per-pod list in microseconds whatever the number of pods, and a scan per
 * call made the fake quadratic at thousands of pods.
 */
class PodUidIndex<R extends { readonly labels: Labels }> {
  private readonly byUid = new Map<string, Set<R>>();

  add(r: R): void {
    const uid = r.labels[POD_UID_KEY];
    if (uid === undefined) return;
    let set = this.byUid.get(uid);
    if (!set) this.byUid.set(uid, (set = new Set()));
    set.add(r);
  }

  delete(r: R): void {
    const uid = r.labels[POD_UID_KEY];
    const set = uid === undefined ? undefined : this.byUid.get(uid);
    if (!set) return;
    set.delete(r);
    if (set.size === 0) this.byUid.delete(uid!);
  }

  get(uid: string): Iterable<R> {
    return this.byUid.get(uid) ?? [];
  }
}

function selectorMatches(labels: Labels, selector: Labels, keys: readonly string[]): boolean {
  for (const k of keys) if (labels[k] !== selector[k]) return false;
  return true;
}

export interface RuntimeStateOptions {
  clock: Clock;
  ipPrefix: string;
  images: string[];
  /** Whether RunPodSandbox can set up a pod network (NetworkReady). */
  networkReady: () => boolean;
  /** Whether sandboxes emit events too (containerd >= 1.7 sends them with containerId = sandbox id). */
  sandboxEvents: boolean;
}

/** The runtime's in-memory state and every CRI semantic; no gRPC here. */
export class RuntimeState {
  readonly images = new ImageStore();
  private readonly sandboxMap = new Map<string, SandboxRecord>();
  private readonly containerMap = new Map<string, ContainerRecord>();
  private readonly sandboxNames = new Map<string, string>();
  private readonly containerNames = new Map<string, string>();
  private readonly sandboxesByUid = new PodUidIndex<SandboxRecord>();
  private readonly containersByUid = new PodUidIndex<ContainerRecord>();
  private readonly exitTimers = new Map<string, TimerHandle>();
  private ipCounter = 1;
  private seedCounter = 0;
  behaviour: ContainerBehaviour = defaultBehaviour;
  execHandler: ExecHandler | undefined;
  /** Set while someone listens: events are only built then. */
  eventSink: ((event: ContainerEventResponse) => void) | undefined;

  constructor(private readonly opts: RuntimeStateOptions) {
    for (const ref of opts.images) this.images.add(ref);
  }

  private nowNs(): number {
    return this.opts.clock.now() * 1e6;
  }

  private nextIp(): string {
    const n = this.ipCounter++;
    return `${this.opts.ipPrefix}${Math.floor(n / 254) % 256}.${(n % 254) + 1}`;
  }

  sandboxes(): FakeSandbox[] {
    return [...this.sandboxMap.values()];
  }

  containers(): FakeContainer[] {
    return [...this.containerMap.values()];
  }

  // ---- sandboxes -----------------------------------------------------------

  runPodSandbox(req: RunPodSandboxRequest__Output): string {
    const config = req.config;
    const md = config?.metadata;
    if (!config || !md) throw new FakeCriError(Code.INVALID_ARGUMENT, 'sandbox config must include metadata');
    if (!md.name || !md.uid || !md.namespace) {
      throw new FakeCriError(Code.INVALID_ARGUMENT, 'sandbox config metadata must include name, uid and namespace');
    }
    const id = newId();
    const name = `${md.name}_${md.namespace}_${md.uid}_${md.attempt}`;
    const holder = this.sandboxNames.get(name);
    if (holder) {
      // containerd: the name stays reserved until the sandbox is removed.
      throw new FakeCriError(Code.ALREADY_EXISTS, `failed to reserve sandbox name "${name}": name "${name}" is reserved for "${holder}"`);
    }
    const ns = config.linux?.securityContext?.namespaceOptions;
    const nsOptions = ns ? { network: ns.network, pid: ns.pid, ipc: ns.ipc, targetId: ns.targetId } : DEFAULT_NAMESPACES;
    const hostNetwork = nsOptions.network === 'NODE';
    if (!hostNetwork && !this.opts.networkReady()) {
      throw new FakeCriError(Code.UNKNOWN, `failed to setup network for sandbox "${id}": cni plugin not initialized`);
    }
    const metadata = { name: md.name, uid: md.uid, namespace: md.namespace, attempt: md.attempt };
    const s = new SandboxRecord(
      id,
      metadata,
      name,
      this.nowNs(),
      hostNetwork ? '' : this.nextIp(),
      config.labels,
      config.annotations,
      req.runtimeHandler,
      config.logDirectory,
      nsOptions,
    );
    this.sandboxNames.set(name, id);
    this.sandboxMap.set(id, s);
    this.sandboxesByUid.add(s);
    if (this.opts.sandboxEvents) {
      this.emit('CONTAINER_CREATED_EVENT', id, s);
      this.emit('CONTAINER_STARTED_EVENT', id, s);
    }
    return id;
  }

  private getSandbox(id: string, what: (id: string) => string): SandboxRecord {
    const s = this.sandboxMap.get(id);
    if (!s) throw new FakeCriError(Code.NOT_FOUND, what(id));
    return s;
  }

  stopPodSandbox(id: string): void {
    const s = this.getSandbox(id, (i) => `an error occurred when try to find sandbox "${i}": not found`);
    // containerd stops the containers with no grace (SIGKILL), then the sandbox.
    for (const c of s.containers) if (c.state === 'CONTAINER_RUNNING') this.exit(c, 137, '', '');
    if (s.state === 'SANDBOX_READY') {
      s.state = 'SANDBOX_NOTREADY';
      s.wire = undefined;
      s.ip = '';
      if (this.opts.sandboxEvents) this.emit('CONTAINER_STOPPED_EVENT', id, s);
    }
  }

  removePodSandbox(id: string): void {
    const s = this.sandboxMap.get(id);
    if (!s) return; // containerd: removing what is not there succeeds
    if (s.state === 'SANDBOX_READY') this.stopPodSandbox(id);
    for (const c of [...s.containers]) this.removeContainer(c.id);
    this.sandboxMap.delete(id);
    this.sandboxesByUid.delete(s);
    this.sandboxNames.delete(s.reservedName);
    if (this.opts.sandboxEvents) this.emit('CONTAINER_DELETED_EVENT', id, undefined);
  }

  podSandboxStatus(id: string, verbose: boolean): { status: PodSandboxStatus; info: Record<string, string> } {
    const s = this.getSandbox(id, () => 'an error occurred when try to find sandbox: not found');
    const info: Record<string, string> = verbose
      ? {
          info: JSON.stringify({
            pid: s.state === 'SANDBOX_READY' ? 4242 : 0,
            processStatus: s.state === 'SANDBOX_READY' ? 'running' : 'stopped',
            netNamespaceClosed: s.state !== 'SANDBOX_READY',
            runtimeHandler: s.runtimeHandler,
          }),
        }
      : {};
    return { status: this.toSandboxStatus(s), info };
  }

  private toSandboxStatus(s: SandboxRecord): PodSandboxStatus {
    return {
      id: s.id,
      metadata: s.metadata,
      state: s.state,
      createdAt: s.createdAt,
      network: { ip: s.ip, additionalIps: [] },
      linux: { namespaces: { options: s.namespaceOptions } },
      labels: s.labels,
      annotations: s.annotations,
      runtimeHandler: s.runtimeHandler,
    };
  }

  /** ListPodSandbox's filter (id, state, every label of the selector), in creation order. */
  selectSandboxes(filter: PodSandboxFilter__Output | null): SandboxRecord[] {
    const state = filter?.state ? filter.state.state : undefined;
    const selector = filter?.labelSelector ?? EMPTY;
    const keys = Object.keys(selector);
    const out: SandboxRecord[] = [];
    const consider = (s: SandboxRecord) => {
      if (state !== undefined && s.state !== state) return;
      if (keys.length > 0 && !selectorMatches(s.labels, selector, keys)) return;
      out.push(s);
    };
    if (filter?.id) {
      const s = this.sandboxMap.get(filter.id);
      if (s) consider(s);
    } else if (selector[POD_UID_KEY] !== undefined) {
      for (const s of this.sandboxesByUid.get(selector[POD_UID_KEY])) consider(s);
    } else {
      for (const s of this.sandboxMap.values()) consider(s);
    }
    return out;
  }

  toPodSandbox(s: SandboxRecord): PodSandbox {
    return {
      id: s.id,
      metadata: s.metadata,
      state: s.state,
      createdAt: s.createdAt,
      labels: s.labels,
      annotations: s.annotations,
      runtimeHandler: s.runtimeHandler,
    };
  }

  // ---- containers ----------------------------------------------------------

  createContainer(req: CreateContainerRequest__Output): string {
    const s = this.getSandbox(req.podSandboxId, (i) => `failed to find sandbox id "${i}": not found`);
    if (s.state !== 'SANDBOX_READY') throw new FakeCriError(Code.FAILED_PRECONDITION, `sandbox container "${s.id}" is not running`);
    const config = req.config;
    const md = config?.metadata;
    if (!config || !md) throw new FakeCriError(Code.INVALID_ARGUMENT, 'container config must include metadata');
    const name = `${md.name}_${s.metadata.name}_${s.metadata.namespace}_${s.metadata.uid}_${md.attempt}`;
    const holder = this.containerNames.get(name);
    if (holder) {
      throw new FakeCriError(Code.ALREADY_EXISTS, `failed to reserve container name "${name}": name "${name}" is reserved for "${holder}"`);
    }
    const ref = config.image?.image ?? '';
    const image = this.images.resolve(ref);
    if (!image) throw new FakeCriError(Code.NOT_FOUND, `failed to resolve image "${ref}": not found`);
    // containerd joins the log directory of the request's sandbox config with the container's log path.
    const logDirectory = req.sandboxConfig?.logDirectory || s.logDirectory;
    const logPath = logDirectory && config.logPath ? join(logDirectory, config.logPath) : '';
    const id = newId();
    const c = new ContainerRecord(
      id,
      s,
      { name: md.name, attempt: md.attempt },
      name,
      config.image ?? { image: ref },
      image.id,
      this.nowNs(),
      config.labels,
      config.annotations,
      logPath,
      config.mounts.length > 0 ? config.mounts : NO_MOUNTS,
      config,
      logPath ? logDirectory : '',
    );
    this.containerNames.set(name, id);
    this.containerMap.set(id, c);
    this.containersByUid.add(c);
    s.containers.push(c);
    this.emit('CONTAINER_CREATED_EVENT', id, s);
    return id;
  }

  private getContainer(
    id: string,
    what: (id: string) => string = (i) => `an error occurred when try to find container "${i}": not found`,
  ): ContainerRecord {
    const c = this.containerMap.get(id);
    if (!c) throw new FakeCriError(Code.NOT_FOUND, what(id));
    return c;
  }

  startContainer(id: string): void {
    const c = this.getContainer(id);
    if (c.state !== 'CONTAINER_CREATED') {
      throw new FakeCriError(
        Code.FAILED_PRECONDITION,
        `failed to set starting state for container "${id}": container is in ${c.state} state`,
      );
    }
    if (c.sandbox.state !== 'SANDBOX_READY') {
      throw new FakeCriError(Code.FAILED_PRECONDITION, `sandbox container "${c.sandbox.id}" is not running`);
    }
    c.state = 'CONTAINER_RUNNING';
    c.wire = undefined;
    c.startedAt = this.nowNs();
    this.writeStartLog(c);
    this.emit('CONTAINER_STARTED_EVENT', id, c.sandbox);
    const outcome = c.config ? this.behaviour(c.config) : undefined;
    if (!outcome) return;
    if (!outcome.afterMs || outcome.afterMs <= 0) {
      this.exit(c, outcome.exitCode, '', '');
      return;
    }
    const timer = this.opts.clock.setTimeout(() => {
      this.exitTimers.delete(id);
      if (this.containerMap.get(id) === c && c.state === 'CONTAINER_RUNNING') this.exit(c, outcome.exitCode, '', '');
    }, outcome.afterMs);
    this.exitTimers.set(id, timer);
  }

  /** Only when the log directory already exists: the fake never creates one on its own. */
  private writeStartLog(c: ContainerRecord): void {
    if (!c.logPath) return;
    try {
      if (!statSync(c.logDirectory).isDirectory()) return;
      mkdirSync(dirname(c.logPath), { recursive: true });
      appendFileSync(c.logPath, `${rfc3339Nano(this.opts.clock.now())} stdout F started\n`);
    } catch {
      // Logs are a convenience of the fake: a missing directory is not an error.
    }
  }

  private exit(c: ContainerRecord, exitCode: number, reason: string, message: string): void {
    c.state = 'CONTAINER_EXITED';
    c.wire = undefined;
    c.finishedAt = this.nowNs();
    c.exitCode = exitCode;
    c.reason = reason;
    c.message = message;
    this.clearExitTimer(c.id);
    this.emit('CONTAINER_STOPPED_EVENT', c.id, c.sandbox);
  }

  private clearExitTimer(id: string): void {
    const timer = this.exitTimers.get(id);
    if (timer) {
      this.opts.clock.clearTimeout(timer);
      this.exitTimers.delete(id);
    }
  }

  clearAllTimers(): void {
    for (const timer of this.exitTimers.values()) this.opts.clock.clearTimeout(timer);
    this.exitTimers.clear();
  }

  /** The test control: a running container exits now. */
  exitContainer(id: string, exitCode: number, opts: { reason?: string; message?: string } = {}): void {
    const c = this.containerMap.get(id);
    if (!c) throw new Error(`fake runtime: no container ${id}`);
    if (c.state !== 'CONTAINER_RUNNING') throw new Error(`fake runtime: container ${id} is ${c.state}, not running`);
    this.exit(c, exitCode, opts.reason ?? '', opts.message ?? '');
  }

  /** An exited container's reason set afterwards, as containerd's CRI records an OOM kill from a TaskOOM handled after the exit. */
  relabelExit(id: string, reason: string): void {
    const c = this.getContainer(id);
    if (c.state !== 'CONTAINER_EXITED') throw new Error(`fake runtime: container ${id} is ${c.state}, not exited`);
    c.reason = reason;
    c.wire = undefined;
  }

  /** What ContainerStats says the container's writable layer uses (4 KiB until set). */
  setWritableLayerUsage(id: string, bytes: number): void {
    this.getContainer(id).writableBytes = bytes;
  }

  stopContainer(id: string, timeoutSeconds: number): void {
    const c = this.getContainer(id);
    // SIGTERM honoured within the grace period, else SIGKILL. Stopping a created or exited container is a no-op.
    if (c.state === 'CONTAINER_RUNNING') this.exit(c, timeoutSeconds > 0 ? 143 : 137, '', '');
  }

  removeContainer(id: string): void {
    const c = this.containerMap.get(id);
    if (!c) return;
    // containerd forcibly stops a running container it is asked to remove.
    if (c.state === 'CONTAINER_RUNNING') this.exit(c, 137, '', '');
    this.clearExitTimer(id);
    this.containerMap.delete(id);
    this.containersByUid.delete(c);
    this.containerNames.delete(c.reservedName);
    const list = c.sandbox.containers;
    const at = list.indexOf(c);
    if (at >= 0) list.splice(at, 1);
    this.emit('CONTAINER_DELETED_EVENT', id, c.sandbox);
  }

  containerStatus(id: string, verbose: boolean): { status: ContainerStatus; info: Record<string, string> } {
    const c = this.getContainer(id);
    const info: Record<string, string> = verbose
      ? {
          info: JSON.stringify({
            sandboxID: c.sandbox.id,
            pid: c.state === 'CONTAINER_RUNNING' ? 4343 : 0,
            removing: false,
            snapshotter: 'fake',
            runtimeType: 'io.containerd.runc.v2',
            config: c.config ?? null,
          }),
        }
      : {};
    return { status: this.toContainerStatus(c), info };
  }

  private toContainerStatus(c: ContainerRecord): ContainerStatus {
    // containerd reports the image by its first tag and its repo digest when the image is still there.
    const image = this.images.resolve(c.imageId);
    const exited = c.state === 'CONTAINER_EXITED';
    return {
      id: c.id,
      metadata: c.metadata,
      state: c.state,
      createdAt: c.createdAt,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      exitCode: c.exitCode,
      image: image && image.repoTags.length > 0 ? { image: image.repoTags[0] } : c.image,
      imageRef: image?.repoDigests[0] ?? c.imageId,
      reason: exited ? c.reason || (c.exitCode === 0 ? 'Completed' : 'Error') : '',
      message: c.message,
      labels: c.labels,
      annotations: c.annotations,
      mounts: c.mounts as Mount[],
      logPath: c.logPath,
      imageId: c.imageId,
      resources:
        c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_CREATED'
          ? { linux: c.resources ?? c.config?.linux?.resources ?? null }
          : null,
    };
  }

  /** UpdateContainerResources, as containerd: a running or created container only. */
  updateContainerResources(id: string, linux: LinuxContainerResources__Output | null): void {
    const c = this.getContainer(id);
    if (c.state !== 'CONTAINER_RUNNING' && c.state !== 'CONTAINER_CREATED')
      throw new FakeCriError(Code.UNKNOWN, `container "${id}" is in ${c.state} state`);
    if (linux) c.resources = linux;
  }

  /** ListContainers' filter (id, state, sandbox, every label of the selector), in creation order. */
  selectContainers(filter: ContainerFilter__Output | null): ContainerRecord[] {
    const state = filter?.state ? filter.state.state : undefined;
    const selector = filter?.labelSelector ?? EMPTY;
    const keys = Object.keys(selector);
    const sandboxId = filter?.podSandboxId ?? '';
    const out: ContainerRecord[] = [];
    this.forCandidates(filter?.id ?? '', sandboxId, selector[POD_UID_KEY], (c) => {
      if (state !== undefined && c.state !== state) return;
      if (sandboxId && c.sandbox.id !== sandboxId) return;
      if (keys.length > 0 && !selectorMatches(c.labels, selector, keys)) return;
      out.push(c);
    });
    return out;
  }

  toContainer(c: ContainerRecord): Container {
    return {
      id: c.id,
      podSandboxId: c.sandbox.id,
      metadata: c.metadata,
      image: c.image,
      imageRef: c.imageId,
      state: c.state,
      createdAt: c.createdAt,
      labels: c.labels,
      annotations: c.annotations,
      imageId: c.imageId,
    };
  }

  /** Narrows by id or sandbox first, so filtered lists do not walk every container. */
  private forCandidates(id: string, sandboxId: string, podUid: string | undefined, fn: (c: ContainerRecord) => void): void {
    if (id) {
      const c = this.containerMap.get(id);
      if (c) fn(c);
    } else if (sandboxId) {
      const s = this.sandboxMap.get(sandboxId);
      if (s) for (const c of s.containers) fn(c);
    } else if (podUid !== undefined) {
      for (const c of this.containersByUid.get(podUid)) fn(c);
    } else {
      for (const c of this.containerMap.values()) fn(c);
    }
  }

  execSync(id: string, cmd: readonly string[]): ExecSyncResponse {
    const c = this.getContainer(id, (i) => `failed to find container "${i}" in store: not found`);
    if (c.state !== 'CONTAINER_RUNNING') {
      throw new FakeCriError(Code.FAILED_PRECONDITION, `failed to exec in container: container is in ${c.state} state`);
    }
    const scripted = this.execHandler?.({ containerId: id, containerName: c.config?.metadata?.name ?? '', cmd });
    const result = scripted ?? interpretCommand(cmd) ?? { exitCode: 0, stdout: '' };
    return { stdout: Buffer.from(result.stdout ?? ''), stderr: Buffer.alloc(0), exitCode: result.exitCode };
  }

  requireContainer(id: string): FakeContainer {
    return this.getContainer(id);
  }

  containerStats(id: string): ContainerStats {
    return this.toStats(this.getContainer(id), this.opts.clock.now());
  }

  /** Like containerd, only containers with a live task (running) have stats. */
  listContainerStats(filter: ContainerStatsFilter__Output | null): ContainerStats[] {
    const selector = filter?.labelSelector ?? EMPTY;
    const keys = Object.keys(selector);
    const sandboxId = filter?.podSandboxId ?? '';
    const now = this.opts.clock.now();
    const out: ContainerStats[] = [];
    this.forCandidates(filter?.id ?? '', sandboxId, selector[POD_UID_KEY], (c) => {
      if (c.state !== 'CONTAINER_RUNNING') return;
      if (sandboxId && c.sandbox.id !== sandboxId) return;
      if (keys.length > 0 && !selectorMatches(c.labels, selector, keys)) return;
      out.push(this.toStats(c, now));
    });
    return out;
  }

  private toStats(c: ContainerRecord, nowMs: number): ContainerStats {
    const ts = nowMs * 1e6;
    const running = c.state === 'CONTAINER_RUNNING';
    // Synthetic but plausible: 1% of a core since start, a few MiB of memory.
    const cpuNs = running ? Math.max(0, Math.round((ts - c.startedAt) / 100)) : 0;
    return {
      attributes: { id: c.id, metadata: c.metadata, labels: c.labels, annotations: c.annotations },
      cpu: running ? { timestamp: ts, usageCoreNanoSeconds: { value: cpuNs }, usageNanoCores: { value: 10_000_000 } } : null,
      memory: running
        ? {
            timestamp: ts,
            workingSetBytes: { value: 4 * 1024 * 1024 },
            usageBytes: { value: 5 * 1024 * 1024 },
            rssBytes: { value: 3 * 1024 * 1024 },
            availableBytes: { value: 0 },
            pageFaults: { value: 1000 },
            majorPageFaults: { value: 0 },
          }
        : null,
      writableLayer: {
        timestamp: ts,
        fsId: { mountpoint: '/var/lib/fake/snapshots' },
        usedBytes: { value: c.writableBytes ?? 4096 },
        inodesUsed: { value: 4 },
      },
    };
  }

  // ---- events and seeding --------------------------------------------------

  private emit(type: ContainerEventType, containerId: string, sandbox: SandboxRecord | undefined): void {
    const sink = this.eventSink;
    if (!sink) return;
    const live = sandbox && this.sandboxMap.get(sandbox.id) === sandbox ? sandbox : undefined;
    // containerd sends the status of every container of the pod, so a listener can rebuild the pod from one event.
    sink({
      containerId,
      containerEventType: type,
      createdAt: this.nowNs(),
      podSandboxStatus: live ? this.toSandboxStatus(live) : null,
      containersStatuses: live ? live.containers.map((c) => this.toContainerStatus(c)) : [],
    });
  }

  /** Bulk-creates running pods without events, name checks on the hot path, or copies. */
  seed(n: { pods: number; containersPerPod: number; labels?: (i: number) => Record<string, string> }): void {
    const image = this.images.first();
    const imageRef = image?.repoTags[0] ?? normalizeImageRef('busybox:1.36');
    const imageId = image?.id ?? `sha256:${'0'.repeat(64)}`;
    const imageSpec: Readonly<ImageSpec> = Object.freeze({ image: imageRef });
    const now = this.nowNs();
    const batch = this.seedCounter++;
    for (let i = 0; i < n.pods; i++) {
      const podName = `seed-${batch}-${i}`;
      const uid = `seed-${batch}-${i}-uid`;
      const labels = n.labels?.(i) ?? {
        'io.kubernetes.pod.name': podName,
        'io.kubernetes.pod.namespace': 'default',
        'io.kubernetes.pod.uid': uid,
      };
      const id = newId();
      const metadata = { name: podName, uid, namespace: 'default', attempt: 0 };
      const reserved = `${podName}_default_${uid}_0`;
      const s = new SandboxRecord(id, metadata, reserved, now, this.nextIp(), labels, EMPTY, '', '', SEED_NAMESPACES);
      this.sandboxNames.set(reserved, id);
      this.sandboxMap.set(id, s);
      this.sandboxesByUid.add(s);
      for (let j = 0; j < n.containersPerPod; j++) {
        const cname = `c${j}`;
        const cid = newId();
        const creserved = `${cname}_${podName}_default_${uid}_0`;
        const c = new ContainerRecord(
          cid,
          s,
          { name: cname, attempt: 0 },
          creserved,
          imageSpec,
          imageId,
          now,
          { ...labels, 'io.kubernetes.container.name': cname },
          EMPTY,
          '',
          NO_MOUNTS,
          undefined,
          '',
        );
        c.state = 'CONTAINER_RUNNING';
        c.startedAt = now;
        this.containerNames.set(creserved, cid);
        this.containerMap.set(cid, c);
        this.containersByUid.add(c);
        s.containers.push(c);
      }
    }
  }
}
