import { createHash } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { DNS1123_LABEL_EXPECTED, DNS1123_SUBDOMAIN_EXPECTED, isDNS1123Label, isDNS1123Subdomain } from '../pod/names.js';
import { safeJoin, UnsafePathError } from '../util/safe-path.js';
import { DEFAULT_ROOT_DIR } from './defaults.js';

export { DEFAULT_LOG_ROOT, DEFAULT_ROOT_DIR } from './defaults.js';

/** The agent's API socket on a state dir. */
export const agentSocket = (rootDir: string): string => join(rootDir, 'podctl.sock');
/** Where an agent started in the background writes its output. */
export const agentLogFile = (rootDir: string): string => join(rootDir, 'agent.log');
/** The pods handed to the agent, one file per pod: the node's equivalent of /etc/kubernetes/manifests. */
export const appliedDir = (rootDir: string): string => join(rootDir, 'applied');
/**
 * Why a pod's namespace or name cannot be one, as the API server validates them (a DNS-1123 label,
 * a DNS-1123 subdomain); undefined when both are valid. Checked before either reaches a path.
 */
export function podRefProblem(namespace: string, name: string): string | undefined {
  const ns = namespaceProblem(namespace);
  if (ns) return ns;
  if (!isDNS1123Subdomain(name)) return `pod name ${JSON.stringify(name)} is invalid: expected ${DNS1123_SUBDOMAIN_EXPECTED}`;
  return undefined;
}

/** Why a namespace cannot be one (a DNS-1123 label); undefined when it is valid. */
export function namespaceProblem(namespace: string): string | undefined {
  return isDNS1123Label(namespace) ? undefined : `namespace ${JSON.stringify(namespace)} is invalid: expected ${DNS1123_LABEL_EXPECTED}`;
}

/** A pod's file there: namespace and name are DNS-1123 (checked), so `_` cannot be part of either. */
export function appliedFileName(namespace: string, name: string): string {
  const problem = podRefProblem(namespace, name);
  if (problem) throw new UnsafePathError(problem);
  return `${namespace}_${name}.yaml`;
}

/** The namespace and name an applied file's name stands for; undefined for a name podctl never writes. */
export function parseAppliedFileName(file: string): { namespace: string; name: string } | undefined {
  const m = /^([^_]+)_([^_]+)\.yaml$/.exec(file);
  if (!m || podRefProblem(m[1]!, m[2]!)) return undefined;
  return { namespace: m[1]!, name: m[2]! };
}

/** A pod's applied file in an applied dir, built through safeJoin. Throws UnsafePathError for an invalid namespace or name. */
export function appliedFilePath(dir: string, namespace: string, name: string): string {
  return safeJoin(dir, [['applied file', appliedFileName(namespace, name)]]);
}

/**
 * Removes a pod's applied file while no agent runs on the state dir, so that the agent does not
 * start the pod again when it next starts (a running agent is asked instead); whether there was one.
 * Throws UnsafePathError, removing nothing, for an invalid namespace or name.
 */
export function forgetApplied(rootDir: string, namespace: string, name: string): boolean {
  const path = appliedFilePath(appliedDir(rootDir), namespace, name);
  try {
    unlinkSync(path);
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
