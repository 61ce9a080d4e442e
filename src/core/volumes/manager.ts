import { chmod, lstat, mkdir, open, realpath, stat, statfs } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { IContainer, IHostPathVolumeSource, IPod, IVolume } from 'kubernetes-models/v1';
import type { MountInput } from '../cri/types.js';
import { isDNS1123Label } from '../pod/names.js';
import { bytes } from '../util/quantity.js';
import { checkComponent, removeBelow, safeJoin, UnsafePathError } from '../util/safe-path.js';
import { writePayload, type Payload } from './atomic-writer.js';
import type { Allocatable } from './downward.js';
import { PayloadError, setUpError, VolumeError } from './errors.js';
import { isMountPoint, mountsUnder, mountTmpfs, unmount } from './mount.js';
import { setVolumeOwnership } from './ownership.js';
import { configMapPayload, DEFAULT_MODE, downwardAPIPayload, secretPayload } from './payload.js';
import { bindSubPath, expandSubPathExpr } from './subpath.js';
import type { NodeInfo, PodVolumeDir, PodVolumes, VolumeKind, VolumeObjects } from './types.js';
import { podMeta } from '../util/pod-key.js';

/** The kubelet's plugin directory names under pods/<uid>/volumes. */
export const PLUGIN_DIRS: Record<Exclude<VolumeKind, 'hostPath'>, string> = {
  emptyDir: 'kubernetes.io~empty-dir',
  configMap: 'kubernetes.io~configmap',
  secret: 'kubernetes.io~secret',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
};

/** Sources the kubelet keeps in memory (its wrapped emptyDir has medium Memory): they may hold secrets. */
const TMPFS_KINDS = new Set<VolumeKind>(['secret', 'downwardAPI', 'projected']);

const SUPPORTED = new Set<string>(['emptyDir', 'hostPath', 'configMap', 'secret', 'downwardAPI', 'projected']);

/** The VolumeSource field a volume sets (the first one other than name). */
export function volumeKind(v: IVolume): string {
  return Object.keys(v).find((k) => k !== 'name' && (v as unknown as Record<string, unknown>)[k] !== undefined) ?? '';
}

/**
 * Unmounts everything beneath a pod's directory, deepest first (subPath binds, tmpfs of memory and secret
 * volumes, anything a container propagated there), then removes it. podDir is where the pod's sandbox
 * recorded it, from whichever root dir started the pod: it must be <root>/pods/<uid> for this very UID, and
 * still be that once symlinks are resolved; anything else is refused, removing nothing.
 */
export async function removePodDirectory(podDir: string, uid: string): Promise<void> {
  checkComponent(uid, 'pod UID');
  if (!isAbsolute(podDir) || resolve(podDir) !== podDir || basename(podDir) !== uid || basename(dirname(podDir)) !== 'pods') {
    throw new UnsafePathError(`refusing to remove ${JSON.stringify(podDir)}: not a pod directory <root-dir>/pods/${uid}`);
  }
  const root = dirname(dirname(podDir));
  let real: string;
  let rootReal: string;
  try {
    real = await realpath(podDir);
    rootReal = await realpath(root);
  } catch {
    return;
  }
  if (real !== join(rootReal, 'pods', uid))
    throw new UnsafePathError(`refusing to tear down ${podDir}: it resolves to ${real}, outside ${root}`);
  for (const mp of await mountsUnder(real)) await unmount(mp);
  const left = await mountsUnder(real);
  if (left.length) throw new Error(`refusing to remove ${podDir}: still mounted: ${left.join(', ')}`);
  // rm unlinks symlinks without following them.
  if (!(await removeBelow([rootReal], real))) throw new UnsafePathError(`refusing to remove ${podDir}: outside ${root}`);
}

async function ensureDir(dir: string, mode: number): Promise<boolean> {
  try {
    const st = await lstat(dir);
    if (!st.isDirectory()) throw new Error(`${dir} exists and is not a directory`);
    return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dir, { recursive: true, mode });
  await chmod(dir, mode);
  return true;
}

async function statType(path: string) {
  try {
    return await stat(path);
  } catch {
    return undefined;
  }
}

/** The kubelet's hostPath type checks; DirectoryOrCreate and FileOrCreate create what is missing. */
export async function checkHostPathType(src: IHostPathVolumeSource): Promise<void> {
  const path = src.path;
  const type = src.type ?? '';
  let st = await statType(path);
  if (type === '') return;
  if (type === 'DirectoryOrCreate' && !st) {
    await mkdir(path, { recursive: true, mode: 0o755 });
    st = await statType(path);
  }
  if (type === 'FileOrCreate' && !st) {
    // As the kubelet, the parent directory is not created: it must exist.
    try {
      await (await open(path, 'a', 0o644)).close();
    } catch (err) {
      throw new PayloadError(`hostPath type check failed: cannot create ${path}: ${(err as Error).message}`);
    }
    st = await statType(path);
  }
  const check: Record<string, [boolean | undefined, string]> = {
    DirectoryOrCreate: [st?.isDirectory(), 'a directory'],
    Directory: [st?.isDirectory(), 'a directory'],
    FileOrCreate: [st?.isFile(), 'a file'],
    File: [st?.isFile(), 'a file'],
    Socket: [st?.isSocket(), 'a socket file'],
    CharDevice: [st?.isCharacterDevice(), 'a character device'],
    BlockDevice: [st?.isBlockDevice(), 'a block device'],
  };
  const c = check[type];
  if (!c) throw new PayloadError(`${type} is an invalid volume type`);
  if (!c[0]) throw new PayloadError(`hostPath type check failed: ${path} is not ${c[1]}`);
}

const PROPAGATION: Record<string, NonNullable<MountInput['propagation']>> = {
  None: 'PROPAGATION_PRIVATE',
  HostToContainer: 'PROPAGATION_HOST_TO_CONTAINER',
  Bidirectional: 'PROPAGATION_BIDIRECTIONAL',
};

export interface VolumeManagerOptions {
  rootDir: string;
  objects: VolumeObjects;
  node: NodeInfo;
}

/** Sets up, mounts and tears down a pod's volumes under <rootDir>/pods/<uid>/volumes, as the kubelet's volume plugins. */
export class VolumeManager {
  private readonly rootDir: string;
  private readonly objects: VolumeObjects;
  private readonly node: NodeInfo;

  constructor(opts: VolumeManagerOptions) {
    this.rootDir = opts.rootDir;
    this.objects = opts.objects;
    this.node = opts.node;
  }

  podDir(uid: string | undefined): string {
    return safeJoin(this.rootDir, [
      ['pods', 'pods'],
      ['pod UID', uid],
    ]);
  }

  volumesDir(uid: string): string {
    return join(this.podDir(uid), 'volumes');
  }

  /** Where subPath mounts are bound for the runtime, as the kubelet's volume-subpaths/<volume>/<container>/<index>. */
  subPathTarget(uid: string, volume: string, container: string, index: number): string {
    return safeJoin(this.podDir(uid), [
      ['volume-subpaths', 'volume-subpaths'],
      ['volume name', volume],
      ['container name', container],
      ['volumeMount index', String(index)],
    ]);
  }

  /**
   * Sets up every volume of the pod, or refreshes its contents; idempotent. Every volume is attempted, so one
   * broken volume does not hold back the others' refresh; the first failure is then thrown.
   */
  async setUpPodVolumes(pod: IPod, _podIPs: string[]): Promise<PodVolumes> {
    // _podIPs: Kubernetes allows only metadata.* fieldRefs in downwardAPI volumes, so the IPs are not used here.
    const podDir = this.podDir(pod.metadata?.uid);
    const uid = podMeta(pod).uid;
    // The pod's directories hold secrets' mount points and configuration: not for other users of the host.
    await mkdir(this.rootDir, { recursive: true, mode: 0o700 });
    await ensureDir(podDir, 0o750);
    if (((await stat(podDir)).mode & 0o777) !== 0o750) await chmod(podDir, 0o750);
    await ensureDir(this.volumesDir(uid), 0o750);
    const dirs = new Map<string, PodVolumeDir>();
    let first: VolumeError | undefined;
    for (const v of pod.spec?.volumes ?? []) {
      try {
        dirs.set(v.name, await this.setUpVolume(pod, uid, v));
      } catch (err) {
        const e = err instanceof VolumeError ? err : setUpError(v.name, (err as Error).message);
        first ??= e;
      }
    }
    if (first) throw first;
    return { uid, dirs };
  }

  private async setUpVolume(pod: IPod, uid: string, v: IVolume): Promise<PodVolumeDir> {
    // The name becomes a path element: only what the API server accepts (a DNS label) gets that far.
    if (!isDNS1123Label(v.name)) throw setUpError(v.name, `invalid volume name ${JSON.stringify(v.name)}: must be a DNS-1123 label`);
    const kind = volumeKind(v);
    if (!SUPPORTED.has(kind)) {
      throw setUpError(
        v.name,
        `${kind || 'a volume without a source'} volumes are not supported: podctl ` +
          `runs pods on a single host without a cluster (use emptyDir or hostPath)`,
      );
    }
    const fsGroup = pod.spec?.securityContext?.fsGroup;
    if (kind === 'hostPath') {
      await checkHostPathType(v.hostPath!);
      return { hostPath: v.hostPath!.path, kind, readOnly: false };
    }
    const dir = safeJoin(this.volumesDir(uid), [
      ['volume plugin', PLUGIN_DIRS[kind as keyof typeof PLUGIN_DIRS]],
      ['volume name', v.name],
    ]);
    let fresh = await ensureDir(dir, 0o777);

    if (kind === 'emptyDir') {
      const medium = v.emptyDir!.medium ?? '';
      if (medium !== '' && medium !== 'Memory') throw setUpError(v.name, `emptyDir medium "${medium}" is not supported (use "" or Memory)`);
      if (medium === 'Memory' && !(await isMountPoint(await realpath(dir)))) {
        await mountTmpfs(dir, bytes(v.emptyDir!.sizeLimit));
        await chmod(dir, 0o777);
        fresh = true;
      }
      // Only when created: after that the directory is the containers' and its files keep what they set.
      if (fresh && fsGroup !== undefined) await setVolumeOwnership(dir, fsGroup, false);
      return { hostPath: dir, kind, readOnly: false };
    }

    // Collected before mounting, as the kubelet: a missing object leaves no empty tmpfs behind.
    const payload = await this.payload(pod, v, kind);
    if (TMPFS_KINDS.has(kind as VolumeKind) && !(await isMountPoint(await realpath(dir)))) {
      await mountTmpfs(dir);
      await chmod(dir, 0o777);
    }
    await writePayload(dir, payload, { fsGroup });
    if (fsGroup !== undefined) await setVolumeOwnership(dir, fsGroup, true);
    return { hostPath: dir, kind, readOnly: true };
  }

  private async allocatable(): Promise<Allocatable> {
    let eph = this.node.ephemeralStorageBytes;
    if (eph === undefined) {
      const fs = await statfs(this.rootDir);
      eph = fs.blocks * fs.bsize;
    }
    return { cpuCores: this.node.cpuCores, memoryBytes: this.node.memoryBytes, ephemeralStorageBytes: eph };
  }

  private async payload(pod: IPod, v: IVolume, kind: string): Promise<Payload> {
    const ns = pod.metadata?.namespace ?? 'default';
    const payload: Payload = new Map();
    try {
      switch (kind) {
        case 'configMap': {
          const s = v.configMap!;
          configMapPayload(
            payload,
            this.objects.configMap(ns, s.name ?? ''),
            { name: s.name ?? '', items: s.items, optional: s.optional },
            s.defaultMode ?? DEFAULT_MODE,
          );
          break;
        }
        case 'secret': {
          const s = v.secret!;
          const name = s.secretName ?? '';
          secretPayload(
            payload,
            this.objects.secret(ns, name),
            { name, items: s.items, optional: s.optional },
            s.defaultMode ?? DEFAULT_MODE,
          );
          break;
        }
        case 'downwardAPI': {
          const s = v.downwardAPI!;
          downwardAPIPayload(payload, pod, s.items, s.defaultMode ?? DEFAULT_MODE, await this.allocatable());
          break;
        }
        case 'projected': {
          const s = v.projected!;
          const mode = s.defaultMode ?? DEFAULT_MODE;
          for (const src of s.sources ?? []) {
            if (src.configMap) {
              const c = src.configMap;
              configMapPayload(
                payload,
                this.objects.configMap(ns, c.name ?? ''),
                { name: c.name ?? '', items: c.items, optional: c.optional },
                mode,
              );
            } else if (src.secret) {
              const c = src.secret;
              secretPayload(
                payload,
                this.objects.secret(ns, c.name ?? ''),
                { name: c.name ?? '', items: c.items, optional: c.optional },
                mode,
              );
            } else if (src.downwardAPI) {
              downwardAPIPayload(payload, pod, src.downwardAPI.items, mode, await this.allocatable());
            } else if (src.serviceAccountToken) {
              throw new PayloadError('serviceAccountToken projections are not supported: no API server issues tokens on a single host');
            } else {
              const which = Object.keys(src).find((k) => (src as Record<string, unknown>)[k] !== undefined) ?? 'an empty source';
              throw new PayloadError(`projected source ${which} is not supported`);
            }
          }
          break;
        }
      }
    } catch (err) {
      if (err instanceof PayloadError) throw setUpError(v.name, err.message);
      throw err;
    }
    return payload;
  }

  /** The CRI mounts of one container's volumeMounts. */
  async containerMounts(_pod: IPod, container: IContainer, volumes: PodVolumes, env: Record<string, string>): Promise<MountInput[]> {
    const mounts: MountInput[] = [];
    for (const [index, m] of (container.volumeMounts ?? []).entries()) {
      const fail = (detail: string) => new VolumeError(m.name, 'CreateContainerConfigError', detail);
      const vol = volumes.dirs.get(m.name);
      if (!vol) throw fail(`cannot find volume "${m.name}" to mount into container "${container.name}"`);
      const propagation = PROPAGATION[m.mountPropagation ?? 'None'];
      if (!propagation) throw fail(`invalid MountPropagation mode: "${m.mountPropagation}"`);
      if (propagation === 'PROPAGATION_BIDIRECTIONAL' && container.securityContext?.privileged !== true) {
        throw fail(
          `volumeMount "${m.name}" of container "${container.name}": Bidirectional ` +
            `mount propagation is available only to privileged containers`,
        );
      }
      const readonly = m.readOnly === true || vol.readOnly;
      let recursiveReadOnly = false;
      if (m.recursiveReadOnly === 'Enabled') {
        if (!readonly || propagation !== 'PROPAGATION_PRIVATE') {
          throw fail(
            `volumeMount "${m.name}" of container "${container.name}": recursiveReadOnly Enabled needs readOnly and mountPropagation None`,
          );
        }
        recursiveReadOnly = true;
      }
      let hostPath = vol.hostPath;
      let subPath = m.subPath ?? '';
      // Both names are path elements of the subPath bind target.
      if (!isDNS1123Label(container.name)) throw fail(`invalid container name ${JSON.stringify(container.name)}: must be a DNS-1123 label`);
      try {
        if (m.subPathExpr) subPath = expandSubPathExpr(m.subPathExpr, env);
        if (subPath) hostPath = await bindSubPath(vol.hostPath, subPath, this.subPathTarget(volumes.uid, m.name, container.name, index));
      } catch (err) {
        throw fail(`failed to prepare subPath for volumeMount "${m.name}" of container "${container.name}": ${(err as Error).message}`);
      }
      mounts.push({
        containerPath: m.mountPath,
        hostPath,
        readonly,
        recursiveReadOnly,
        propagation,
        // Only podctl's own directories are relabelled; a hostPath is the host's and keeps its label.
        selinuxRelabel: vol.kind !== 'hostPath',
      });
    }
    return mounts;
  }

  /** Unmounts every mount beneath the pod's directory under rootDir, then removes the directory (removePodDirectory). */
  async tearDown(uid: string): Promise<void> {
    await removePodDirectory(this.podDir(uid), uid);
  }
}
