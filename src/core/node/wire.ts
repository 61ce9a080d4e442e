import { Kubelet, type KubeletOptions } from '../kubelet.js';
import { SyncLoop, type SyncLoopOptions } from '../loop.js';
import type { Pleg } from '../pleg/evented.js';
import type { PlegKind } from '../pleg/select.js';
import { ContainerdEventsClient, type ContainerdEventSource } from '../cri/containerd-events.js';

export interface WiringOptions extends KubeletOptions {
  /** Which PLEG (see choosePleg); generic by default. */
  pleg?: PlegKind;
  /** containerd's event service (default: a client on the runtime's endpoint). */
  containerdEvents?: () => ContainerdEventSource;
  relistPeriodMs?: number;
  /** After each generic relist: its duration and the interval since the previous one. */
  onRelist?: (durationMs: number, intervalMs?: number) => void;
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
 * The one place that wires the kubelet's parts: the standalone node (agent, watch, run) builds on it,
 * and so do the in-process nodes of the end-to-end tests and benchmarks. Nothing is started.
 */
export function wireNode(opts: WiringOptions): NodeWiring {
  const { pleg: kind, relistPeriodMs, onRelist, onPlegFallback, containerdEvents, loop: loopOpts, ...kubeletOpts } = opts;
  const kubelet = new Kubelet(kubeletOpts);
  const pleg = kubelet.choosePleg(kind ?? 'generic', {
    relistPeriodMs,
    onRelist,
    onFallback: onPlegFallback,
    containerdEvents: containerdEvents ?? (() => new ContainerdEventsClient(opts.runtime.endpoint)),
  });
  const loop = new SyncLoop({ ...loopOpts, kubelet, pleg, clock: opts.clock });
  return { kubelet, pleg, loop };
}
