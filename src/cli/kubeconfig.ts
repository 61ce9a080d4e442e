import { lstatSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, sep } from 'node:path';
import yaml from 'js-yaml';
import { errorMessage, PodctlError } from '../core/errors.js';
import { readKubeCredentials, writeFileAtomic } from '../core/kubeapi/certs.js';
import { hasContext, kubeconfigFor, mergeKubeconfig, readKubeEndpoint } from '../core/kubeapi/kubeconfig.js';

export const CONTEXT_NAME = 'podctl';

/** The agent's kube API state under a root dir: its credentials and its recorded endpoint. */
export function kubeApiDir(rootDir: string): string {
  return join(rootDir, 'kubeapi');
}

/** The file kubectl would write: $KUBECONFIG's first entry, else ~/.kube/config. */
export function defaultKubeconfigPath(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const first = (env.KUBECONFIG ?? '').split(delimiter).find((p) => p !== '');
  return first ?? join(home, '.kube', 'config');
}

/** A path as a person reads it: the home directory as ~. */
export function displayPath(path: string, home: string = homedir()): string {
  return path === home || path.startsWith(home + sep) ? `~${path.slice(home.length)}` : path;
}

/** This node's kubeconfig (a v1 Config), from what the agent made and recorded under the root dir. */
export function nodeKubeconfig(rootDir: string): Record<string, unknown> {
  const dir = kubeApiDir(rootDir);
  // The endpoint first: without an agent started, its message says what to do.
  const server = readKubeEndpoint(dir);
  return kubeconfigFor(readKubeCredentials(dir), server, { name: CONTEXT_NAME });
}

export function kubeconfigYaml(config: Record<string, unknown>): string {
  return yaml.dump(config, { noRefs: true, lineWidth: -1 });
}

/**
 * Adds (or updates) the podctl cluster, user and context in the kubeconfig at `path`, keeping everything else in it.
 * A file that is not a kubeconfig is refused and left as it was.
 */
export function mergeIntoKubeconfig(rootDir: string, path: string): { path: string; action: 'added' | 'updated' } {
  const ours = nodeKubeconfig(rootDir);
  const target = resolveLink(path);
  let text: string | undefined;
  try {
    text = readFileSync(target, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new PodctlError(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}); nothing written`);
  }
  let existing: unknown;
  try {
    existing = text === undefined ? undefined : yaml.load(text, { filename: path });
  } catch (err) {
    throw new PodctlError(`${path}: not a kubeconfig podctl can read (${firstLine(errorMessage(err))}); nothing written`);
  }
  let merged: Record<string, unknown>;
  try {
    merged = mergeKubeconfig(existing, ours);
  } catch (err) {
    throw new PodctlError(`${path}: ${errorMessage(err)}; nothing written`);
  }
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  writeFileAtomic(target, kubeconfigYaml(merged), 0o600);
  return { path, action: hasContext(existing, CONTEXT_NAME) ? 'updated' : 'added' };
}

/** A kubeconfig that is a symlink (to a dotfiles repository, say) is written where it points, and stays a link. */
function resolveLink(path: string): string {
  try {
    return lstatSync(path).isSymbolicLink() ? realpathSync(path) : path;
  } catch {
    return path;
  }
}

function firstLine(s: string): string {
  return s.split('\n')[0];
}
