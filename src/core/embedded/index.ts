import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CNI_NETWORK, cniConflist, containerdConfig, hostsToml, MIRRORED_REGISTRIES, POD_SUBNET, registryConfig } from './config.js';
import { EmbeddedRuntimeError } from './errors.js';
import { ensureImages, registryAnswers, servedImages } from './images.js';
import { ensurePodMasquerade, MASQUERADE_CHAIN, removePodMasquerade, sweepBridgeMasquerades, type Iptables } from './masquerade.js';
import { ensurePackages } from './packages.js';
import { embeddedEndpoint, embeddedPaths, registryPort, type EmbeddedPaths } from './paths.js';
import { daemonEnd, daemonStartEnded, livePid, processCmdline, removeFile, run, sleep, startDaemon, stopPid } from './process.js';
import { embeddedContainerd, isContainerd, isRegistry } from './probe.js';
import { reapLostShims } from './shims.js';

export { embeddedEndpoint, embeddedPaths, type EmbeddedPaths } from './paths.js';
export { embeddedContainerd } from './probe.js';
export { EmbeddedRuntimeError } from './errors.js';
export { MIRRORED_REGISTRIES, SANDBOX_IMAGE } from './config.js';

export interface EmbeddedStatus {
  endpoint: string;
  running: boolean;
  containerd: { pid?: number; running: boolean };
  registry: { address: string; pid?: number; running: boolean };
  /** Image references the loopback registry serves. */
  images: string[];
  root: string;
}

type Log = (line: string) => void;

export async function embeddedStatus(opts: { paths?: EmbeddedPaths } = {}): Promise<EmbeddedStatus> {
  const paths = opts.paths ?? embeddedPaths();
  const containerd = embeddedContainerd(paths);
  const registryPid = livePid(paths.pidFile('registry'), isRegistry(paths));
  return {
    endpoint: containerd.endpoint,
    running: containerd.running,
    containerd: { pid: containerd.pid, running: containerd.running },
    registry: { address: `127.0.0.1:${registryPort()}`, pid: registryPid, running: registryPid !== undefined },
    images: servedImages(),
    root: paths.rootDir,
  };
}

async function writeIfChanged(file: string, content: string): Promise<boolean> {
  const current = await readFile(file, 'utf8').catch(() => undefined);
  if (current === content) return false;
  await writeFile(file, content);
  return true;
}

async function writeConfigs(paths: EmbeddedPaths, port: number): Promise<boolean> {
  for (const dir of [
    paths.rootDir,
    paths.runDir,
    paths.stateDir,
    paths.cniConfDir,
    paths.cniDataDir,
    paths.certsDir,
    paths.registryDir,
    paths.imagesDir,
    paths.logDir,
  ]) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  }
  let changed = await writeIfChanged(paths.configFile, containerdConfig(paths));
  changed = (await writeIfChanged(join(paths.cniConfDir, '10-podctl.conflist'), cniConflist(paths))) || changed;
  const server = `http://127.0.0.1:${port}`;
  for (const host of [...MIRRORED_REGISTRIES, '_default']) {
    await mkdir(join(paths.certsDir, host), { recursive: true });
    changed = (await writeIfChanged(join(paths.certsDir, host, 'hosts.toml'), hostsToml(server))) || changed;
  }
  await writeIfChanged(paths.registryConfig, registryConfig(paths, port));
  return changed;
}

/**
 * crun refuses a hybrid cgroup layout in which the cgroup2 hierarchy (/sys/fs/cgroup/unified) holds
 * controllers ("cgroups in hybrid mode not supported, drop all controllers from cgroupv2"); runc does
 * not mind. A controller no v1 hierarchy binds (hugetlb, often) is mounted as v1 beside the others,
 * which leaves cgroup2 empty: both OCI runtimes then manage the same v1 controllers.
 */
async function ensureCrunCgroups(log: Log, root = '/sys/fs/cgroup'): Promise<void> {
  const controllers = readFileSync(join(root, 'unified', 'cgroup.controllers'), 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean);
  for (const controller of controllers) {
    const dir = join(root, controller);
    try {
      await mkdir(dir, { recursive: true });
      await run('mount', ['-t', 'cgroup', '-o', controller, 'cgroup', dir]);
      log(`mounted the ${controller} cgroup controller as v1 at ${dir} (crun needs cgroup2 without controllers in a hybrid layout)`);
    } catch (err) {
      log(
        `warning: crun will not start containers here: the cgroup2 hierarchy ` +
          `holds ${controller}, and mounting it as v1 failed: ${(err as Error).message}`,
      );
    }
  }
}

/** The CNI bridge masquerades and forwards: the kernel must route. */
async function ensureForwarding(log: Log): Promise<void> {
  const file = '/proc/sys/net/ipv4/ip_forward';
  const value = readFileSync(file, 'utf8').trim();
  if (value === '1') return;
  try {
    await writeFile(file, '1\n');
    log('enabled net.ipv4.ip_forward for the pod network');
  } catch (err) {
    throw new EmbeddedRuntimeError(
      `cannot enable IP forwarding for the pod network: ${(err as Error).message}`,
      'run `sysctl -w net.ipv4.ip_forward=1` as root',
    );
  }
}

/** iptables waiting for the xtables lock, which the CNI plugins take too. */
const iptables: Iptables = (args) => run('iptables', ['-w', '5', ...args], { timeoutMs: 30_000 });

async function ensureMasquerade(log: Log): Promise<void> {
  try {
    if ((await ensurePodMasquerade(iptables, POD_SUBNET)) === 'added')
      log(`masquerading the pod network ${POD_SUBNET} (iptables nat chain ${MASQUERADE_CHAIN})`);
  } catch (err) {
    throw new EmbeddedRuntimeError(
      `cannot set up masquerading for the pod network ${POD_SUBNET}: ${(err as Error).message}`,
      'podctl needs iptables (Debian package iptables) and root',
    );
  }
}

/** Per-pod masquerades an older podctl left for sandboxes now gone; a failure only warns. */
async function sweepMasquerades(live: ReadonlySet<string>, log: Log): Promise<void> {
  try {
    const swept = await sweepBridgeMasquerades(iptables, CNI_NETWORK, live);
    if (swept.length) log(`removed the iptables masquerade of ${swept.length} pod sandbox(es) that no longer exist`);
  } catch (err) {
    log(`warning: could not check for leftover per-pod masquerade rules: ${(err as Error).message}`);
  }
}

async function startRegistry(paths: EmbeddedPaths, port: number): Promise<void> {
  if (livePid(paths.pidFile('registry'), isRegistry(paths)) !== undefined && (await registryAnswers(port))) return;
  if (await registryAnswers(port)) {
    throw new EmbeddedRuntimeError(
      `something else already serves 127.0.0.1:${port}`,
      'stop it, or choose another port with PODCTL_REGISTRY_PORT',
    );
  }
  startDaemon('docker-registry', ['serve', paths.registryConfig], join(paths.logDir, 'registry.log'), paths.pidFile('registry'));
  for (let i = 0; i < 100; i++) {
    if (await registryAnswers(port)) return;
    await sleep(100);
  }
  throw new EmbeddedRuntimeError(
    `the image registry did not answer on 127.0.0.1:${port} within 10 s`,
    `see ${join(paths.logDir, 'registry.log')}`,
  );
}

/** The running containerd's pid: the one there, or one started now. */
async function startContainerd(paths: EmbeddedPaths, restart: boolean, log: Log): Promise<number> {
  const pid = livePid(paths.pidFile('containerd'), isContainerd(paths));
  if (pid !== undefined && !restart) return pid;
  if (pid !== undefined) {
    log('configuration changed: restarting the embedded containerd');
    await stopPid(pid, 10_000, () => livePid(paths.pidFile('containerd'), isContainerd(paths)) !== undefined);
  }
  // With containerd down, no shim is between its bundle and its shutdown: one without a bundle was lost.
  await reapLostShims(paths, log);
  // A socket nobody owns (after a crash) would make containerd refuse to start.
  removeFile(paths.socket);
  removeFile(`${paths.socket}.ttrpc`);
  return startDaemon('containerd', ['--config', paths.configFile], join(paths.logDir, 'containerd.log'), paths.pidFile('containerd'));
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Brings the embedded runtime up: packages, configs, registry and images,
 * containerd; waits until the CRI reports RuntimeReady and NetworkReady.
 * Idempotent: when all is up it only checks.
 */
export async function embeddedUp(opts: {
  paths?: EmbeddedPaths;
  log?: Log;
  install?: boolean;
  waitReady: (endpoint: string, signal: AbortSignal) => Promise<{ ready: boolean; detail: string }>;
  /** The runtime's sandbox IDs, once it is ready: what has none is swept of per-pod rules. */
  sandboxIds?: (endpoint: string) => Promise<string[]>;
  timeoutMs?: number;
}): Promise<EmbeddedStatus> {
  const paths = opts.paths ?? embeddedPaths();
  const log = opts.log ?? (() => undefined);
  if (process.getuid?.() !== 0) {
    throw new EmbeddedRuntimeError(
      'the embedded runtime must be started as root (containerd needs it)',
      'run `sudo podctl runtime up`, or point podctl at a runtime with --runtime-endpoint',
    );
  }
  await ensurePackages(opts.install ?? true, log);
  const port = registryPort();
  const changed = await writeConfigs(paths, port);
  await ensureForwarding(log);
  await ensureMasquerade(log);
  if (existsSync('/sys/fs/cgroup/unified/cgroup.controllers')) await ensureCrunCgroups(log);
  await startRegistry(paths, port);
  await ensureImages(paths.imagesDir, port, log);
  const started = await startContainerd(paths, changed, log);

  const endpoint = embeddedEndpoint(paths);
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const abort = new AbortController();
  let detail = 'not checked';
  /** Since when the pid has not read as containerd (undefined while it does). */
  let notContainerdSince: number | undefined;
  while (Date.now() < deadline) {
    if (livePid(paths.pidFile('containerd'), isContainerd(paths)) === undefined) {
      notContainerdSince ??= Date.now();
      const ended = daemonStartEnded({
        exitSeen: daemonEnd(started) !== undefined,
        pidExists: existsSync(`/proc/${started}`),
        otherForMs: Date.now() - notContainerdSince,
      });
      if (!ended) {
        await sleep(50);
        continue;
      }
      const end =
        daemonEnd(started) ??
        (processCmdline(started) ? `pid ${started} is now: ${processCmdline(started)!.join(' ')}` : `pid ${started} is gone`);
      throw new EmbeddedRuntimeError(
        `the embedded containerd exited during start-up (${end})`,
        `its log ends with:\n${tail(join(paths.logDir, 'containerd.log'), 10)}`,
      );
    }
    notContainerdSince = undefined;
    if (existsSync(paths.socket)) {
      const r = await opts.waitReady(endpoint, abort.signal);
      if (r.ready) {
        if (opts.sandboxIds) {
          const ids = await opts.sandboxIds(endpoint).catch(() => undefined);
          if (ids) await sweepMasquerades(new Set(ids), log);
        }
        return embeddedStatus({ paths });
      }
      detail = r.detail;
    } else detail = 'socket not created yet';
    await sleep(150);
  }
  abort.abort();
  throw new EmbeddedRuntimeError(
    `the embedded runtime did not become ready within ${Math.round(timeoutMs / 1000)} s (${detail})`,
    `containerd's log ends with:\n${tail(join(paths.logDir, 'containerd.log'), 10)}`,
  );
}

/** Mount points below our directories, deepest first (from /proc/self/mountinfo). */
export function mountsBelow(mountinfo: string, roots: string[]): string[] {
  const points = mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\040/g, ' '))
    .filter((p) => roots.some((r) => p === r || p.startsWith(`${r}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/**
 * Stops what up started, by recorded PIDs only: pods first (beforeStop), then
 * containerd, then the registry; unmounts what containerd left below our dirs.
 */
export async function embeddedDown(opts: {
  paths?: EmbeddedPaths;
  log?: Log;
  beforeStop?: (endpoint: string) => Promise<void>;
}): Promise<void> {
  const paths = opts.paths ?? embeddedPaths();
  const log = opts.log ?? (() => undefined);
  const containerd = livePid(paths.pidFile('containerd'), isContainerd(paths));
  let podsLeft = false;
  if (containerd !== undefined && opts.beforeStop && existsSync(paths.socket)) {
    try {
      await opts.beforeStop(embeddedEndpoint(paths));
    } catch (err) {
      podsLeft = true;
      log(`could not remove every pod before stopping: ${(err as Error).message}`);
    }
  }
  if (containerd !== undefined) {
    await stopPid(containerd, 10_000, () => livePid(paths.pidFile('containerd'), isContainerd(paths)) !== undefined);
    log(`stopped containerd (pid ${containerd})`);
  }
  await reapLostShims(paths, log);
  const registry = livePid(paths.pidFile('registry'), isRegistry(paths));
  if (registry !== undefined) {
    await stopPid(registry, 5_000, () => livePid(paths.pidFile('registry'), isRegistry(paths)) !== undefined);
    log(`stopped the image registry (pid ${registry})`);
  }
  // Its pods are gone, so the pod network's masquerade goes, with any per-pod one an older podctl left;
  // pods that could not be removed keep theirs.
  if (!podsLeft) {
    await sweepMasquerades(new Set(), log);
    await removePodMasquerade(iptables, POD_SUBNET).then(
      (removed) => removed && log(`removed the pod network's masquerade (iptables nat chain ${MASQUERADE_CHAIN})`),
      (err: Error) => log(`warning: could not remove the pod network's masquerade: ${err.message}`),
    );
  }
  for (const mount of mountsBelow(readFileSync('/proc/self/mountinfo', 'utf8'), [paths.rootDir, paths.runDir])) {
    await run('umount', ['-l', mount]).catch((err: Error) => log(`could not unmount ${mount}: ${err.message}`));
  }
  for (const f of [paths.pidFile('containerd'), paths.pidFile('registry'), paths.socket, `${paths.socket}.ttrpc`]) removeFile(f);
}
