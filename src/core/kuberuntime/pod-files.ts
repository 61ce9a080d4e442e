import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import type { RuntimePodStatus } from '../container/types.js';
import type * as T from '../cri/types.js';
import { checkComponent, removeBelow, safeJoin, UnsafePathError } from '../util/safe-path.js';
import { podMeta } from '../util/pod-key.js';
import { removePodDirectory } from '../volumes/index.js';
import { managedHostsFile, podLogDirectory, podLogDirectoryName } from './config.js';
import { containerSpecJSON, podSpecJSON } from './hash.js';
import type { SpecCopies } from './spec-copy.js';

/**
 * A pod's files on the host, as the kubelet keeps them (kubelet_pods.go, kubelet_getters.go): its
 * directory under <rootDir>/pods/<uid>, the managed /etc/hosts, the host's resolv.conf the DNS config
 * starts from, termination-message files, spec copies, log directories, and their removal.
 */
export class PodFiles {
  /** The host's resolv.conf and /etc/hosts, read once: pods merge dnsConfig into the first and host-network pods copy the second. */
  private hostFiles?: Promise<{ resolvConf: string; etcHosts: string }>;
  /** Pod directories made during the sync under way, by pod UID (ensurePodDir). */
  private readonly podDirsMade = new Map<string, Promise<string>>();

  constructor(
    /** Per-pod host state; none without it. */
    readonly rootDir: string | undefined,
    private readonly logRoot: string,
    private readonly specCopies: SpecCopies,
  ) {}

  /** The sync of this pod is over: the next one makes sure its directory is there again. */
  syncDone(uid: string): void {
    this.podDirsMade.delete(uid);
  }

  podDir(uid: string): string {
    return safeJoin(this.rootDir!, [
      ['pods', 'pods'],
      ['pod UID', uid],
    ]);
  }

  /**
   * The state dir is private to the user running podctl: created 0700 before anything goes in it.
   * Made once a sync (the pod spec, /etc/hosts, each container's termination message and spec copy
   * all go in it); a later sync makes sure again, should anything have removed it in between.
   */
  ensurePodDir(uid: string): Promise<string> {
    let made = this.podDirsMade.get(uid);
    if (!made) {
      made = (async () => {
        await mkdir(this.rootDir!, { recursive: true, mode: 0o700 });
        const dir = this.podDir(uid);
        await mkdir(dir, { recursive: true, mode: 0o750 });
        return dir;
      })();
      this.podDirsMade.set(uid, made);
      // A failure is said where it is awaited, and the next call tries again.
      made.catch(() => {
        if (this.podDirsMade.get(uid) === made) this.podDirsMade.delete(uid);
      });
    }
    return made;
  }

  readHostFiles(): Promise<{ resolvConf: string; etcHosts: string }> {
    this.hostFiles ??= Promise.all([
      readFile('/etc/resolv.conf', 'utf8').catch(() => ''),
      readFile('/etc/hosts', 'utf8').catch(() => ''),
    ]).then(([resolvConf, etcHosts]) => ({
      resolvConf,
      etcHosts,
    }));
    return this.hostFiles;
  }

  /** The kubelet's managed /etc/hosts under the pod dir, unless the container mounts its own. */
  async etcHostsMount(pod: IPod, container: IContainer, podIPs: string[]): Promise<T.MountInput | undefined> {
    if (!this.rootDir) return undefined;
    if ((container.volumeMounts ?? []).some((m) => m.mountPath === '/etc/hosts')) return undefined;
    const file = join(await this.ensurePodDir(podMeta(pod).uid), 'etc-hosts');
    await writeFile(file, managedHostsFile(pod, podIPs, (await this.readHostFiles()).etcHosts), { mode: 0o644 });
    return { containerPath: '/etc/hosts', hostPath: file, readonly: false };
  }

  /** Creates the empty host file the container's termination message is written to (0666: any user may write). */
  async terminationMessageFile(pod: IPod, container: IContainer, restartCount: number): Promise<string | undefined> {
    if (!this.rootDir) return undefined;
    const dir = safeJoin(await this.ensurePodDir(podMeta(pod).uid), [
      ['containers', 'containers'],
      ['container name', container.name],
    ]);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const file = join(dir, `${restartCount}-${randomBytes(4).toString('hex')}`);
    await writeFile(file, '', { mode: 0o666 });
    await chmod(file, 0o666);
    return file;
  }

  /**
   * The container's spec copy, in its pod directory when there is one (spec-copy.ts): on the container
   * record it would be listed by every relist. Without a root dir it stays an annotation.
   */
  async recordSpec(pod: IPod, container: IContainer): Promise<boolean> {
    if (!this.rootDir) return false;
    await this.specCopies.write(await this.ensurePodDir(podMeta(pod).uid), container.name, containerSpecJSON(container));
    return true;
  }

  /** The pod spec copy the sandbox names by its hash (spec-copy.ts), there before the sandbox is. */
  async recordPodSpec(pod: IPod): Promise<void> {
    if (this.rootDir) await this.specCopies.writePodSpec(await this.ensurePodDir(podMeta(pod).uid), podSpecJSON(pod));
  }

  async makePodLogDirectory(pod: IPod): Promise<void> {
    await mkdir(podLogDirectory(this.logRoot, pod), { recursive: true, mode: 0o755 });
  }

  async makeContainerLogDirectory(pod: IPod, container: IContainer): Promise<void> {
    await mkdir(join(podLogDirectory(this.logRoot, pod), checkComponent(container.name, 'container name')), {
      recursive: true,
      mode: 0o755,
    });
  }

  /**
   * Every host directory the pod had, mounts first: the ones its sandboxes recorded (whichever --root-dir and
   * --log-root started it), this process's own, and where its containers' log paths point. Each is checked to
   * be this pod's (<root>/pods/<uid>, <log-root>/<ns>_<name>_<uid>) before anything is unmounted or removed.
   */
  async removePodDirectories(status: RuntimePodStatus): Promise<void> {
    const podDirs = new Set<string>();
    if (this.rootDir) podDirs.add(this.podDir(status.uid));
    for (const s of status.sandboxes) if (s.podDir) podDirs.add(s.podDir);
    for (const dir of podDirs) {
      await removePodDirectory(dir, status.uid);
      this.specCopies.forgetPodDir(dir);
    }
    // The logs go with the pod, as the kubelet's container GC removes a deleted pod's log directory.
    if (!status.name) return;
    const name = podLogDirectoryName({ uid: status.uid, name: status.name, namespace: status.namespace });
    const logDirs = new Set<string>(status.sandboxes.flatMap((s) => (s.logDirectory ? [s.logDirectory] : [])));
    if (this.logRoot)
      logDirs.add(podLogDirectory(this.logRoot, { metadata: { uid: status.uid, name: status.name, namespace: status.namespace } }));
    for (const c of status.containers) if (c.logPath) logDirs.add(dirname(dirname(c.logPath)));
    for (const dir of logDirs) {
      // Only a directory named for this very pod, and never beyond its log root once symlinks are resolved.
      if (!isAbsolute(dir) || resolve(dir) !== dir || basename(dir) !== name) continue;
      if (!(await removeBelow([dirname(dir)], dir)))
        throw new UnsafePathError(`refusing to remove ${dir}: it resolves outside ${dirname(dir)}`);
    }
  }
}
