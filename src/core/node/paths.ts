import { createHash } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';

export const DEFAULT_LOG_ROOT = '/var/log/podctl/pods';
export const DEFAULT_ROOT_DIR = '/var/lib/podctl';

/** The agent's API socket on a state dir. */
export const agentSocket = (rootDir: string): string => join(rootDir, 'podctl.sock');
/** Where an agent started in the background writes its output. */
export const agentLogFile = (rootDir: string): string => join(rootDir, 'agent.log');
/** The pods handed to the agent, one file per pod: the node's equivalent of /etc/kubernetes/manifests. */
export const appliedDir = (rootDir: string): string => join(rootDir, 'applied');
/** A pod's file there: namespace and name are DNS labels, so `_` cannot be part of either. */
export const appliedFileName = (namespace: string, name: string): string => `${namespace}_${name}.yaml`;

/**
 * Removes a pod's applied file while no agent runs on the state dir, so that the agent does not
 * start the pod again when it next starts (a running agent is asked instead); whether there was one.
 */
export function forgetApplied(rootDir: string, namespace: string, name: string): boolean {
  try {
    unlinkSync(join(appliedDir(rootDir), appliedFileName(namespace, name)));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * The agent recorded on the pods of a state dir: "watch" on the default root dir (the name pods of
 * earlier versions carry), and one per other root dir, so that the agent of another root dir never
 * takes this one's pods for orphans and removes them.
 */
export function nodeAgentLabel(rootDir: string): string {
  const dir = resolve(rootDir);
  return dir === DEFAULT_ROOT_DIR ? 'watch' : `watch-${createHash('sha256').update(dir).digest('hex').slice(0, 10)}`;
}

/** The first non-internal IPv4 address: what the kubelet reports as hostIP. */
export function hostIP(): string | undefined {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}
