import type { EmbeddedPaths } from './paths.js';

/** Registry hosts whose names resolve to the loopback registry, and only to it. */
export const MIRRORED_REGISTRIES = ['docker.io', 'registry.k8s.io', 'quay.io', 'ghcr.io', 'gcr.io'];
export const SANDBOX_IMAGE = 'registry.k8s.io/pause:3.6';
export const POD_SUBNET = '10.89.0.0/16';
export const BRIDGE_NAME = 'podctl0';
/** The CNI network's name: the bridge plugin's per-pod iptables comments carry it. */
export const CNI_NETWORK = 'podctl';
/** Debian's crun, run by the runc shim as the handler "crun". */
export const CRUN_BINARY = '/usr/bin/crun';

const q = (s: string) => JSON.stringify(s);

/** containerd's config: its own root, state and socket; CRI with the settings this host was found to need. */
export function containerdConfig(paths: EmbeddedPaths): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `# Written by podctl runtime up; rewritten on every up.
version = 2
root = ${q(`${paths.rootDir}/containerd`)}
state = ${q(paths.stateDir)}
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = ${q(paths.socket)}

[ttrpc]
  address = ${q(`${paths.socket}.ttrpc`)}

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(`${paths.rootDir}/opt`)}

[${cri}]
  sandbox_image = ${q(SANDBOX_IMAGE)}
  # Without it every RunPodSandbox fails here: no CAP_SYS_RESOURCE to lower oom_score_adj.
  restrict_oom_score_adj = true
  # Network namespaces under containerd's own state dir, not /run/netns: podman bind-mounts
  # /run/netns onto itself as a shared mount, after which containerd 1.6 can no longer unlink
  # a sandbox's netns there and the sandbox can never be removed.
  netns_mounts_under_state_dir = true

[${cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = ${q(paths.cniConfDir)}

[${cri}.registry]
  # hosts.toml per registry host; each names only the loopback registry.
  config_path = ${q(paths.certsDir)}

[${cri}.containerd]
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

# The same shim running crun: the handler a RuntimeClass with handler "crun" selects.
[${cri}.containerd.runtimes.crun]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.crun.options]
  BinaryName = ${q(CRUN_BINARY)}
  SystemdCgroup = false
`;
}

/**
 * A bridge network on its own subnet (podman's default is 10.88.0.0/16), with host-local IPAM kept under our root; masqueraded by one chain
 * (masquerade.ts).
 */
export function cniConflist(paths: EmbeddedPaths): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: CNI_NETWORK,
      plugins: [
        {
          type: 'bridge',
          bridge: BRIDGE_NAME,
          isGateway: true,
          // One masquerade for the subnet, set up by runtime up (masquerade.ts), not a chain per pod.
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: POD_SUBNET }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: paths.cniDataDir },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

/**
 * With `server` set, containerd resolves the host through that server only:
 * no fallback to the public host (the older `mirrors` setting falls back on 404).
 */
export function hostsToml(registry: string): string {
  return `# Written by podctl runtime up: the embedded runtime is offline by design.
server = ${q(registry)}

[host.${q(registry)}]
  capabilities = ["pull", "resolve"]
`;
}

export function registryConfig(paths: EmbeddedPaths, port: number): string {
  return `version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: ${paths.registryDir}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:${port}
`;
}
