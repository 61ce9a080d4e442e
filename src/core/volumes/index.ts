export type { NodeInfo, PodVolumeDir, PodVolumes, VolumeKind, VolumeObjects } from './types.js';
export { VolumeError, setUpError } from './errors.js';
export { VolumeManager, PLUGIN_DIRS, checkHostPathType, removePodDirectory, volumeKind, type VolumeManagerOptions } from './manager.js';
export { writePayload, cleanItemPath, DATA_DIR_NAME, type FileProjection, type Payload, type WriteOptions } from './atomic-writer.js';
export { formatMap, goQuote, resourceFieldValue, volumeFieldValue, VOLUME_FIELD_PATHS, type Allocatable } from './downward.js';
export { DEFAULT_MODE } from './payload.js';
export { bindSubPath, expandSubPathExpr, openInside, prepareSubPath } from './subpath.js';
export { mountTable, mountsUnder, isMountPoint, type MountEntry } from './mount.js';
export { setVolumeOwnership } from './ownership.js';
