import { hostname, networkInterfaces } from 'node:os';
import { Flags } from '@oclif/core';
import type { CriClient } from '../core/cri/client.js';
import { realClock } from '../core/clock.js';
import { Kubelet, type KubeletOptions } from '../core/kubelet.js';

import { DEFAULT_LOG_ROOT, DEFAULT_ROOT_DIR, nodeAgentLabel } from '../core/node/paths.js';

export { DEFAULT_LOG_ROOT, DEFAULT_ROOT_DIR };

/** Flags of the commands that run pods. */
export const nodeFlags = {
  'log-root': Flags.string({
    summary: 'Directory for container logs (<log-root>/<namespace>_<name>_<uid>/<container>/<n>.log).',
    env: 'PODCTL_LOG_ROOT',
    default: DEFAULT_LOG_ROOT,
  }),
  'node-name': Flags.string({ summary: 'Node name recorded in pod specs and static pod UIDs.', default: hostname() }),
  'allow-privileged': Flags.boolean({ summary: 'Allow privileged containers (securityContext.privileged: true); refused otherwise.' }),
  'root-dir': Flags.string({
    summary: 'State directory: per-pod files (<root-dir>/pods/<uid>, e.g. termination messages) and the API socket of its agent.',
    default: DEFAULT_ROOT_DIR,
    env: 'PODCTL_ROOT_DIR',
  }),
};

/** The first non-internal IPv4 address: what the kubelet reports as hostIP. */
export function hostIP(): string | undefined {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

/** The agent label of a state dir's node (kept under its old name for callers). */
export const watchAgent = nodeAgentLabel;

export function buildKubelet(
  client: CriClient,
  flags: { 'log-root': string; 'node-name': string; 'root-dir': string; 'allow-privileged'?: boolean },
  runtimeName?: string,
  extra: Partial<Pick<KubeletOptions, 'agent' | 'metrics' | 'trace' | 'removeOrphans'>> = {},
): Kubelet {
  return new Kubelet({
    ...extra,
    runtime: client,
    images: client,
    clock: realClock,
    logRoot: flags['log-root'],
    rootDir: flags['root-dir'],
    allowPrivileged: flags['allow-privileged'] ?? false,
    nodeName: flags['node-name'],
    hostIP: hostIP(),
    runtimeName,
  });
}
