import { join } from 'node:path';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import type * as T from '../cri/types.js';
import { bytes, milliCPU } from '../util/quantity.js';
import { canonicalJSON, hashContainer } from './hash.js';
import * as L from './labels.js';

/** Where a pod's logs live: <logRoot>/<namespace>_<name>_<uid>. */
export function podLogDirectory(logRoot: string, pod: IPod): string {
  const m = pod.metadata!;
  return join(logRoot, `${m.namespace}_${m.name}_${m.uid}`);
}

/** Relative to the pod log directory: <container>/<restartCount>.log. */
export function containerLogPath(containerName: string, restartCount: number): string {
  return join(containerName, `${restartCount}.log`);
}

export function podIdentity(pod: IPod): L.PodIdentity {
  const m = pod.metadata!;
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

/** The kubelet's generatePodSandboxConfig. */
export function podSandboxConfig(pod: IPod, attempt: number, logRoot: string, agent = 'run'): T.PodSandboxConfigInput {
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
  let dnsConfig: T.DNSConfigInput | undefined;
  if (spec.dnsPolicy === 'None' && spec.dnsConfig) {
    dnsConfig = {
      servers: spec.dnsConfig.nameservers ?? [],
      searches: spec.dnsConfig.searches ?? [],
      options: (spec.dnsConfig.options ?? []).map((o) => (o.value === undefined ? o.name ?? '' : `${o.name}:${o.value}`)),
    };
  }
  return {
    metadata: { name: id.name, namespace: id.namespace, uid: id.uid, attempt },
    // As the kubelet: a host-network pod keeps the host's hostname (runc refuses to set one there).
    hostname: spec.hostNetwork ? '' : (spec.hostname ?? id.name).slice(0, 63),
    logDirectory: podLogDirectory(logRoot, pod),
    dnsConfig,
    portMappings,
    labels: L.sandboxLabels(id, pod.metadata?.labels, agent),
    annotations: { ...(pod.metadata?.annotations ?? {}), [L.POD_SPEC_ANNOTATION]: canonicalJSON(spec) },
    linux: {
      cgroupParent: '',
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        privileged,
        runAsUser: sc.runAsUser === undefined ? undefined : { value: sc.runAsUser },
        runAsGroup: sc.runAsGroup === undefined ? undefined : { value: sc.runAsGroup },
        supplementalGroups: sc.supplementalGroups ?? [],
      },
      sysctls: Object.fromEntries((sc.sysctls ?? []).map((s) => [s.name, s.value])),
    },
  };
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

/** The spec fields that decide the container's hash, kept compact for diffs. */
export function containerSpecForHash(container: IContainer): IContainer {
  return container;
}

export interface ContainerConfigInputs {
  pod: IPod;
  container: IContainer;
  kind: L.ContainerKind;
  restartCount: number;
  imageRef: string;
}

/** The kubelet's generateContainerConfig (env from values only; volumes come later). */
export function containerConfig({ pod, container, kind, restartCount, imageRef }: ContainerConfigInputs): T.ContainerConfigInput {
  const id = podIdentity(pod);
  const sc = container.securityContext ?? {};
  const podSc = pod.spec?.securityContext ?? {};
  const runAsUser = sc.runAsUser ?? podSc.runAsUser;
  const runAsGroup = sc.runAsGroup ?? podSc.runAsGroup;
  const ports = (container.ports ?? []).map((p) => ({ name: p.name, containerPort: p.containerPort, protocol: p.protocol ?? 'TCP', hostPort: p.hostPort }));
  const annotations: Record<string, string> = {
    [L.CONTAINER_HASH_ANNOTATION]: hashContainer(container),
    [L.CONTAINER_RESTART_COUNT_ANNOTATION]: String(restartCount),
    [L.CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION]: container.terminationMessagePath ?? '/dev/termination-log',
    [L.CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION]: container.terminationMessagePolicy ?? 'File',
    [L.POD_TERMINATION_GRACE_PERIOD_ANNOTATION]: String(pod.spec?.terminationGracePeriodSeconds ?? 30),
    [L.CONTAINER_SPEC_ANNOTATION]: canonicalJSON(containerSpecForHash(container)),
    [L.CONTAINER_KIND_ANNOTATION]: kind,
  };
  if (ports.length) annotations[L.CONTAINER_PORTS_ANNOTATION] = JSON.stringify(ports);
  return {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: imageRef, userSpecifiedImage: container.image ?? '' },
    command: container.command ?? [],
    args: container.args ?? [],
    workingDir: container.workingDir ?? '',
    envs: (container.env ?? []).filter((e) => e.valueFrom === undefined).map((e) => ({ key: e.name, value: e.value ?? '' })),
    labels: L.containerLabels(id, container.name),
    annotations,
    logPath: containerLogPath(container.name, restartCount),
    stdin: container.stdin ?? false,
    stdinOnce: container.stdinOnce ?? false,
    tty: container.tty ?? false,
    linux: {
      resources: linuxResources(container),
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        privileged: sc.privileged ?? false,
        readonlyRootfs: sc.readOnlyRootFilesystem ?? false,
        runAsUser: runAsUser === undefined ? undefined : { value: runAsUser },
        runAsGroup: runAsGroup === undefined ? undefined : { value: runAsGroup },
        supplementalGroups: podSc.supplementalGroups ?? [],
        noNewPrivs: sc.allowPrivilegeEscalation === false,
        capabilities: sc.capabilities
          ? { addCapabilities: sc.capabilities.add ?? [], dropCapabilities: sc.capabilities.drop ?? [] }
          : undefined,
      },
    },
  };
}
