import type { Kubelet } from '../kubelet.js';
import type { KubeletOptions } from '../kubelet-types.js';
import { SyncLoop, type SyncLoopOptions } from '../loop.js';
import { GenericPleg } from '../pleg/generic.js';
import { EventedPleg, type Pleg } from '../pleg/evented.js';
import { choosePleg as choosePlegKind, type PlegKind } from '../pleg/select.js';
import { ContainerdEventsClient, type ContainerdEventSource } from '../cri/containerd-events.js';
import { newKubelet } from './compose-kubelet.js';

export { newKubelet };

type RelistHook = (durationMs: number, intervalMs?: number) => void;

/** A generic PLEG over the Kubelet's runtime, filling its pod cache and inspecting changed pods as SyncPod does. */
export function createPleg(
  kubelet: Kubelet,
  opts: { relistPeriodMs?: number; onError?: (err: unknown) => void; onRelist?: RelistHook } = {},
): GenericPleg {
  const { runtime, clock, metrics } = kubelet.options;
  return new GenericPleg({
    runtime,
    clock,
    inspect: (uid, name, namespace) => kubelet.runtimeManager.getPodStatus(uid, name, namespace),
    cache: kubelet.podCache,
    earlyExits: kubelet.runtimeManager.statusReader.earlyExits,
    exitedStatus: (c, exit) => kubelet.runtimeManager.statusReader.exitedStatus(c, exit),
    runtimeCache: kubelet.runtimeCache,
    onRelist: (durationMs, intervalMs) => {
      metrics?.relistDuration.observe(durationMs / 1000);
      if (intervalMs !== undefined) metrics?.relistInterval.observe(intervalMs / 1000);
    },
    ...opts,
  });
}

/** An evented PLEG over a generic one (the generic relists as a safety net, and takes over on UNIMPLEMENTED). */
export function createEventedPleg(
  kubelet: Kubelet,
  opts: { relistPeriodMs?: number; onError?: (err: unknown) => void; onFallback?: (reason: string) => void; onRelist?: RelistHook } = {},
): EventedPleg {
  return new EventedPleg({
    runtime: kubelet.options.runtime,
    clock: kubelet.options.clock,
    generic: createPleg(kubelet, {
      relistPeriodMs: opts.relistPeriodMs,
      onError: opts.onError,
      ...(opts.onRelist ? { onRelist: opts.onRelist } : {}),
    }),
    onFallback: opts.onFallback,
  });
}

/** The PLEG of that kind over a generic one of the Kubelet (see pleg/select's choosePleg): where the PLEG is chosen. */
export function choosePleg(
  kubelet: Kubelet,
  kind: PlegKind,
  opts: {
    relistPeriodMs?: number;
    onRelist?: RelistHook;
    onFallback?: (reason: string) => void;
    containerdEvents: () => ContainerdEventSource;
  },
): Pleg {
  const generic = createPleg(kubelet, { relistPeriodMs: opts.relistPeriodMs, ...(opts.onRelist ? { onRelist: opts.onRelist } : {}) });
  return choosePlegKind({
    kind,
    runtime: kubelet.options.runtime,
    clock: kubelet.options.clock,
    generic,
    runtimeName: kubelet.options.runtimeName,
    containerdEvents: opts.containerdEvents,
    onFallback: opts.onFallback,
  });
}

export interface WiringOptions extends KubeletOptions {
  /** Which PLEG (see choosePleg); generic by default. */
  pleg?: PlegKind;
  /** containerd's event service (default: a client on the runtime's endpoint). */
  containerdEvents?: () => ContainerdEventSource;
  relistPeriodMs?: number;
  /** After each generic relist: its duration and the interval since the previous one. */
  onRelist?: RelistHook;
  onPlegFallback?: (reason: string) => void;
  /** The sync loop's periods, hooks and runtime check. */
  loop?: Omit<SyncLoopOptions, 'kubelet' | 'pleg' | 'clock'>;
}

/** The kubelet's parts wired together: Kubelet (pod workers, prober, status, events), a PLEG, the syncLoop. */
export interface NodeWiring {
  kubelet: Kubelet;
  pleg: Pleg;
  loop: SyncLoop;
}

/**
 * The composition root: the one place that wires the kubelet's parts. The standalone node (agent,
 * watch, run) builds on it, and so do the in-process nodes of the end-to-end tests and benchmarks.
 * Nothing is started.
 */
export function wireNode(opts: WiringOptions): NodeWiring {
  const { pleg: kind, relistPeriodMs, onRelist, onPlegFallback, containerdEvents, loop: loopOpts, ...kubeletOpts } = opts;
  const kubelet = newKubelet(kubeletOpts);
  const pleg = choosePleg(kubelet, kind ?? 'generic', {
    relistPeriodMs,
    onRelist,
    onFallback: onPlegFallback,
    containerdEvents: containerdEvents ?? (() => new ContainerdEventsClient(opts.runtime.endpoint)),
  });
  const loop = new SyncLoop({ ...loopOpts, kubelet, pleg, clock: opts.clock });
  return { kubelet, pleg, loop };
}
