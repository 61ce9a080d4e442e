import { join } from 'node:path';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import type * as T from '../cri/types.js';
import { totalmem } from 'node:os';
import { bytes, milliCPU } from '../util/quantity.js';
import { qosClass } from '../status/qos.js';
import { expandCommand } from './env.js';
import { containerSpecJSON, fnv32a, hashContainer, podSpecJSON } from './hash.js';
import * as L from './labels.js';
import { checkComponent, safeJoin } from '../util/safe-path.js';
import { podMeta } from '../util/pod-key.js';

/** The name of a pod's log directory, <namespace>_<name>_<uid>, each part checked to be one path element. */
export function podLogDirectoryName(m: { namespace?: string; name?: string; uid?: string }): string {
  const ns = checkComponent(m.namespace ?? 'default', 'metadata.namespace');
  const name = checkComponent(m.name, 'metadata.name');
  const uid = checkComponent(m.uid, 'metadata.uid');
  return checkComponent(`${ns}_${name}_${uid}`, 'pod log directory');
}

/** Where a pod's logs live: <logRoot>/<namespace>_<name>_<uid> (just the name when there is no log root). */
export function podLogDirectory(logRoot: string, pod: Pick<IPod, 'metadata'>): string {
  const dir = podLogDirectoryName(podMeta(pod));
  return logRoot ? safeJoin(logRoot, [['pod log directory', dir]]) : dir;
}

/** Relative to the pod log directory: <container>/<restartCount>.log. */
export function containerLogPath(containerName: string, restartCount: number): string {
  return join(checkComponent(containerName, 'container name'), `${restartCount}.log`);
}

export function podIdentity(pod: IPod): L.PodIdentity {
  const m = podMeta(pod);
  return { name: m.name!, namespace: m.namespace ?? 'default', uid: m.uid! };
}

function namespaceOptions(pod: IPod): T.LinuxContainerSecurityContextInput['namespaceOptions'] {
  const spec = pod.spec!;
  return {
    network: spec.hostNetwork ? 'NODE' : 'POD',
    pid: spec.hostPID ? 'NODE' : spec.shareProcessNamespace ? 'POD' : 'CONTAINER',
    ipc: spec.hostIPC ? 'NODE' : 'POD',
  };
}

/**
 * The pod's annotations, the spec copy, and the host directories the pod gets (podctl's keys only ever
 * from podctl). With a pod directory the copy is a file there, named by the hash recorded here
 * (spec-copy.ts; the RuntimeManager writes it before the sandbox is made): every relist lists annotations.
 */
function sandboxAnnotations(pod: IPod, logRoot: string, podDir: string | undefined): Record<string, string> {
  const out: Record<string, string> = { ...(pod.metadata?.annotations ?? {}) };
  for (const k of L.RECORDED_ANNOTATIONS) delete out[k];
  if (podDir) out[L.POD_SPEC_HASH_ANNOTATION] = fnv32a(podSpecJSON(pod));
  else out[L.POD_SPEC_ANNOTATION] = podSpecJSON(pod);
  if (logRoot) out[L.POD_LOG_DIR_ANNOTATION] = podLogDirectory(logRoot, pod);
  if (podDir) out[L.POD_DIR_ANNOTATION] = podDir;
  return out;
}

/** The kubelet's generatePodSandboxConfig; podDir is the pod's state directory (<root-dir>/pods/<uid>), when there is one. */
export function podSandboxConfig(
  pod: IPod,
  attempt: number,
  logRoot: string,
  agent = 'run',
  hostResolvConf?: string,
  podDir?: string,
): T.PodSandboxConfigInput {
  const spec = pod.spec!;
  const id = podIdentity(pod);
  const portMappings: T.PortMappingInput[] = [];
  for (const c of spec.containers) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      portMappings.push({
        protocol: (p.protocol ?? 'TCP') as T.PortMappingInput['protocol'],
        containerPort: p.containerPort,
        hostPort: p.hostPort,
        hostIp: p.hostIP ?? '',
      });
    }
  }
  const sc = spec.securityContext ?? {};
  const privileged = [...(spec.initContainers ?? []), ...spec.containers].some((c) => c.securityContext?.privileged === true);
  const dnsConfig = dnsConfigFor(pod, hostResolvConf);
  return {
    metadata: { name: id.name, namespace: id.namespace, uid: id.uid, attempt },
    // As the kubelet: a host-network pod keeps the host's hostname (runc refuses to set one there).
    hostname: spec.hostNetwork ? '' : (spec.hostname ?? id.name).slice(0, 63),
    logDirectory: podLogDirectory(logRoot, pod),
    dnsConfig,
    portMappings,
    labels: L.sandboxLabels(id, pod.metadata?.labels, agent),
    annotations: sandboxAnnotations(pod, logRoot, podDir),
    linux: {
      cgroupParent: '',
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        privileged,
        runAsUser: sc.runAsUser === undefined ? undefined : { value: sc.runAsUser },
        runAsGroup: sc.runAsGroup === undefined ? undefined : { value: sc.runAsGroup },
        supplementalGroups: sc.supplementalGroups ?? [],
        selinuxOptions: seLinuxOptions(sc.seLinuxOptions),
      },
      sysctls: Object.fromEntries((sc.sysctls ?? []).map((s) => [s.name, s.value])),
    },
  };
}

/** The kubelet's GetContainerOOMScoreAdjust (qos/policy.go): Guaranteed -997, BestEffort 1000, Burstable by its memory request. */
export function oomScoreAdj(pod: IPod, container: IContainer, memoryCapacityBytes: number): number {
  const qos = qosClass(pod);
  if (qos === 'Guaranteed') return -997;
  if (qos === 'BestEffort') return 1000;
  const request = bytes(container.resources?.requests?.memory ?? container.resources?.limits?.memory) ?? 0;
  const adj = Math.floor(1000 - (1000 * request) / Math.max(memoryCapacityBytes, 1));
  if (adj < 3) return 3;
  return adj === 1000 ? 999 : adj;
}

/** The cluster domain of pod FQDNs (hostname.subdomain.namespace.svc.<domain>), the kubelet's usual --cluster-domain. */
export const CLUSTER_DOMAIN = 'cluster.local';

/** nameserver, search and options lines of a resolv.conf. */
export function parseResolvConf(text: string): { servers: string[]; searches: string[]; options: string[] } {
  const out = { servers: [] as string[], searches: [] as string[], options: [] as string[] };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [key, ...rest] = line.split(/\s+/);
    if (key === 'nameserver' && rest[0]) out.servers.push(rest[0]);
    else if (key === 'search' || key === 'domain') out.searches = rest;
    else if (key === 'options') out.options.push(...rest);
  }
  return out;
}

/**
 * The sandbox's DNS: None takes dnsConfig alone; every other policy starts
 * from the host's resolv.conf (ClusterFirst has no cluster DNS to point at on
 * one host, so it behaves as Default) with dnsConfig merged on top. Nothing
 * to merge: undefined, and the runtime copies the host's file.
 */
export function dnsConfigFor(pod: IPod, hostResolvConf: string | undefined): T.DNSConfigInput | undefined {
  const spec = pod.spec!;
  const extra = spec.dnsConfig;
  const opts = (list: { name?: string; value?: string }[] | undefined) =>
    (list ?? []).map((o) => (o.value === undefined ? (o.name ?? '') : `${o.name}:${o.value}`));
  if (spec.dnsPolicy === 'None')
    return { servers: extra?.nameservers ?? [], searches: extra?.searches ?? [], options: opts(extra?.options) };
  if (!extra) return undefined;
  const base = parseResolvConf(hostResolvConf ?? '');
  const byName = new Map<string, string>();
  for (const o of [...base.options, ...opts(extra.options)]) byName.set(o.split(':')[0]!, o);
  return {
    servers: [...new Set([...base.servers, ...(extra.nameservers ?? [])])],
    searches: [...new Set([...base.searches, ...(extra.searches ?? [])])],
    options: [...byName.values()],
  };
}

/**
 * The kubelet's managed /etc/hosts: localhost entries and the pod's own
 * name (with its FQDN when it has a subdomain) for a pod-network pod, the
 * host's file for a host-network one; hostAliases appended to either.
 */
export function managedHostsFile(pod: IPod, podIPs: string[], hostEtcHosts: string): string {
  const spec = pod.spec!;
  const m = podMeta(pod);
  let text: string;
  if (spec.hostNetwork) {
    text = hostEtcHosts.endsWith('\n') || hostEtcHosts === '' ? hostEtcHosts : `${hostEtcHosts}\n`;
  } else {
    const hostname = (spec.hostname ?? m.name!).slice(0, 63);
    const names = spec.subdomain
      ? `${hostname}.${spec.subdomain}.${m.namespace ?? 'default'}.svc.${CLUSTER_DOMAIN}\t${hostname}`
      : hostname;
    text = [
      '# Kubernetes-managed hosts file.',
      '127.0.0.1\tlocalhost',
      '::1\tlocalhost ip6-localhost ip6-loopback',
      'fe00::0\tip6-localnet',
      'fe00::0\tip6-mcastprefix',
      'fe00::1\tip6-allnodes',
      'fe00::2\tip6-allrouters',
      ...podIPs.map((ip) => `${ip}\t${names}`),
      '',
    ].join('\n');
  }
  const aliases = spec.hostAliases ?? [];
  if (aliases.length)
    text += `\n# Entries added by HostAliases.\n${aliases.map((a) => `${a.ip}\t${(a.hostnames ?? []).join('\t')}`).join('\n')}\n`;
  return text;
}

/** Requests and limits as the kubelet maps them to Linux cgroups. */
export function linuxResources(container: IContainer): T.LinuxContainerResourcesInput {
  const req = container.resources?.requests ?? {};
  const lim = container.resources?.limits ?? {};
  const cpuRequest = milliCPU(req.cpu ?? lim.cpu);
  const cpuLimit = milliCPU(lim.cpu);
  const memoryLimit = bytes(lim.memory);
  const period = 100_000;
  return {
    // Shares: 1024 per core, minimum 2, as MilliCPUToShares.
    cpuShares: cpuRequest === undefined ? 2 : Math.max(2, Math.floor((cpuRequest * 1024) / 1000)),
    cpuPeriod: cpuLimit === undefined ? 0 : period,
    cpuQuota: cpuLimit === undefined ? 0 : Math.max(1000, Math.floor((cpuLimit * period) / 1000)),
    memoryLimitInBytes: memoryLimit ?? 0,
  };
}

export interface ContainerConfigInputs {
  pod: IPod;
  container: IContainer;
  kind: L.ContainerKind;
  restartCount: number;
  imageRef: string;
  /** Host file bind-mounted at terminationMessagePath, when the kubelet has a root dir. */
  terminationMessageFile?: string;
  /** The resolved environment (envFrom, env, downward API), in order. */
  env?: { key: string; value: string }[];
  /** Volume mounts and the managed /etc/hosts, already resolved to host paths. */
  mounts?: T.MountInput[];
  /** For the OOM score of Burstable containers. */
  memoryCapacityBytes?: number;
  /** The spec copy was recorded in the pod's directory (spec-copy.ts): none on the container record. */
  specCopyInPodDir?: boolean;
}

const SECCOMP_TYPES: Record<string, T.SecurityProfileInput['profileType']> = {
  RuntimeDefault: 'RuntimeDefault',
  Unconfined: 'Unconfined',
  Localhost: 'Localhost',
};

/** Container seccomp wins over the pod's; none means Unconfined, as the kubelet without SeccompDefault. */
function seccompProfile(pod: IPod, container: IContainer): T.SecurityProfileInput {
  const p = container.securityContext?.seccompProfile ?? pod.spec?.securityContext?.seccompProfile;
  if (!p) return { profileType: 'Unconfined' };
  return { profileType: SECCOMP_TYPES[p.type] ?? 'Unconfined', localhostRef: p.type === 'Localhost' ? (p.localhostProfile ?? '') : '' };
}

const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';

/**
 * The kubelet's getAppArmorProfile: the container's field, else the pod's, else the deprecated
 * annotation; as the CRI SecurityProfile and the older string both (containerd 1.6 reads either).
 * None set: nothing is sent and the runtime applies its own default.
 */
export function appArmorProfile(
  pod: IPod,
  container: IContainer,
): { apparmor: T.SecurityProfileInput; apparmorProfile: string } | undefined {
  let p = container.securityContext?.appArmorProfile ?? pod.spec?.securityContext?.appArmorProfile;
  if (!p) {
    const a = pod.metadata?.annotations?.[`${APPARMOR_ANNOTATION}${container.name}`];
    if (a === 'runtime/default') p = { type: 'RuntimeDefault' };
    else if (a === 'unconfined') p = { type: 'Unconfined' };
    else if (a?.startsWith('localhost/')) p = { type: 'Localhost', localhostProfile: a.slice('localhost/'.length) };
  }
  if (!p) return undefined;
  if (p.type === 'Localhost')
    return {
      apparmor: { profileType: 'Localhost', localhostRef: p.localhostProfile ?? '' },
      apparmorProfile: `localhost/${p.localhostProfile ?? ''}`,
    };
  if (p.type === 'RuntimeDefault') return { apparmor: { profileType: 'RuntimeDefault' }, apparmorProfile: 'runtime/default' };
  return { apparmor: { profileType: 'Unconfined' }, apparmorProfile: 'unconfined' };
}

/** SELinux options: the container's replace the pod's as a whole, as in the kubelet's effective security context. */
function seLinuxOptions(
  o: { user?: string; role?: string; type?: string; level?: string } | undefined,
): T.LinuxContainerSecurityContextInput['selinuxOptions'] {
  return o ? { user: o.user ?? '', role: o.role ?? '', type: o.type ?? '', level: o.level ?? '' } : undefined;
}

/** The kubelet's generateContainerConfig (env from values only; volumes come later). */
export function containerConfig(inputs: ContainerConfigInputs): T.ContainerConfigInput {
  const { pod, container, kind, restartCount, imageRef, terminationMessageFile } = inputs;
  const env =
    inputs.env ?? (container.env ?? []).filter((e) => e.valueFrom === undefined).map((e) => ({ key: e.name, value: e.value ?? '' }));
  const id = podIdentity(pod);
  const sc = container.securityContext ?? {};
  const podSc = pod.spec?.securityContext ?? {};
  const runAsUser = sc.runAsUser ?? podSc.runAsUser;
  const runAsGroup = sc.runAsGroup ?? podSc.runAsGroup;
  const ports = (container.ports ?? []).map((p) => ({
    name: p.name,
    containerPort: p.containerPort,
    protocol: p.protocol ?? 'TCP',
    hostPort: p.hostPort,
  }));
  const annotations: Record<string, string> = {
    [L.CONTAINER_HASH_ANNOTATION]: hashContainer(container),
    [L.CONTAINER_RESTART_COUNT_ANNOTATION]: String(restartCount),
    [L.CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION]: container.terminationMessagePath ?? '/dev/termination-log',
    [L.CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION]: container.terminationMessagePolicy ?? 'File',
    [L.POD_TERMINATION_GRACE_PERIOD_ANNOTATION]: String(pod.spec?.terminationGracePeriodSeconds ?? 30),
    [L.CONTAINER_KIND_ANNOTATION]: kind,
  };
  if (!inputs.specCopyInPodDir) annotations[L.CONTAINER_SPEC_ANNOTATION] = containerSpecJSON(container);
  if (ports.length) annotations[L.CONTAINER_PORTS_ANNOTATION] = JSON.stringify(ports);
  // As the kubelet: a pod no source describes any more still gets its preStop hook when killed.
  if (container.lifecycle?.preStop) annotations[L.CONTAINER_PRESTOP_HANDLER_ANNOTATION] = JSON.stringify(container.lifecycle.preStop);
  return {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: imageRef, userSpecifiedImage: container.image ?? '' },
    command: expandCommand(container.command, env),
    args: expandCommand(container.args, env),
    workingDir: container.workingDir ?? '',
    envs: env,
    labels: L.containerLabels(id, container.name),
    annotations,
    logPath: containerLogPath(container.name, restartCount),
    mounts: [
      ...(inputs.mounts ?? []),
      ...(terminationMessageFile
        ? [{ containerPath: container.terminationMessagePath ?? '/dev/termination-log', hostPath: terminationMessageFile, readonly: false }]
        : []),
    ],
    stdin: container.stdin ?? false,
    stdinOnce: container.stdinOnce ?? false,
    tty: container.tty ?? false,
    linux: {
      resources: { ...linuxResources(container), oomScoreAdj: oomScoreAdj(pod, container, inputs.memoryCapacityBytes ?? totalmem()) },
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        privileged: sc.privileged ?? false,
        readonlyRootfs: sc.readOnlyRootFilesystem ?? false,
        runAsUser: runAsUser === undefined ? undefined : { value: runAsUser },
        runAsGroup: runAsGroup === undefined ? undefined : { value: runAsGroup },
        // fsGroup owns the pod's volumes: the container joins it, as under the kubelet.
        supplementalGroups: [...(podSc.supplementalGroups ?? []), ...(podSc.fsGroup === undefined ? [] : [podSc.fsGroup])],
        noNewPrivs: sc.allowPrivilegeEscalation === false,
        seccomp: seccompProfile(pod, container),
        ...appArmorProfile(pod, container),
        selinuxOptions: seLinuxOptions(sc.seLinuxOptions ?? podSc.seLinuxOptions),
        capabilities: sc.capabilities
          ? { addCapabilities: sc.capabilities.add ?? [], dropCapabilities: sc.capabilities.drop ?? [] }
          : undefined,
      },
    },
  };
}
