import { join } from 'node:path';
import type { CriClient } from '../core/cri/client.js';
import type { PodQuery, PodView, PodViewAnswer, ViewedPod } from '../core/podview/index.js';
import { getFromStatusSocket } from '../core/status/client.js';
import { clientFor, resolveFromFlags, type GlobalFlags } from './runtime.js';

/** Lists podctl's pods; close() when done. */
export interface PodLister {
  list(q: PodQuery): Promise<ViewedPod[]>;
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
    close: () => direct?.client.close(),
  };
}
