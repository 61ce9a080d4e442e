import { join } from 'node:path';
import type { CriClient } from '../core/cri/client.js';
import type { IPod } from 'kubernetes-models/v1';
import type { PodQuery, PodView, PodViewAnswer, ViewedPod } from '../core/podview/index.js';
import { podMeta } from '../core/util/pod-key.js';
import type { PodOutput, PodTableOptions } from './table.js';
import { getFromStatusSocket } from '../core/status/client.js';
import { clientFor, resolveFromFlags, type GlobalFlags } from './runtime.js';

/** Lists podctl's pods; close() when done. */
export interface PodLister {
  list(q: PodQuery): Promise<ViewedPod[]>;
  /** Calls wake at each pod status the agent under --root-dir publishes (its watch), while one runs; returns the unsubscribe. */
  changes(wake: () => void): () => void;
  close(): void;
}

/**
 * The agent under --root-dir answers the whole listing when it reads the same runtime, its own pods
 * and every other (GET /v1/podview), so a listing loads neither gRPC nor the code that builds pod
 * statuses from the runtime; otherwise, or when it stops answering, the runtime is read here, with
 * the agent's pods asked for on its socket as before.
 */
export async function openPodLister(flags: GlobalFlags & { 'root-dir': string }): Promise<PodLister> {
  const endpoints = await resolveFromFlags(flags);
  const statusSocket = join(flags['root-dir'], 'podctl.sock');
  let direct: { view: PodView; client: CriClient } | undefined;
  return {
    async list(q) {
      if (!direct) {
        const params = new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined));
        const answer = await getFromStatusSocket<PodViewAnswer>(statusSocket, `/v1/podview?${params}`).catch(() => undefined);
        if (answer?.runtimeEndpoint === endpoints.runtime.endpoint) return answer.items;
        const [{ client }, { PodView }, { realClock }, { hostIP }] = await Promise.all([
          clientFor(endpoints),
          import('../core/podview/index.js'),
          import('../core/clock.js'),
          import('../core/node/paths.js'),
        ]);
        direct = { client, view: new PodView({ runtime: client, images: client, clock: realClock, statusSocket, hostIP: hostIP() }) };
      }
      return direct.view.list(q);
    },
    changes(wake) {
      let cancel: (() => void) | undefined;
      let done = false;
      // Loaded for -w only: the watch's HTTP client is no part of a listing.
      // No agent, or its watch breaks: the listing is still read every second.
      import('../core/node/client.js')
        .then(({ AgentClient }) => {
          if (!done)
            cancel = new AgentClient(flags['root-dir']).watchPods(
              () => wake(),
              () => undefined,
            ).cancel;
        })
        .catch(() => undefined);
      return () => {
        done = true;
        cancel?.();
      };
    },
    close: () => direct?.client.close(),
  };
}

/** What wakes followPods and what ends it. */
export interface FollowOptions {
  /** Calls wake whenever something may have changed (the agent's watch); returns the unsubscribe. */
  changes?: (wake: () => void) => () => void;
  /** The listing is read at least this often (default 1 s): for pods no watch tells of. */
  pollMs?: number;
  /** Ends the follow (default: SIGINT or SIGTERM). */
  signal?: AbortSignal;
}

/**
 * get pods -w: reads the view whenever `changes` says so (the agent publishes each status as its
 * loop sets it, so a short-lived state such as Error before CrashLoopBackOff is seen) and at least
 * every pollMs, and prints a pod again when its row (or object) changes.
 */
export async function followPods(
  list: () => Promise<ViewedPod[]>,
  first: ViewedPod[],
  output: PodOutput,
  opts: PodTableOptions,
  log: (text: string) => void,
  follow: FollowOptions = {},
): Promise<void> {
  const { podRow, podTableHead, renderOnePod } = await import('./table.js');
  const key = (p: IPod) => podMeta(p).uid;
  // The row without AGE (and the restart's "ago"): what changes by itself is not a change.
  const fingerprint = (p: IPod) =>
    output === 'table' || output === 'wide'
      ? JSON.stringify(
          podRow(p, { ...opts, now: 0 })
            .filter((_, i) => podTableHead(opts)[i] !== 'AGE')
            .map((c) => c.replace(/ \(.* ago\)$/, '')),
        )
      : JSON.stringify(p.status);
  const last = new Map(first.map((v) => [key(v.pod), { pod: v.pod, print: fingerprint(v.pod) }]));
  // After "No resources found", the first row comes with the header, as kubectl's.
  let headed = first.length > 0;
  const render = (pod: IPod) => {
    const text = renderOnePod(pod, output, opts, !headed);
    headed = true;
    return text;
  };
  let stopped = false;
  let wake: (() => void) | undefined;
  // A change told while a listing is under way is read by the next one, at once.
  let changed = false;
  const stop = () => {
    stopped = true;
    wake?.();
  };
  const signal = follow.signal;
  if (signal?.aborted) stopped = true;
  if (signal) signal.addEventListener('abort', stop, { once: true });
  else {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
  const unsubscribe = follow.changes?.(() => {
    changed = true;
    wake?.();
  });
  try {
    while (!stopped) {
      if (!changed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, follow.pollMs ?? 1000);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      changed = false;
      if (stopped) break;
      let now: ViewedPod[];
      try {
        now = await list();
      } catch (err) {
        process.stderr.write(`${(err as Error).message}\n`);
        continue;
      }
      const present = new Set<string>();
      for (const v of now) {
        present.add(key(v.pod));
        const print = fingerprint(v.pod);
        if (last.get(key(v.pod))?.print === print) continue;
        last.set(key(v.pod), { pod: v.pod, print });
        log(render(v.pod));
      }
      for (const [uid, { pod }] of last) {
        if (present.has(uid)) continue;
        last.delete(uid);
        // Gone from the runtime: one last row saying so (STATUS shows the phase when no container has a reason).
        // Its deletionTimestamp goes with it: the row says Deleted, not Terminating.
        const { deletionTimestamp: _deleted, ...metadata } = pod.metadata ?? {};
        const gone: IPod = {
          ...pod,
          metadata,
          status: { ...pod.status, phase: 'Deleted' as 'Unknown', containerStatuses: [], initContainerStatuses: [] },
        };
        log(render(gone));
      }
    }
  } finally {
    unsubscribe?.();
    if (signal) signal.removeEventListener('abort', stop);
    else {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  }
}
