import type { IContainer, IPod } from 'kubernetes-models/v1';
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
 * The CRI config of a debug container: a container of the pod in every
 * respect (its log directory, its network and IPC), marked as ephemeral so
 * that computePodActions, the status and housekeeping leave it alone.
 */
export function ephemeralContainerConfig(inputs: EphemeralInputs): T.ContainerConfigInput {
  const config = containerConfig({ pod: inputs.pod, container: inputs.container, kind: 'app', restartCount: 0, imageRef: inputs.imageRef });
  config.labels = { ...config.labels, [L.EPHEMERAL_LABEL]: 'true' };
  config.annotations = { ...config.annotations, [L.CONTAINER_KIND_ANNOTATION]: 'ephemeral' };
  const security = config.linux!.securityContext!;
  if (inputs.targetId) security.namespaceOptions = { ...security.namespaceOptions, pid: 'TARGET', targetId: inputs.targetId };
  return config;
}
