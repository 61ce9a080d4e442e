import { join } from 'node:path';

export interface EmbeddedPaths {
  rootDir: string;
  runDir: string;
  stateDir: string;
  socket: string;
  configFile: string;
  cniConfDir: string;
  cniDataDir: string;
  /** containerd's registry config_path: one hosts.toml per registry host. */
  certsDir: string;
  registryDir: string;
  registryConfig: string;
  imagesDir: string;
  logDir: string;
  pidFile(name: EmbeddedProcess): string;
}

export type EmbeddedProcess = 'containerd' | 'registry';

export const DEFAULT_EMBEDDED_ROOT = '/var/lib/podctl/embedded';
export const DEFAULT_EMBEDDED_RUN = '/run/podctl/embedded';

export function embeddedPaths(opts: { root?: string; runDir?: string } = {}): EmbeddedPaths {
  const rootDir = opts.root ?? process.env.PODCTL_EMBEDDED_ROOT ?? DEFAULT_EMBEDDED_ROOT;
  const runDir = opts.runDir ?? process.env.PODCTL_EMBEDDED_RUN ?? DEFAULT_EMBEDDED_RUN;
  return {
    rootDir,
    runDir,
    stateDir: join(runDir, 'state'),
    socket: join(runDir, 'containerd.sock'),
    configFile: join(rootDir, 'containerd.toml'),
    cniConfDir: join(rootDir, 'cni', 'net.d'),
    cniDataDir: join(rootDir, 'cni', 'ipam'),
    certsDir: join(rootDir, 'certs.d'),
    registryDir: join(rootDir, 'registry'),
    registryConfig: join(rootDir, 'registry.yml'),
    imagesDir: join(rootDir, 'images'),
    logDir: join(rootDir, 'logs'),
    pidFile: (name) => join(runDir, `${name}.pid`),
  };
}

export function embeddedEndpoint(paths: EmbeddedPaths = embeddedPaths()): string {
  return `unix://${paths.socket}`;
}

export function registryPort(): number {
  const raw = process.env.PODCTL_REGISTRY_PORT;
  const port = raw ? Number(raw) : 5000;
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : 5000;
}
