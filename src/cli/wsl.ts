import { existsSync, readFileSync } from 'node:fs';
import { release } from 'node:os';

/**
 * What oclif asks wsl-utils at every start (scripts/bundle.mjs): whether this is WSL, answered as
 * is-wsl does. is-wsl and its two helpers are ES modules whose default imports of process and fs
 * cost the bundle's interop a copy of those objects' properties, a few ms of every start.
 */
export interface WslHost {
  platform: NodeJS.Platform;
  /** os.release(). */
  release: string;
  /** A file's text, or undefined when it cannot be read. */
  read(path: string): string | undefined;
  exists(path: string): boolean;
}

/** A Linux kernel of Microsoft's (or WSL's own paths, for custom kernels), and not inside a container. */
export function detectWsl(host: WslHost): boolean {
  if (host.platform !== 'linux') return false;
  const microsoft = (text: string | undefined) => text?.toLowerCase().includes('microsoft') === true;
  const wsl = microsoft(host.release) || microsoft(host.read('/proc/version')) || host.exists('/proc/sys/fs/binfmt_misc/WSLInterop') || host.exists('/run/WSL');
  return wsl && !insideContainer(host);
}

/** Podman's and Docker's marks, as is-inside-container and is-docker look for them. */
function insideContainer(host: WslHost): boolean {
  return host.exists('/run/.containerenv') || host.exists('/.dockerenv') || host.read('/proc/self/cgroup')?.includes('docker') === true;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

export const isWsl = detectWsl({ platform: process.platform, release: release(), read, exists: existsSync });
