import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { EmbeddedRuntimeError } from './errors.js';
import { run } from './process.js';

/** What the embedded runtime needs, and the Debian package that brings each. */
export const REQUIREMENTS: { what: string; paths: string[]; pkg: string }[] = [
  { what: 'containerd', paths: ['containerd', 'containerd-shim-runc-v2'], pkg: 'containerd' },
  { what: 'runc', paths: ['runc'], pkg: 'runc' },
  // A second OCI runtime, registered as the handler "crun" (a RuntimeClass's handler, or --runtime-handler).
  { what: 'crun', paths: ['crun'], pkg: 'crun' },
  {
    what: 'CNI plugins',
    paths: ['/usr/lib/cni/bridge', '/usr/lib/cni/host-local', '/usr/lib/cni/portmap', '/usr/lib/cni/loopback'],
    pkg: 'containernetworking-plugins',
  },
  { what: 'iptables', paths: ['iptables'], pkg: 'iptables' },
  { what: 'image registry', paths: ['docker-registry'], pkg: 'docker-registry' },
  { what: 'umoci', paths: ['umoci'], pkg: 'umoci' },
  { what: 'skopeo', paths: ['skopeo'], pkg: 'skopeo' },
  { what: 'static busybox', paths: ['/bin/busybox'], pkg: 'busybox-static' },
  { what: 'catatonit', paths: ['catatonit'], pkg: 'catatonit' },
  // Not for the runtime itself: checks the boot unit `podctl agent install` writes (its test runs it).
  { what: 'systemd-analyze', paths: ['systemd-analyze'], pkg: 'systemd' },
];

export function which(name: string): string | undefined {
  if (name.startsWith('/')) return existsSync(name) ? name : undefined;
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/sbin', '/sbin', '/usr/bin', '/bin']);
  for (const dir of dirs) {
    const p = join(dir, name);
    if (dir && existsSync(p)) return p;
  }
  return undefined;
}

export function missingPackages(): string[] {
  return [...new Set(REQUIREMENTS.filter((r) => r.paths.some((p) => !which(p))).map((r) => r.pkg))];
}

/** Installs what is missing with apt-get when we are root; otherwise says exactly what to run. */
export async function ensurePackages(install: boolean, log: (line: string) => void): Promise<void> {
  const missing = missingPackages();
  if (missing.length === 0) return;
  const command = `apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  const isRoot = process.getuid?.() === 0;
  if (!install || !isRoot || !which('apt-get')) {
    const why = !install ? '--no-install was given' : !isRoot ? 'podctl is not running as root' : 'apt-get is not available';
    throw new EmbeddedRuntimeError(
      `the embedded runtime needs the Debian packages ${missing.join(', ')}, and ${why}`,
      `install them with: ${command}`,
    );
  }
  log(`installing ${missing.join(', ')} with apt-get (once)…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    await run('apt-get', ['update', '-qq'], { env, timeoutMs: 600_000 });
    await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env, timeoutMs: 900_000 });
  } catch (err) {
    throw new EmbeddedRuntimeError(`installing ${missing.join(', ')} failed: ${(err as Error).message}`, `run it by hand: ${command}`);
  }
  const still = missingPackages();
  if (still.length) throw new EmbeddedRuntimeError(`after apt-get install, still missing: ${still.join(', ')}`, `check: ${command}`);
}
