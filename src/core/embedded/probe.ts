import { existsSync } from 'node:fs';
import { embeddedEndpoint, type EmbeddedPaths } from './paths.js';
import { livePid } from './pid.js';

/** A pid file's process is ours only when its command line names our own config. */
export const isContainerd = (paths: EmbeddedPaths) => (cmd: string[]) =>
  cmd[0]?.endsWith('containerd') === true && cmd.includes(paths.configFile);
export const isRegistry = (paths: EmbeddedPaths) => (cmd: string[]) =>
  cmd.some((c) => c.endsWith('docker-registry')) && cmd.includes(paths.registryConfig);

/**
 * Whether the embedded containerd runs: endpoint resolution asks this on every command that may
 * talk to a runtime, so it reads a pid file and /proc only, and loads none of the set-up code.
 */
export function embeddedContainerd(paths: EmbeddedPaths): { endpoint: string; pid?: number; running: boolean } {
  const pid = livePid(paths.pidFile('containerd'), isContainerd(paths));
  return { endpoint: embeddedEndpoint(paths), pid, running: pid !== undefined && existsSync(paths.socket) };
}
