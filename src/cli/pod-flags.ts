import { Flags } from '@oclif/core';
import { DEFAULT_ROOT_DIR } from '../core/node/paths.js';

/** Flags of the commands that find pods: the watch to ask first, and the namespace. */
export const podViewFlags = {
  'root-dir': Flags.string({ summary: 'State directory of the watch to ask first (its podctl.sock); without one, the runtime is read.', default: DEFAULT_ROOT_DIR, env: 'PODCTL_ROOT_DIR' }),
};

export const namespaceFlag = Flags.string({ char: 'n', summary: 'Namespace.', default: 'default' });
