import { resolve } from 'node:path';
import type { CriClient } from '../core/cri/client.js';
import { realClock } from '../core/clock.js';
import type { Kubelet, KubeletOptions } from '../core/kubelet.js';
import type { NodeOptions } from '../core/node/node.js';
import { parseDuration } from '../core/util/duration.js';
import { PodctlError } from '../core/errors.js';
import { DEFAULT_CONTAINER_LOG_MAX_FILES } from '../core/logs/rotation.js';
import { DEFAULT_IMAGE_GC_HIGH_THRESHOLD, DEFAULT_IMAGE_GC_LOW_THRESHOLD } from '../core/kuberuntime/image-gc.js';
import { bytes } from '../core/util/quantity.js';
import { DEFAULT_LOG_ROOT, DEFAULT_ROOT_DIR, hostIP, nodeAgentLabel } from '../core/node/paths.js';
import { nodeFlags } from './node-flags.js';
import { nodeInfoFromFlags } from './node-info.js';

export { DEFAULT_LOG_ROOT, DEFAULT_ROOT_DIR };

export { nodeFlags, nodeInfoFromFlags };

/** The image GC policy the flags ask for; a usage error names the flag. */
export function imageGCPolicy(flags: {
  'image-gc-high-threshold'?: number;
  'image-gc-low-threshold'?: number;
  'image-minimum-gc-age'?: string;
}): NonNullable<KubeletOptions['imageGC']> {
  const high = flags['image-gc-high-threshold'] ?? DEFAULT_IMAGE_GC_HIGH_THRESHOLD;
  const low = flags['image-gc-low-threshold'] ?? DEFAULT_IMAGE_GC_LOW_THRESHOLD;
  if (low > high)
    throw new PodctlError(`--image-gc-low-threshold (${low}) must not be above --image-gc-high-threshold (${high})`, { exitCode: 2 });
  const age = flags['image-minimum-gc-age'] ?? '2m';
  return {
    highThresholdPercent: high,
    lowThresholdPercent: low,
    minAgeMs: /^0+(s|m|h|ms)?$/.test(age) ? 0 : parseDuration(age, '--image-minimum-gc-age'),
  };
}

/** The container log rotation policy the flags ask for; a usage error names the flag. */
export function containerLogPolicy(flags: {
  'container-log-max-size'?: string;
  'container-log-max-files'?: number;
  'container-log-monitor-interval'?: string;
}): NonNullable<KubeletOptions['containerLogs']> {
  const size = bytes(flags['container-log-max-size'] ?? '10Mi');
  if (size === undefined || size < 0) {
    throw new PodctlError(
      `--container-log-max-size: expected a size such as 10Mi or 0 (no rotation), got ${JSON.stringify(flags['container-log-max-size'])}`,
      { exitCode: 2 },
    );
  }
  return {
    maxSizeBytes: size,
    maxFiles: flags['container-log-max-files'] ?? DEFAULT_CONTAINER_LOG_MAX_FILES,
    monitorIntervalMs: parseDuration(flags['container-log-monitor-interval'] ?? '10s', '--container-log-monitor-interval'),
  };
}

/** The agent label of a state dir's node (kept under its old name for callers). */
export const watchAgent = nodeAgentLabel;

type HygieneFlags = {
  'maximum-dead-containers-per-container'?: number;
  'maximum-dead-containers'?: number;
  'image-gc-high-threshold'?: number;
  'image-gc-low-threshold'?: number;
  'image-minimum-gc-age'?: string;
} & Parameters<typeof containerLogPolicy>[0];

/** Log rotation, image GC and container GC as the flags ask (the kubelet's own flags). */
export function hygienePolicies(flags: HygieneFlags): Pick<KubeletOptions, 'containerLogs' | 'imageGC' | 'containerGC'> {
  return {
    containerLogs: containerLogPolicy(flags),
    imageGC: imageGCPolicy(flags),
    containerGC: {
      maxPerPodContainer: flags['maximum-dead-containers-per-container'] ?? 1,
      maxContainers: flags['maximum-dead-containers'] ?? -1,
    },
  };
}

/** The flags every kubelet a command builds reads: where its state and logs go, its name, what it may run, its hygiene. */
type KubeletFlags = {
  'log-root': string;
  'node-name': string;
  'root-dir': string;
  'allow-privileged'?: boolean;
  'runtime-handler'?: string;
} & HygieneFlags;

export async function buildKubelet(
  client: CriClient,
  flags: KubeletFlags,
  runtimeName?: string,
  extra: Partial<Pick<KubeletOptions, 'agent' | 'metrics' | 'trace' | 'removeOrphans' | 'eventsJournal'>> = {},
): Promise<Kubelet> {
  const { newKubelet } = await import('../core/node/compose.js');
  return newKubelet({
    ...extra,
    runtime: client,
    images: client,
    clock: realClock,
    logRoot: flags['log-root'],
    rootDir: flags['root-dir'],
    allowPrivileged: flags['allow-privileged'] ?? false,
    runtimeHandler: flags['runtime-handler'],
    nodeName: flags['node-name'],
    hostIP: hostIP(),
    runtimeName,
    ...hygienePolicies(flags),
  });
}

/** What every node a command runs (agent, watch, foreground run) takes from the shared flags. */
export function nodeOptionsFromFlags(
  client: CriClient,
  flags: KubeletFlags & { 'pleg-relist-period': string } & Parameters<typeof nodeInfoFromFlags>[0],
  runtimeName: string | undefined,
): Pick<
  NodeOptions,
  | 'runtime'
  | 'images'
  | 'clock'
  | 'rootDir'
  | 'logRoot'
  | 'nodeName'
  | 'hostIP'
  | 'runtimeName'
  | 'allowPrivileged'
  | 'runtimeHandler'
  | 'hygiene'
  | 'relistPeriodMs'
  | 'admission'
> {
  return {
    runtime: client,
    images: client,
    clock: realClock,
    rootDir: flags['root-dir'],
    logRoot: flags['log-root'],
    nodeName: flags['node-name'],
    hostIP: hostIP(),
    runtimeName,
    allowPrivileged: flags['allow-privileged'],
    runtimeHandler: flags['runtime-handler'],
    hygiene: hygienePolicies(flags),
    relistPeriodMs: parseDuration(flags['pleg-relist-period'], '--pleg-relist-period'),
    admission: nodeInfoFromFlags(flags),
  };
}

/**
 * What an agent started in the background needs to be the node this command describes: the
 * node flags the command line gave (paths made absolute, as the agent runs elsewhere) and the
 * kubelet config file, which it reads itself.
 */
export function agentArgs(
  flags: Record<string, unknown>,
  metadata: { flags: Record<string, { setFromDefault?: boolean } | undefined> },
  opts: { also?: string[]; always?: string[]; omit?: string[] } = {},
): string[] {
  const args: string[] = [];
  const paths = new Set(['root-dir', 'log-root', 'kubelet-config']);
  const always = new Set(opts.always ?? ['root-dir', 'log-root', 'node-name']);
  for (const name of [...Object.keys(nodeFlags), ...(opts.also ?? [])]) {
    const value = flags[name];
    if (value === undefined || value === false || opts.omit?.includes(name)) continue;
    if (!always.has(name) && (metadata.flags[name]?.setFromDefault ?? false)) continue;
    if (value === true) args.push(`--${name}`);
    else args.push(`--${name}`, paths.has(name) ? resolve(String(value)) : String(value));
  }
  return args;
}
