// podctl's default directories, in a module of their own: the flags that default to them are declared
// with the command index, which must not load the path handling of src/core/node/paths.ts.
export const DEFAULT_LOG_ROOT = '/var/log/podctl/pods';
export const DEFAULT_ROOT_DIR = '/var/lib/podctl';
