import type { IContainer, IPod } from 'kubernetes-models/v1';
import { hashContainer } from '../../src/core/kuberuntime/hash.js';
import type { RuntimeContainerStatus, RuntimePodStatus, RuntimeSandboxStatus } from '../../src/core/container/types.js';

/** A defaulted pod as the manifest layer hands it to the core. */
export function makePod(
  overrides: {
    name?: string;
    uid?: string;
    restartPolicy?: 'Always' | 'OnFailure' | 'Never';
    containers?: IContainer[];
    initContainers?: IContainer[];
    hostNetwork?: boolean;
  } = {},
): IPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: overrides.name ?? 'web', namespace: 'default', uid: overrides.uid ?? 'uid-1' },
    spec: {
      restartPolicy: overrides.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: 30,
      hostNetwork: overrides.hostNetwork,
      containers: overrides.containers ?? [container('app')],
      initContainers: overrides.initContainers,
    },
  };
}

export function container(name: string, extra: Partial<IContainer> = {}): IContainer {
  return { name, image: 'busybox:1.36', command: ['sleep', '3600'], imagePullPolicy: 'IfNotPresent', ...extra };
}

export function sandbox(extra: Partial<RuntimeSandboxStatus> = {}): RuntimeSandboxStatus {
  return { id: 'sb-1', state: 'ready', createdAt: 1000, attempt: 0, ip: '10.89.0.5', additionalIps: [], hostNetwork: false, ...extra };
}

let nextId = 1;

/** A runtime container instance of spec container c. */
export function instance(c: IContainer, extra: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  return {
    id: `c-${nextId++}`,
    name: c.name,
    state: 'running',
    createdAt: 2000 + nextId,
    startedAt: 2000 + nextId,
    image: c.image ?? '',
    imageRef: 'sha256:abc',
    imageId: 'sha256:abc',
    hash: hashContainer(c),
    restartCount: 0,
    kind: 'app',
    ...extra,
  };
}

export function podStatus(pod: IPod, sandboxes: RuntimeSandboxStatus[], containers: RuntimeContainerStatus[]): RuntimePodStatus {
  return {
    uid: pod.metadata!.uid!,
    name: pod.metadata!.name!,
    namespace: 'default',
    ips: sandboxes[0]?.ip ? [sandboxes[0].ip] : [],
    sandboxes,
    containers,
    timestamp: 5000,
  };
}
