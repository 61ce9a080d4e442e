import { realClock } from '../core/clock.js';
import type { RuntimeService } from '../core/cri/client.js';
import { ContainerdEventsClient } from '../core/cri/containerd-events.js';
import { errorMessage } from '../core/errors.js';
import { PodStatusReader } from '../core/kuberuntime/pod-status.js';
import type { Pleg } from '../core/pleg/evented.js';
import { GenericPleg, type PodLifecycleEvent } from '../core/pleg/generic.js';
import { choosePleg, type PlegKind } from '../core/pleg/select.js';
import { parseDuration } from '../core/util/duration.js';
import type { PodCache } from '../core/pleg/cache.js';
import { podKey } from '../core/util/pod-key.js';

/** What pleg-events needs of a PLEG: one relist, a listener, start and stop. */
export interface EventSource {
  readonly cache: PodCache;
  relist(): Promise<PodLifecycleEvent[]>;
  watch(listener: (e: PodLifecycleEvent) => void): () => void;
  start(): void;
  stop(): void;
}

/**
 * Prints what the PLEG derives: one relist against an empty past, or (follow) every event until
 * `stopped` resolves. The first relist runs before start() so that a missing runtime fails at once.
 */
export async function printPlegEvents(
  source: EventSource,
  print: (e: PodLifecycleEvent) => void,
  opts: { follow: boolean; stopped?: Promise<unknown> },
): Promise<void> {
  if (!opts.follow) {
    (await source.relist()).forEach(print);
    return;
  }
  // A relist hands its events to the listeners and also returns them: with a listener watching,
  // printing what it returns too printed every event of the first relist twice.
  source.watch(print);
  source.start();
  try {
    await source.relist();
    await opts.stopped;
  } finally {
    source.stop();
  }
}

/** The PLEG pleg-events follows: the same choice as the agent's (--pleg), over a generic PLEG with its own selector. */
export function plegForEvents(
  client: RuntimeService,
  flags: { pleg: string; 'relist-period': string; all: boolean },
  runtimeName: string | undefined,
  say: (line: string) => void,
): Pleg {
  const statusReader = new PodStatusReader({ runtime: client, clock: realClock });
  const inspect = (uid: string, name: string, namespace: string) => statusReader.getPodStatus(uid, name, namespace, { all: flags.all });
  const onError = (err: unknown) => say(`Error: ${errorMessage(err)}`);
  const generic = new GenericPleg({
    runtime: client,
    clock: realClock,
    relistPeriodMs: parseDuration(flags['relist-period'], '--relist-period'),
    labelSelector: flags.all ? {} : undefined,
    inspect,
    earlyExits: statusReader.earlyExits,
    exitedStatus: (c, exit) => statusReader.exitedStatus(c, exit),
    onError,
  });
  return choosePleg({
    kind: flags.pleg as PlegKind,
    runtime: client,
    clock: realClock,
    generic,
    runtimeName,
    containerdEvents: () => new ContainerdEventsClient(client.endpoint),
    onFallback: (reason) => say(`PLEG: ${reason}`),
    onError,
  });
}

/** One event as a line of text, or as JSON. */
export function formatPlegEvent(e: PodLifecycleEvent, cache: PodCache, json: boolean): string {
  const c = cache.get(e.id)?.containers.find((x) => x.id === e.data);
  let detail = '';
  if (e.type === 'ContainerDied')
    detail = c?.exitCode !== undefined ? `exited with code ${c.exitCode}${c.reason ? ` (${c.reason})` : ''}` : 'exited';
  else if (e.type === 'ContainerStarted') detail = e.containerName ? `running ${c?.image ?? ''}`.trim() : 'sandbox ready';
  else if (e.type === 'ContainerRemoved') detail = 'removed';
  else if (e.type === 'ContainerChanged') detail = `state ${c?.state ?? 'unknown'}`;
  else if (e.type === 'PodSync') detail = 'the runtime recorded more than its event said';
  const time = new Date(e.time).toISOString();
  if (json) {
    return JSON.stringify({
      time,
      namespace: e.namespace,
      pod: e.name,
      podUID: e.id,
      container: e.containerName ?? null,
      id: e.data,
      event: e.type,
      detail,
    });
  }
  return [
    time.slice(11, 23).padEnd(12),
    podKey(e).padEnd(32),
    (e.containerName ?? '(sandbox)').padEnd(16),
    e.type.padEnd(17),
    `${detail} ${e.data.slice(0, 13)}`,
  ].join(' ');
}

export const PLEG_EVENTS_HEADER = ['TIME'.padEnd(12), 'POD'.padEnd(32), 'CONTAINER'.padEnd(16), 'EVENT'.padEnd(17), 'DETAIL'].join(' ');
