import type { IContainer, IPod, IPodCondition, IPodStatus } from 'kubernetes-models/v1';
import type { Clock } from '../clock.js';
import type { RuntimePodStatus } from '../container/types.js';
import { podMeta } from '../util/pod-key.js';
import { generateAPIPodStatus, type WaitingReason } from './generate.js';
import type { TerminationRecords } from './termination-records.js';

/** What the status manager reads to make a pod's status beside its runtime view. */
export interface StatusSources {
  clock?: Clock;
  hostIP?: string;
  /** For containerID, as "containerd://<id>". */
  runtimeName?: string;
  /** The prober's readiness and startup verdicts. */
  ready?: (containerId: string, container: IContainer) => boolean | undefined;
  started?: (containerId: string, container: IContainer) => boolean | undefined;
  /** Each container's last termination, kept on disk (Last State after GC). */
  terminations?: TerminationRecords;
  /** The eviction manager's message for a pod it evicted. */
  evicted?: (uid: string) => string | undefined;
}

/** A pod's status as recorded, with the one it replaced. */
export interface StatusUpdate {
  status: IPodStatus;
  previous?: IPodStatus;
}

/**
 * The kubelet's statusManager, for one node with no API server: it makes each pod's v1 status from
 * its runtime view (generateAPIPodStatus, every override applied) and keeps the last one, with the
 * waiting reasons SyncPod left per container (ErrImagePull, CreateContainerConfigError,
 * CrashLoopBackOff…) that the next status shows. Only the kubelet writes it; every view serves what it holds.
 */
export class StatusManager {
  private readonly statuses = new Map<string, IPodStatus>();
  /** The generation of the pod object each pod's last finished sync used (status.observedGeneration). */
  private readonly observed = new Map<string, number>();

  constructor(private readonly sources: StatusSources = {}) {}

  /** The pod's status from its runtime view, every override included, recorded (the kubelet's SetPodStatus). */
  generate(pod: IPod, runtime: RuntimePodStatus): StatusUpdate {
    const uid = podMeta(pod).uid;
    const src = this.sources;
    const previous = this.statuses.get(uid);
    const status = generateAPIPodStatus(
      {
        pod,
        runtime,
        previous,
        waitingReason: (name) => this.waitingReason(uid, name),
        ready: src.ready,
        started: src.started,
        hostIP: src.hostIP,
        now: src.clock?.now() ?? Date.now(),
        runtimeName: src.runtimeName,
        lastTermination: (name) => src.terminations?.get(uid, name),
        podConditions: this.conditions(uid),
      },
      { evicted: src.evicted?.(uid), observedGeneration: this.observed.get(uid) },
    );
    src.terminations?.remember(uid, status);
    this.statuses.set(uid, status);
    return { status, previous };
  }

  /** The status of a pod admission rejected: Failed with the reason, never run. */
  reject(pod: IPod, reason: string, message: string): StatusUpdate {
    const uid = podMeta(pod).uid;
    const previous = this.statuses.get(uid);
    const input = { pod, runtime: undefined as unknown as RuntimePodStatus, now: 0 };
    const status = generateAPIPodStatus(input, { rejected: { reason, message }, observedGeneration: this.observed.get(uid) });
    this.statuses.set(uid, status);
    return { status, previous };
  }

  /** A sync of this pod object ended (or admission judged it): its status observes the object's generation. */
  synced(pod: IPod): void {
    const generation = pod.metadata?.generation;
    if (generation === undefined) return;
    const uid = podMeta(pod).uid;
    this.observed.set(uid, generation);
    const status = this.statuses.get(uid);
    if (status && status.observedGeneration !== generation) this.statuses.set(uid, { ...status, observedGeneration: generation });
  }
  private readonly waiting = new Map<string, Map<string, WaitingReason>>();
  private readonly external = new Map<string, Map<string, IPodCondition>>();

  /**
   * The kubelet-owned condition types: a client may set any other (a readiness gate's), as it may
   * patch a pod's status conditions through the API server.
   */
  static readonly OWNED_CONDITIONS = new Set([
    'PodScheduled',
    'PodReadyToStartContainers',
    'Initialized',
    'ContainersReady',
    'Ready',
    'DisruptionTarget',
    'PodResizePending',
    'PodResizeInProgress',
  ]);

  /** Sets a condition from outside (kept while the pod lives); its transition time moves only when its status does. */
  setCondition(
    uid: string,
    c: { type: string; status: 'True' | 'False' | 'Unknown'; reason?: string; message?: string },
    now: number,
  ): IPodCondition {
    let known = this.external.get(uid);
    if (!known) this.external.set(uid, (known = new Map()));
    const prev = known.get(c.type);
    const next: IPodCondition = {
      type: c.type,
      status: c.status,
      lastProbeTime: null as unknown as undefined,
      lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : new Date(now).toISOString(),
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
    };
    known.set(c.type, next);
    return next;
  }

  /** Drops a condition (the kubelet's resize conditions, once the resize is done); true if it was set. */
  clearCondition(uid: string, type: string): boolean {
    return this.external.get(uid)?.delete(type) ?? false;
  }

  /** The conditions set from outside, in the order first set. */
  conditions(uid: string): IPodCondition[] {
    return [...(this.external.get(uid)?.values() ?? [])];
  }

  get(uid: string): IPodStatus | undefined {
    return this.statuses.get(uid);
  }

  /** Every pod's last status. */
  all(): IPodStatus[] {
    return [...this.statuses.values()];
  }

  /** Records a pod's new status; returns the one it replaces. */
  set(uid: string, status: IPodStatus): IPodStatus | undefined {
    const previous = this.statuses.get(uid);
    this.statuses.set(uid, status);
    return previous;
  }

  waitingReason(uid: string, container: string): WaitingReason | undefined {
    return this.waiting.get(uid)?.get(container);
  }

  /** What SyncPod said of each container: a reason to show while it waits, or none any more. */
  recordWaiting(uid: string, reasons: ReadonlyMap<string, WaitingReason | null | undefined>): void {
    let known = this.waiting.get(uid);
    for (const [name, reason] of reasons) {
      if (reason) {
        if (!known) this.waiting.set(uid, (known = new Map()));
        known.set(name, reason);
      } else known?.delete(name);
    }
  }

  /** The pod is gone: nothing of it is kept. */
  forget(uid: string): void {
    this.observed.delete(uid);
    this.reset(uid);
  }

  /** A rejected pod admitted again: its status starts over (the generation it observed stays until its sync ends). */
  reset(uid: string): void {
    this.statuses.delete(uid);
    this.waiting.delete(uid);
    this.external.delete(uid);
  }
}
