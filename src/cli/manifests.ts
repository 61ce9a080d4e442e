import { manifestSetFromTexts, type ManifestSet, type ReadManifests } from '../core/pod/index.js';
import { noPodFound, printWarnings, readManifestArgs } from './manifest-args.js';
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
