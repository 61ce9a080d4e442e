import type { Clock } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import type { ContainerdEventSource } from '../cri/containerd-events.js';
import { ContainerdPleg } from './containerd.js';
import { EventedPleg, type Pleg } from './evented.js';
import type { GenericPleg } from './generic.js';
import type { PlegKind } from './kinds.js';

export { PLEG_KINDS, type PlegKind } from './kinds.js';

export interface PlegChoice {
  kind: PlegKind;
  runtime: RuntimeService;
  clock: Clock;
  /** The generic PLEG every kind builds on (state, cache, safety-net relist, fallback). */
  generic: GenericPleg;
  /** The runtime's name from Version: auto tries containerd's events only on containerd. */
  runtimeName?: string;
  /** Opens containerd's event service (called only when that source may be used). */
  containerdEvents: () => ContainerdEventSource;
  onFallback?: (reason: string) => void;
  onError?: (err: unknown) => void;
}

/** The one place that picks a PLEG (the agent, watch and pleg-events use it). */
export function choosePleg(c: PlegChoice): Pleg {
  const containerd = () =>
    new ContainerdPleg({
      runtime: c.runtime,
      clock: c.clock,
      generic: c.generic,
      events: c.containerdEvents(),
      onFallback: c.onFallback,
      onError: c.onError,
    });
  const evented = (next?: Pleg) =>
    new EventedPleg({ runtime: c.runtime, clock: c.clock, generic: c.generic, onFallback: c.onFallback, next });
  switch (c.kind) {
    case 'generic':
      return c.generic;
    case 'evented':
      return evented();
    case 'containerd':
      return containerd();
    case 'auto':
      return evented(c.runtimeName === 'containerd' ? containerd() : undefined);
  }
}
