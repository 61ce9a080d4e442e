import type { IPod } from 'kubernetes-models/v1';
import { admitPods } from '../core/admission.js';
import { PodctlError } from '../core/errors.js';
import { manifestSetFromTexts, type ManifestSet, type ReadManifests } from '../core/pod/index.js';
import { podKey } from '../core/util/pod-key.js';
import { noPodFound, printWarnings, readManifestArgs } from './manifest-args.js';
import { sayRejected } from './say.js';
// Here before it moved to the core, where the agent admits the pods a command hands it.
export { admitPods };

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
 * The pods admitted to run here, each rejected one said. Nothing runs when none is admitted, nor, with
 * `all` (a hand-over to the agent), when any is rejected: the error says so.
 */
export function admitOrRefuse(pods: IPod[], opts: Parameters<typeof admitPods>[1], all: boolean): IPod[] {
  const { admitted, rejected } = admitPods(pods, opts);
  for (const r of rejected) sayRejected(podKey(r.pod), r.message);
  if (all && rejected.length) throw new PodctlError(`${rejected.length} pod(s) rejected at admission; nothing was handed to the agent`);
  if (admitted.length === 0) throw new PodctlError('no pod was admitted', { exitCode: 1 });
  return admitted;
}
