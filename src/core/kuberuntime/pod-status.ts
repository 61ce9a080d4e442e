import { openSync, readSync, closeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Clock } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import { ignoreNotFound } from '../cri/errors.js';
import type * as T from '../cri/types.js';
import { readLogTail } from '../logs/index.js';
import * as L from './labels.js';
import { EarlyExits, type ContainerExit } from '../container/early-exits.js';
import { SpecCopies } from './spec-copy.js';
import { intern } from '../util/intern.js';
import { newerFirst, type RuntimeContainerStatus, type RuntimePodStatus, type RuntimeSandboxStatus } from '../container/types.js';

/** Sandboxes and containers a caller believes a pod has: see PodStatusReader.getPodStatus. */
export interface ExpectedIds {
  sandboxIds: Iterable<string>;
  containerIds: Iterable<string>;
}

/** The kubelet reads at most this much of a termination-message file or of the log tail. */
export const MAX_TERMINATION_MESSAGE_BYTES = 4096;
/** FallbackToLogsOnError: the log's last lines, bounded as the kubelet bounds them. */
const FALLBACK_LOG_BYTES = 2048;
const FALLBACK_LOG_LINES = 80;

const nsToMs = (ns: number | undefined): number | undefined => (ns ? Math.floor(ns / 1e6) : undefined);

/**
 * The kubelet's GetPodStatus: what the runtime holds of one pod, from its labelled sandboxes
 * and containers, each with its status and termination message. Reads only: plan, pleg-events
 * and the pod views use it alone; RuntimeManager uses it for SyncPod.
 */
export class PodStatusReader {
  private readonly runtime: RuntimeService;
  readonly clock: Clock;
  /** Why podctl killed a container (liveness, startup, postStart), for its terminated state's message. */
  private readonly killMessages = new Map<string, string>();
  /** Termination messages of exited containers: they never change, so each is read once. */
  private readonly terminationMessages = new Map<string, string>();
  /** Exits a runtime event announced before the CRI recorded them (the containerd-events PLEG notes them). */
  readonly earlyExits: EarlyExits;
  /** Spec copies in pod directories, remembered once read (or written, by the RuntimeManager that shares this reader). */
  readonly specCopies = new SpecCopies();

  constructor(opts: { runtime: RuntimeService; clock: Clock }) {
    this.runtime = opts.runtime;
    this.clock = opts.clock;
    this.earlyExits = new EarlyExits(opts.clock);
  }

  /** Why podctl killed this container, shown as its termination message when it wrote none. */
  noteKillMessage(containerId: string, message: string): void {
    this.killMessages.set(containerId, message);
  }

  /** The container was removed: nothing more to remember of it. */
  forget(containerId: string): void {
    this.killMessages.delete(containerId);
    this.terminationMessages.delete(containerId);
  }

  /**
   * The runtime's view of one pod, from its labelled sandboxes and containers. `expected` names the
   * sandboxes and containers the caller believes the pod has (a sync's view before its steps, and
   * what the steps made): their statuses are asked while the lists are, so that the read after a
   * sync is one round trip, not three. The lists still decide what the pod has: a status asked for an
   * ID they do not show is dropped, and one they show that was not expected is asked after them.
   */
  async getPodStatus(
    uid: string,
    name: string,
    namespace: string,
    opts: { all?: boolean; expected?: ExpectedIds } = {},
  ): Promise<RuntimePodStatus> {
    // podctl's own objects only, unless a debugging command asks for every agent's.
    const selector: Record<string, string> = opts.all
      ? { [L.POD_UID_LABEL]: uid }
      : { [L.POD_UID_LABEL]: uid, [L.MANAGED_BY_LABEL]: L.MANAGED_BY_VALUE };
    const askedSandboxes = new Map<string, Promise<T.PodSandboxStatusResponse | undefined>>();
    const askedContainers = new Map<string, Promise<T.ContainerStatusResponse | undefined>>();
    for (const id of opts.expected?.sandboxIds ?? [])
      if (!askedSandboxes.has(id)) askedSandboxes.set(id, ignoreNotFound(this.runtime.podSandboxStatus(id)));
    for (const id of opts.expected?.containerIds ?? [])
      if (!askedContainers.has(id)) askedContainers.set(id, ignoreNotFound(this.runtime.containerStatus(id)));
    // An answer no one waits for (an ID the lists do not show, or lists that failed) must not end as an unhandled rejection.
    for (const p of [...askedSandboxes.values(), ...askedContainers.values()]) p.catch(() => undefined);
    const [sandboxes, containers] = await Promise.all([
      this.runtime.listPodSandbox({ labelSelector: selector }),
      this.runtime.listContainers({ labelSelector: selector }),
    ]);
    // Sandboxes and containers at once: neither status needs the other.
    const [sandboxStatuses, containerStatuses] = await Promise.all([
      Promise.all(sandboxes.map((s) => this.sandboxStatus(s, askedSandboxes.get(s.id)))),
      Promise.all(containers.map((c) => this.containerStatus(c, askedContainers.get(c.id)))),
    ]);
    await this.withSpecCopies(containers, containerStatuses, sandboxStatuses);
    const live = sandboxStatuses
      .filter((s): s is RuntimeSandboxStatus => s !== undefined)
      .sort((a, b) => b.createdAt - a.createdAt || b.attempt - a.attempt);
    const ready = live.find((s) => s.state === 'ready');
    const known = containerStatuses.filter((c): c is RuntimeContainerStatus => c !== undefined).sort(newerFirst);
    const ephemeralIds = new Set(containers.filter((c) => c.labels[L.EPHEMERAL_LABEL] === 'true').map((c) => c.id));
    const isEphemeral = (c: RuntimeContainerStatus) => ephemeralIds.has(c.id);
    return {
      uid: intern(uid),
      name: intern(name),
      namespace: intern(namespace),
      ips: ready?.ip ? [ready.ip, ...ready.additionalIps] : [],
      sandboxes: live,
      containers: known.filter((c) => !isEphemeral(c)),
      ...(ephemeralIds.size ? { ephemeral: known.filter(isEphemeral) } : {}),
      timestamp: this.clock.now(),
    };
  }

  /**
   * The spec copies kept in the pod directory (spec-copy.ts), for containers whose record carries none:
   * found through the directory their sandbox recorded (any pod's sandbox, when theirs is gone).
   */
  private async withSpecCopies(
    containers: T.Container[],
    statuses: (RuntimeContainerStatus | undefined)[],
    sandboxes: (RuntimeSandboxStatus | undefined)[],
  ): Promise<void> {
    const podDirs = new Map<string, string>();
    for (const s of sandboxes) if (s?.podDir) podDirs.set(s.id, s.podDir);
    const anyPodDir = podDirs.values().next().value;
    await Promise.all(
      statuses.map(async (status, i) => {
        if (!status || status.specJSON !== undefined || !status.hash) return;
        const podDir = podDirs.get(containers[i]!.podSandboxId) ?? anyPodDir;
        const spec = podDir ? await this.specCopies.read(podDir, status.name, status.hash) : undefined;
        if (spec === undefined) return;
        status.specJSON = spec;
        status.image = intern(specImage(spec)) || status.image;
      }),
    );
  }

  private async sandboxStatus(
    sandbox: T.PodSandbox,
    asked?: Promise<T.PodSandboxStatusResponse | undefined>,
  ): Promise<RuntimeSandboxStatus | undefined> {
    const res = await (asked ?? ignoreNotFound(this.runtime.podSandboxStatus(sandbox.id)));
    if (!res) return undefined;
    const status = res.status;
    return {
      id: intern(sandbox.id),
      state: sandbox.state === 'SANDBOX_READY' ? 'ready' : 'notready',
      createdAt: nsToMs(sandbox.createdAt) ?? 0,
      attempt: sandbox.metadata?.attempt ?? 0,
      ip: intern(status?.network?.ip || undefined),
      additionalIps: (status?.network?.additionalIps ?? []).map((i) => intern(i.ip)).filter(Boolean),
      hostNetwork: status?.linux?.namespaces?.options?.network === 'NODE',
      podDir: intern(status?.annotations?.[L.POD_DIR_ANNOTATION] || undefined),
      logDirectory: intern(status?.annotations?.[L.POD_LOG_DIR_ANNOTATION] || undefined),
    };
  }

  private async containerStatus(
    container: T.Container,
    asked?: Promise<T.ContainerStatusResponse | undefined>,
  ): Promise<RuntimeContainerStatus | undefined> {
    const res = await (asked ?? ignoreNotFound(this.runtime.containerStatus(container.id)));
    if (!res) return undefined;
    const status = toRuntimeContainerStatus(container, res.status ?? undefined);
    const path = res.status?.annotations?.[L.CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION];
    const file = path ? res.status?.mounts?.find((m) => m.containerPath === path)?.hostPath : undefined;
    if (file) status.terminationMessageFile = file;
    const early = this.earlyExits.size ? this.earlyExits.ahead(container.id, status.state === 'running') : undefined;
    if (early) Object.assign(status, { state: 'exited', exitCode: early.exitCode, finishedAt: early.finishedAt, reason: early.reason });
    // Read again once the CRI has recorded the exit: the log a fallback message tails may still be flushing.
    if (status.state === 'exited' && res.status)
      status.message = (await this.terminationMessage(status, res.status, !early)) || status.message;
    return status;
  }

  /**
   * A container's status once it exited as a runtime event says, before the CRI has recorded it: the
   * event's code, time and reason, and the termination message from the file the container wrote
   * (read at once: it is small and final), else why podctl killed it. A fallback message from the
   * log comes with the CRI's own record, when the log has been flushed.
   */
  exitedStatus(c: RuntimeContainerStatus, exit: ContainerExit): RuntimeContainerStatus {
    const message =
      this.terminationMessages.get(c.id) ||
      (c.terminationMessageFile ? readHeadSync(c.terminationMessageFile, MAX_TERMINATION_MESSAGE_BYTES) : '') ||
      this.killMessages.get(c.id);
    return {
      ...c,
      state: 'exited',
      exitCode: exit.exitCode,
      finishedAt: exit.finishedAt,
      reason: exit.reason,
      message: message || undefined,
    };
  }

  /**
   * The kubelet's termination message: the file the container wrote at
   * terminationMessagePath, else (FallbackToLogsOnError, non-zero exit) the
   * tail of its log, else why podctl killed it.
   */
  private async terminationMessage(c: RuntimeContainerStatus, status: T.ContainerStatus, remember = true): Promise<string | undefined> {
    const known = this.terminationMessages.get(c.id);
    if (known !== undefined) return known || undefined;
    const annotations = status.annotations ?? {};
    let message = c.terminationMessageFile ? await readHead(c.terminationMessageFile, MAX_TERMINATION_MESSAGE_BYTES) : '';
    if (
      !message &&
      annotations[L.CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION] === 'FallbackToLogsOnError' &&
      c.exitCode !== 0 &&
      status.logPath
    ) {
      message = await readLogTail(status.logPath, FALLBACK_LOG_BYTES, FALLBACK_LOG_LINES);
    }
    message ||= this.killMessages.get(c.id) ?? '';
    if (!remember) return message || undefined;
    if (this.terminationMessages.size >= 10_000) this.terminationMessages.clear();
    this.terminationMessages.set(c.id, message);
    return message || undefined;
  }
}

/** As readHead, at once: for a termination message the PLEG needs in the same turn as the event. */
function readHeadSync(path: string, max: number): string {
  try {
    const fd = openSync(path, 'r');
    try {
      const buf = Buffer.alloc(max);
      return buf.subarray(0, readSync(fd, buf, 0, max, 0)).toString();
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** The first bytes of a file, as text; '' when it cannot be read. */
async function readHead(path: string, max: number): Promise<string> {
  try {
    const fh = await open(path, 'r');
    try {
      const buf = Buffer.alloc(max);
      const { bytesRead } = await fh.read(buf, 0, max, 0);
      return buf.subarray(0, bytesRead).toString();
    } finally {
      await fh.close();
    }
  } catch {
    return '';
  }
}

const STATE: Record<string, RuntimeContainerStatus['state']> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

/** Rebuilds what podctl knows of a container from its CRI labels, annotations and status. */
export function toRuntimeContainerStatus(container: T.Container, status?: T.ContainerStatus): RuntimeContainerStatus {
  const annotations = status?.annotations && Object.keys(status.annotations).length ? status.annotations : container.annotations;
  const kind = annotations[L.CONTAINER_KIND_ANNOTATION];
  return {
    id: intern(container.id),
    name: intern(container.labels[L.CONTAINER_NAME_LABEL] ?? container.metadata?.name ?? ''),
    state: STATE[status?.state ?? container.state] ?? 'unknown',
    createdAt: nsToMs(status?.createdAt ?? container.createdAt) ?? 0,
    startedAt: nsToMs(status?.startedAt),
    finishedAt: nsToMs(status?.finishedAt),
    exitCode: status && (status.state === 'CONTAINER_EXITED' || status.finishedAt) ? status.exitCode : undefined,
    image: intern(
      specImage(annotations[L.CONTAINER_SPEC_ANNOTATION]) || container.image?.userSpecifiedImage || container.image?.image || '',
    ),
    imageRef: intern(status?.imageRef || container.imageRef),
    imageId: intern(container.imageRef),
    hash: intern(annotations[L.CONTAINER_HASH_ANNOTATION] ?? ''),
    restartCount: Number(annotations[L.CONTAINER_RESTART_COUNT_ANNOTATION] ?? 0) || 0,
    reason: status?.reason || undefined,
    message: status?.message || undefined,
    // Containers made with a pod directory carry no copy: PodStatusReader reads it from there.
    specJSON: intern(annotations[L.CONTAINER_SPEC_ANNOTATION]),
    ...(status?.resources?.linux
      ? {
          resources: {
            cpuShares: Number(status.resources.linux.cpuShares ?? 0),
            cpuQuota: Number(status.resources.linux.cpuQuota ?? 0),
            cpuPeriod: Number(status.resources.linux.cpuPeriod ?? 0),
            memoryLimitInBytes: Number(status.resources.linux.memoryLimitInBytes ?? 0),
          },
        }
      : {}),
    terminationGracePeriod: Number(annotations[L.POD_TERMINATION_GRACE_PERIOD_ANNOTATION]) || undefined,
    preStopJSON: annotations[L.CONTAINER_PRESTOP_HANDLER_ANNOTATION],
    kind: kind === 'init' || kind === 'sidecar' ? kind : 'app',
    logPath: intern(status?.logPath || undefined),
  };
}

/** The image as the pod spec named it, from the container's spec copy. */
function specImage(specJSON: string | undefined): string | undefined {
  if (!specJSON) return undefined;
  try {
    const image = (JSON.parse(specJSON) as { image?: unknown }).image;
    return typeof image === 'string' ? image : undefined;
  } catch {
    return undefined;
  }
}
