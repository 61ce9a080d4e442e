import type { IConfigMap, ISecret } from 'kubernetes-models/v1';

/** Where configMap and secret volumes read from (documents of the same manifest set). */
export interface VolumeObjects {
  configMap(namespace: string, name: string): IConfigMap | undefined;
  /** Data values are base64 as in the API (stringData already merged into data). */
  secret(namespace: string, name: string): ISecret | undefined;
}

/** What downwardAPI resourceFieldRef needs when a container sets no limit: the node's allocatable. */
export interface NodeInfo {
  nodeName: string;
  hostIP?: string;
  cpuCores: number;
  memoryBytes: number;
  /** Allocatable ephemeral storage; when unset, the size of the filesystem holding rootDir. */
  ephemeralStorageBytes?: number;
}

/** The volume kinds podctl sets up, named as the pod spec's VolumeSource fields. */
export type VolumeKind = 'emptyDir' | 'hostPath' | 'configMap' | 'secret' | 'downwardAPI' | 'projected';

export interface PodVolumeDir {
  hostPath: string;
  kind: VolumeKind | string;
  /** The plugin always mounts it read-only (configMap, secret, downwardAPI, projected), as the kubelet's mustMountRO. */
  readOnly: boolean;
}

/** The host directory of every volume of one pod, by volume name (and what kind it is). */
export interface PodVolumes {
  uid: string;
  dirs: Map<string, PodVolumeDir>;
}
