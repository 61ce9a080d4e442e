import type { IPod } from 'kubernetes-models/v1/Pod';

export type {
  IContainer as Container,
  IPodSpec as PodSpec,
  IPodStatus as PodStatus,
  IContainerStatus as ContainerStatus,
  IProbe as Probe,
  IConfigMap as ConfigMap,
  ISecret as Secret,
} from 'kubernetes-models/v1';
export type Pod = IPod;

export interface PodSource {
  kind: 'file' | 'http' | 'stdin';
  /** Absolute file path, URL, or '-'. */
  path: string;
  /** 0-based document index within that source. */
  index: number;
}

export interface LoadedPod {
  /** Defaulted, with metadata.uid and the kubelet's config.* annotations set. */
  pod: Pod;
  source: PodSource;
}

export interface ManifestProblem {
  /** The file as the user named it (relative stays relative). */
  file: string;
  /** 0-based document index, shown 1-based; -1 for a problem with the file itself. */
  index: number;
  kind?: string;
  name?: string;
  /** Field path such as spec.containers[1].name; empty for the whole document. */
  field: string;
  /** What was wrong and what was expected. */
  message: string;
  severity: 'error' | 'warning';
}
