import type { IPod } from 'kubernetes-models/v1';
import { manifestSetFromTexts, type ManifestSet, type ReadManifests } from '../core/pod/index.js';
import { noPodFound, printWarnings, readManifestArgs } from './manifest-args.js';
import { join } from 'node:path';
import { podKey } from '../core/util/pod-key.js';

// Here before it moved to the core, where the agent admits the pods a command hands it.
export { admitPods } from '../core/admission.js';

/** Loads the manifests named on the command line; warnings go to stderr. */
export async function loadPodsFromArgs(paths: string[], nodeName: string): Promise<ManifestSet> {
  return podsFromManifests(await readManifestArgs(paths), paths, nodeName);
}

/** The pods of manifests read (readManifestArgs), validated here; warnings go to stderr. */
export function podsFromManifests(read: ReadManifests, paths: string[], nodeName: string): ManifestSet {
  const set = manifestSetFromTexts(read, { nodeName });
  printWarnings(set.warnings);
  if (set.pods.length === 0) throw noPodFound(paths);
  return set;
}

// Commands that read stdin import it from here.
export { readStdin } from './manifest-args.js';

/**
 * The pods a running watch keeps on this state dir (namespace/name): run and
 * sync-once leave them to it rather than fight over them (and kill them on exit).
 */
export async function podsKeptByWatch(rootDir: string): Promise<Set<string>> {
  try {
    // Imported here: validate, which reads manifests, makes no request and need not load Node's http.
    const { getFromStatusSocket } = await import('../core/status/client.js');
    const list = await getFromStatusSocket<{ items: IPod[] }>(join(rootDir, 'podctl.sock'), '/pods', 1000);
    return new Set(list.items.map((p) => podKey(p)));
  } catch {
    return new Set();
  }
}
