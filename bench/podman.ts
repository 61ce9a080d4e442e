import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { podYaml, timeProcess, type Timed } from './lib.js';

const run = promisify(execFile);

/** The loopback registry's busybox, named so that podman never resolves a short name. */
export const PODMAN_IMAGE = '127.0.0.1:5000/library/busybox:1.36';
const PODMAN_INFRA_IMAGE = '127.0.0.1:5000/pause:3.6';
/** Neither podctl's bridge (10.89.0.0/16) nor Debian podman's default network (10.88.0.0/16). */
const PODMAN_SUBNET = '10.90.0.0/24';
/**
 * A network of our own for `kube play --network`: without it podman creates
 * podman-default-kube-network on a new cni-podmanN bridge in every fresh
 * config directory, and leaves the bridge behind.
 */
const PODMAN_NETWORK = 'podctl-bench';
/** Where the host-local IPAM plugin keeps the network's leases (its default data dir). */
const CNI_LEASES_DIR = '/var/lib/cni/networks';

/**
 * podman as a peer, configured only through private files passed by
 * environment: the host's /etc/containers and the system's storage stay
 * untouched (policy.json, which only says which signatures to require, is
 * read from its default place).
 */
export class PodmanPeer {
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  private readonly yamlFile: string;
  private bridge: string | undefined;

  private constructor(readonly version: string) {
    this.dir = mkdtempSync(join(tmpdir(), 'podctl-bench-podman-'));
    const d = (p: string) => {
      const path = join(this.dir, p);
      mkdirSync(path, { recursive: true });
      return path;
    };
    const containersConf = join(this.dir, 'containers.conf');
    const registriesConf = join(this.dir, 'registries.conf');
    const storageConf = join(this.dir, 'storage.conf');
    writeFileSync(
      containersConf,
      [
        '[containers]',
        // No higher than the hard limits here: CAP_SYS_RESOURCE is not granted.
        'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]',
        'log_driver = "k8s-file"',
        '[network]',
        'network_backend = "cni"',
        'cni_plugin_dirs = ["/usr/lib/cni"]',
        `network_config_dir = "${d('cni')}"`,
        '[engine]',
        'cgroup_manager = "cgroupfs"',
        'events_logger = "file"',
        `events_logfile_path = "${join(d('run'), 'events.log')}"`,
        'runtime = "runc"',
        `infra_image = "${PODMAN_INFRA_IMAGE}"`,
        `tmp_dir = "${d('libpod-tmp')}"`,
        `volume_path = "${d('volumes')}"`,
        `static_dir = "${d('libpod-static')}"`,
        '',
      ].join('\n'),
    );
    writeFileSync(
      registriesConf,
      [
        'unqualified-search-registries = []',
        'short-name-mode = "disabled"',
        '',
        '[[registry]]',
        'location = "127.0.0.1:5000"',
        'insecure = true',
        '',
      ].join('\n'),
    );
    writeFileSync(
      storageConf,
      ['[storage]', 'driver = "overlay"', `runroot = "${d('runroot')}"`, `graphroot = "${d('graphroot')}"`, ''].join('\n'),
    );
    this.env = {
      ...process.env,
      CONTAINERS_CONF: containersConf,
      CONTAINERS_REGISTRIES_CONF: registriesConf,
      CONTAINERS_STORAGE_CONF: storageConf,
    };
    this.yamlFile = join(this.dir, 'pod.yaml');
    writeFileSync(this.yamlFile, podYaml('bench-podman', PODMAN_IMAGE));
  }

  /** Installs Debian's podman when missing, then pulls the two images from the loopback registry. */
  static async setup(log: (line: string) => void): Promise<PodmanPeer> {
    let version = await podmanVersion();
    if (!version) {
      log('podman is missing: apt-get install -y podman');
      await run('apt-get', ['install', '-y', 'podman'], {
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
      version = await podmanVersion();
      if (!version) throw new Error('podman is still missing after apt-get install -y podman');
    }
    const peer = new PodmanPeer(version);
    try {
      for (const image of [PODMAN_IMAGE, PODMAN_INFRA_IMAGE]) await peer.podman(['pull', '--quiet', image]);
      await peer.podman(['network', 'create', '--subnet', PODMAN_SUBNET, PODMAN_NETWORK]);
      // podman 4.3 names the bridge itself (cni-podmanN); remember it to remove it.
      peer.bridge =
        (await peer.podman(['network', 'inspect', '--format', '{{.NetworkInterface}}', PODMAN_NETWORK])).stdout.trim() || undefined;
    } catch (err) {
      await peer.teardown();
      throw err;
    }
    return peer;
  }

  podman(args: string[]): Promise<{ stdout: string; stderr: string }> {
    return run('podman', args, { env: this.env, maxBuffer: 16 * 1024 * 1024 });
  }

  /** `podman kube play` of the one-container pod on an OCI runtime (runc, crun), timed from spawn to exit. */
  play(runtime = 'runc'): Promise<Timed> {
    return timeProcess('podman', ['--runtime', runtime, 'kube', 'play', '--network', PODMAN_NETWORK, this.yamlFile], { env: this.env });
  }

  async down(runtime = 'runc'): Promise<void> {
    await this.podman(['--runtime', runtime, 'kube', 'down', this.yamlFile]).catch(() => this.podman(['pod', 'rm', '--force', '--all']));
  }

  /** Removes every pod and container of this private storage, then the storage itself. */
  async teardown(): Promise<void> {
    await this.podman(['pod', 'rm', '--force', '--all']).catch(() => undefined);
    await this.podman(['rm', '--force', '--all']).catch(() => undefined);
    await this.podman(['rmi', '--force', '--all']).catch(() => undefined);
    await this.podman(['network', 'rm', '--force', PODMAN_NETWORK]).catch(() => undefined);
    if (this.bridge) await run('ip', ['link', 'del', this.bridge]).catch(() => undefined);
    rmSync(join(CNI_LEASES_DIR, PODMAN_NETWORK), { recursive: true, force: true });
    // The overlay driver keeps its home as a private mount: unmount what is left under our directory, deepest first.
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .filter((m) => m.startsWith(`${this.dir}/`))
      .sort((a, b) => b.length - a.length);
    for (const m of mounts) await run('umount', [m]).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

async function podmanVersion(): Promise<string | undefined> {
  try {
    const { stdout } = await run('podman', ['--version']);
    return stdout.trim();
  } catch {
    return undefined;
  }
}
