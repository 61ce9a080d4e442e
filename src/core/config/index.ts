export { FileSource, type FileSourceOptions, type SourceError } from './file-source.js';
export { PodConfigMerger } from './merger.js';
