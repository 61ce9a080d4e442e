import type { IContainer, IEphemeralContainer, IPod } from 'kubernetes-models/v1';
import type { RuntimePodStatus } from '../container/types.js';
import type * as T from '../cri/types.js';
import { containerConfig } from './config.js';
import * as L from './labels.js';

export interface EphemeralInputs {
  pod: IPod;
  /** name, image, command/args, stdin/tty. */
  container: IContainer;
  imageRef: string;
  /** With a target, the container joins that container's PID namespace (kubectl debug --target). */
  targetId?: string;
}

/**
 * A container's CRI config made an ephemeral one: marked so that computePodActions, the status and
 * housekeeping leave it alone, and in the target's PID namespace when it has one (the kubelet's
 * TargetContainerName, NamespaceMode TARGET).
 */
export function markEphemeral(config: T.ContainerConfigInput, targetId?: string): T.ContainerConfigInput {
  config.labels = { ...config.labels, [L.EPHEMERAL_LABEL]: 'true' };
  config.annotations = { ...config.annotations, [L.CONTAINER_KIND_ANNOTATION]: 'ephemeral' };
  const security = config.linux!.securityContext!;
  if (targetId) security.namespaceOptions = { ...security.namespaceOptions, pid: 'TARGET', targetId };
  return config;
}

/**
 * The CRI config of a debug container: a container of the pod in every
 * respect (its log directory, its network and IPC), marked as ephemeral.
 */
export function ephemeralContainerConfig(inputs: EphemeralInputs): T.ContainerConfigInput {
  const config = containerConfig({ pod: inputs.pod, container: inputs.container, kind: 'app', restartCount: 0, imageRef: inputs.imageRef });
  return markEphemeral(config, inputs.targetId);
}

/**
 * A pod's ephemeral containers as the API lists them in spec.ephemeralContainers: from the spec copy
 * each one's runtime record keeps, in the order they were added.
 */
export function ephemeralSpecs(runtime: RuntimePodStatus | undefined): IEphemeralContainer[] {
  const byName = new Map<string, IEphemeralContainer>();
  for (const c of [...(runtime?.ephemeral ?? [])].sort((a, b) => a.createdAt - b.createdAt)) {
    if (byName.has(c.name)) continue;
    let spec: IEphemeralContainer | undefined;
    try {
      spec = c.specJSON ? (JSON.parse(c.specJSON) as IEphemeralContainer) : undefined;
    } catch {
      spec = undefined;
    }
    byName.set(c.name, spec && typeof spec === 'object' ? { ...spec, name: c.name } : { name: c.name, image: c.image });
  }
  return [...byName.values()];
}
