import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { CONFIG_FILE_ANNOTATION } from '../pod/load.js';
import { podMeta } from '../util/pod-key.js';
import { appliedDir, appliedFileName } from './paths.js';

/** Which of a node's sources keeps a pod: set by the node on every pod it keeps, so a command can say who. */
export const KEPT_BY_ANNOTATION = 'podctl.io/kept-by';

/** The node's sources: handed over (run --detach, the API), a foreground run, watch's PATH and URL. */
export type Keeper = 'applied' | 'run' | 'file' | 'http';

/** What keeps the pod on this root dir and how to change it, in one sentence. */
export function keptByMessage(pod: IPod, rootDir: string, where: { manifestPath?: string; manifestUrl?: string } = {}): string {
  const m = podMeta(pod);
  const keeper = pod.metadata?.annotations?.[KEPT_BY_ANNOTATION] as Keeper | undefined;
  const file = pod.metadata?.annotations?.[CONFIG_FILE_ANNOTATION];
  switch (keeper) {
    case 'applied':
      return (
        `handed to the agent by run --detach on ${rootDir}, which keeps it; change it with ` +
        `podctl run --detach, or delete it with podctl delete pod ${m.name} -n ${m.namespace}`
      );
    case 'run':
      return `the foreground podctl run on ${rootDir} keeps this pod${file ? ` (from ${file})` : ''}; stop that run first`;
    case 'http':
      return (
        `the watch on ${rootDir} keeps this pod from ${where.manifestUrl ?? 'its --manifest-url'}; ` +
        `change it there, or stop that watch first`
      );
    default:
      return (
        `the watch on ${rootDir} keeps this pod from ${file ?? where.manifestPath ?? 'its manifests'}; ` +
        `change its manifest there, or stop that watch first`
      );
  }
}

/** A pod handed over while no agent runs: its applied file brings it back at the agent's next start. */
export function appliedWhileStopped(rootDir: string, namespace: string, name: string): string | undefined {
  if (!existsSync(join(appliedDir(rootDir), appliedFileName(namespace, name)))) return undefined;
  return (
    `handed to the agent by run --detach on ${rootDir}: the agent, stopped now, starts it again at its next ` +
    `start; change it with podctl run --detach, or delete it with podctl delete pod ${name} -n ${namespace}`
  );
}

/** The pods the agent on this root dir keeps, by namespace/name; undefined when no agent answers there. */
export async function podsKeptByAgent(rootDir: string): Promise<Map<string, IPod> | undefined> {
  try {
    // Imported here: a command that finds no agent need not load Node's http.
    const { getFromStatusSocket } = await import('../status/client.js');
    const list = await getFromStatusSocket<{ items: IPod[] }>(join(rootDir, 'podctl.sock'), '/pods', 1000);
    return new Map(list.items.map((p) => [`${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`, p]));
  } catch {
    return undefined;
  }
}
