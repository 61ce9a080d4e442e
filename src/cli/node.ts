import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { hostname, networkInterfaces } from 'node:os';
import { Flags } from '@oclif/core';
import type { CriClient } from '../core/cri/client.js';
import { realClock } from '../core/clock.js';
import { Kubelet, type KubeletOptions } from '../core/kubelet.js';
import { allocatable, hostCapacity, hostHasAppArmor, nodeLabels, parseMapFlag, parseReserved, type NodeInfo } from '../core/admission.js';

export const DEFAULT_LOG_ROOT = '/var/log/podctl/pods';
export const DEFAULT_ROOT_DIR = '/var/lib/podctl';

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
    summary: 'State directory: per-pod files (<root-dir>/pods/<uid>, e.g. termination messages) and the status socket of watch.',
    default: DEFAULT_ROOT_DIR,
    env: 'PODCTL_ROOT_DIR',
  }),
};

/** The kubelet's admission flags (run and sync-once). */
export const admissionFlags = {
  'node-labels': Flags.string({ summary: 'Labels of this node, key=value,… (kubelet --node-labels), over kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch; nodeSelector and required nodeAffinity are matched against them.' }),
  'system-reserved': Flags.string({ summary: 'Resources kept from pods for the system, e.g. cpu=100m,memory=100Mi (kubelet --system-reserved).' }),
  'kube-reserved': Flags.string({ summary: 'Resources kept from pods for podctl and the runtime, e.g. cpu=100m,memory=100Mi (kubelet --kube-reserved).' }),
  'max-pods': Flags.integer({ summary: 'Pods this node admits at most (kubelet --max-pods).', default: 110, min: 1 }),
};

/** This node for admission: its labels and allocatable (capacity minus what is reserved). */
export function nodeInfoFromFlags(flags: { 'node-name': string; 'root-dir': string; 'node-labels'?: string; 'system-reserved'?: string; 'kube-reserved'?: string; 'max-pods': number }): NodeInfo {
  const capacity = hostCapacity(existsSync(flags['root-dir']) ? flags['root-dir'] : '/', flags['max-pods']);
  return {
    name: flags['node-name'],
    labels: nodeLabels(flags['node-name'], parseMapFlag(flags['node-labels'], '--node-labels')),
    allocatable: allocatable(capacity, parseReserved(flags['system-reserved'], '--system-reserved'), parseReserved(flags['kube-reserved'], '--kube-reserved')),
    appArmor: hostHasAppArmor(),
  };
}

/** The first non-internal IPv4 address: what the kubelet reports as hostIP. */
export function hostIP(): string | undefined {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

/**
 * The agent a watch records on its pods: "watch" on the default root dir, and one per other root
 * dir, so that a second watch (on another root dir, which its lock allows) never takes the
 * first one's pods for orphans and removes them.
 */
export function watchAgent(rootDir: string): string {
  const dir = resolve(rootDir);
  return dir === DEFAULT_ROOT_DIR ? 'watch' : `watch-${createHash('sha256').update(dir).digest('hex').slice(0, 10)}`;
}

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
