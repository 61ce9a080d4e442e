import { hostname, networkInterfaces } from 'node:os';
import { Flags } from '@oclif/core';
import type { CriClient } from '../core/cri/client.js';
import { realClock } from '../core/clock.js';
import { Kubelet, type KubeletOptions } from '../core/kubelet.js';

export const DEFAULT_LOG_ROOT = '/var/log/podctl/pods';

/** Flags of the commands that run pods. */
export const nodeFlags = {
  'log-root': Flags.string({
    summary: 'Directory for container logs (<log-root>/<namespace>_<name>_<uid>/<container>/<n>.log).',
    env: 'PODCTL_LOG_ROOT',
    default: DEFAULT_LOG_ROOT,
  }),
  'node-name': Flags.string({ summary: 'Node name recorded in pod specs and static pod UIDs.', default: hostname() }),
};

/** The first non-internal IPv4 address: what the kubelet reports as hostIP. */
export function hostIP(): string | undefined {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

export function buildKubelet(
  client: CriClient,
  flags: { 'log-root': string; 'node-name': string },
  runtimeName?: string,
  extra: Partial<Pick<KubeletOptions, 'agent' | 'metrics' | 'trace'>> = {},
): Kubelet {
  return new Kubelet({
    ...extra,
    runtime: client,
    images: client,
    clock: realClock,
    logRoot: flags['log-root'],
    nodeName: flags['node-name'],
    hostIP: hostIP(),
    runtimeName,
  });
}
