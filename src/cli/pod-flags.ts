import { hostname } from 'node:os';
import { Flags } from '@oclif/core';
import { DEFAULT_ROOT_DIR } from '../core/node/defaults.js';

/** Flags of the commands that find pods: the watch to ask first, and the namespace. */
export const podViewFlags = {
  'root-dir': Flags.string({
    summary: 'State directory of the watch to ask first (its podctl.sock); without one, the runtime is read.',
    default: DEFAULT_ROOT_DIR,
    env: 'PODCTL_ROOT_DIR',
  }),
};

export const namespaceFlag = Flags.string({ char: 'n', summary: 'Namespace.', default: 'default' });

/** The node name of static pods' UIDs: its own module, so that plan and validate need none of the node's wiring. */
export const nodeNameFlag = Flags.string({ summary: 'Node name recorded in pod specs and static pod UIDs.', default: hostname() });

/** `pod/NAME` or `NAME`, as kubectl takes a pod argument. */
export function podArg(arg: string): string {
  return arg.replace(/^pods?\//, '');
}
