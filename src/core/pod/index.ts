export * from './types.js';
export { applyPodDefaults, defaultPullPolicy } from './defaults.js';
export { hasDerivedUID, staticPodUID } from './uid.js';
export { isDNS1123Label, isDNS1123Subdomain } from './names.js';
export { isImageReference, unknownFields, validateDocument } from './validate.js';
export {
  loadManifests,
  manifestSetFromTexts,
  manifestSetWithDocuments,
  parseManifestDocuments,
  parseManifestText,
  CONFIG_FILE_ANNOTATION,
  CONFIG_HASH_ANNOTATION,
  CONFIG_SEEN_ANNOTATION,
  CONFIG_SOURCE_ANNOTATION,
  type LoadOptions,
  type ManifestDocuments,
  type ManifestSet,
  type ParsedManifest,
} from './load.js';
export { formatProblem, ManifestError } from './problems.js';
export { isManifestFileName, readManifests, type ManifestText, type ReadManifests } from './read.js';
export { missingReferences, setLookup, type MissingReference, type ObjectLookup } from './references.js';
