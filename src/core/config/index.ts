export { FileSource, type FileSourceOptions, type SourceError } from './file-source.js';
export { HttpSource, type HttpSourceOptions } from './http-source.js';
export { PodConfigMerger } from './merger.js';
