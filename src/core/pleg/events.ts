import type * as T from '../cri/types.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../container/types.js';
import type { ContainerExit, EarlyExits } from '../container/early-exits.js';

export type PodLifecycleEventType = 'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved' | 'ContainerChanged' | 'PodSync';

export interface PodLifecycleEvent {
  type: PodLifecycleEventType;
  /** Pod UID. */
  id: string;
  /** Container ID (or sandbox ID for sandbox events). */
  data: string;
  namespace: string;
  name: string;
  /** Container name; undefined for the sandbox. */
  containerName?: string;
  time: number;
}

/** Where a PLEG's events come from now: CRI GetContainerEvents, containerd's event service, or relists. */
export type PlegSource = 'cri-events' | 'containerd-events' | 'relist';

/** Constants of the kubelet's generic PLEG. */
export const RELIST_PERIOD_MS = 1000;
export const RELIST_THRESHOLD_MS = 3 * 60_000;

export type PlegState = 'running' | 'exited' | 'unknown' | 'non-existent';

export interface Seen {
  uid: string;
  namespace: string;
  name: string;
  containerName?: string;
  state: PlegState;
  /** The relist that last saw it in the lists. */
  gen?: number;
}

/** A sandbox's or container's state as an event reports it. */
export interface PodObjectState {
  id: string;
  state: PlegState;
}

/** The order a sandbox's or container's states come in (created reads as unknown). */
export const STATE_ORDER: Record<PlegState, number> = { unknown: 0, running: 1, exited: 2, 'non-existent': 3 };

export function containerState(state: T.ContainerState | undefined): PlegState {
  if (state === 'CONTAINER_RUNNING') return 'running';
  if (state === 'CONTAINER_EXITED') return 'exited';
  // Created-but-not-started and unknown both read as unknown, as in the kubelet.
  return 'unknown';
}

/** A sandbox's and a container's state in a pod status, as the PLEG names them. */
export const sandboxPlegState = (s: RuntimePodStatus['sandboxes'][number]): PlegState => (s.state === 'ready' ? 'running' : 'exited');
export const containerPlegState = (c: RuntimeContainerStatus): PlegState =>
  c.state === 'running' ? 'running' : c.state === 'exited' ? 'exited' : 'unknown';

/** The events a move between two states produces (generic.go generateEvents). */
export function eventsFor(oldState: PlegState, newState: PlegState): PodLifecycleEventType[] {
  if (oldState === newState) return [];
  switch (newState) {
    case 'running':
      return ['ContainerStarted'];
    case 'exited':
      return ['ContainerDied'];
    case 'unknown':
      return ['ContainerChanged'];
    case 'non-existent':
      return oldState === 'exited' ? ['ContainerRemoved'] : ['ContainerDied', 'ContainerRemoved'];
  }
}

/** A pod's status with the exits still ahead of the CRI applied (a read that raced the event). */
export function withEarlyExits(
  status: RuntimePodStatus,
  store: EarlyExits | undefined,
  exitedStatus: ((c: RuntimeContainerStatus, exit: ContainerExit) => RuntimeContainerStatus) | undefined,
  time = status.timestamp,
): RuntimePodStatus {
  if (!store?.size) return status;
  let changed = false;
  const apply = (list: RuntimeContainerStatus[]) =>
    list.map((c) => {
      const exit = c.state === 'running' ? store.ahead(c.id, true) : undefined;
      if (!exit) return c;
      changed = true;
      return (
        exitedStatus?.(c, exit) ?? {
          ...c,
          state: 'exited' as const,
          exitCode: exit.exitCode,
          finishedAt: exit.finishedAt,
          reason: exit.reason,
        }
      );
    });
  const containers = apply(status.containers);
  const ephemeral = status.ephemeral && apply(status.ephemeral);
  return changed ? { ...status, containers, ...(ephemeral ? { ephemeral } : {}), timestamp: time } : status;
}

/**
 * Whether a pod's status shows exactly what a relist's lists show of it (the same sandboxes and
 * containers, in the same states): then it holds as of the lists.
 */
export function showsAsListed(status: RuntimePodStatus, listed: ReadonlySet<string>, seen: ReadonlyMap<string, Seen>): boolean {
  const containers = status.ephemeral ? [...status.containers, ...status.ephemeral] : status.containers;
  if (status.sandboxes.length + containers.length !== listed.size) return false;
  for (const x of status.sandboxes) if (!listed.has(x.id) || seen.get(x.id)?.state !== sandboxPlegState(x)) return false;
  for (const c of containers) if (!listed.has(c.id) || seen.get(c.id)?.state !== containerPlegState(c)) return false;
  return true;
}
