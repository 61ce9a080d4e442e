export * from './types.js';
export { applyPodDefaults, defaultPullPolicy } from './defaults.js';
export { staticPodUID } from './uid.js';
export { isDNS1123Label, isDNS1123Subdomain } from './names.js';
export { isImageReference, unknownFields, validateDocument } from './validate.js';
export {
  loadManifests,
  parseManifestText,
  formatProblem,
  isManifestFileName,
  ManifestError,
  CONFIG_FILE_ANNOTATION,
  CONFIG_HASH_ANNOTATION,
  CONFIG_SEEN_ANNOTATION,
  CONFIG_SOURCE_ANNOTATION,
  type LoadOptions,
  type ManifestSet,
  type ParsedManifest,
} from './load.js';
export { missingReferences, setLookup, type MissingReference, type ObjectLookup } from './references.js';
