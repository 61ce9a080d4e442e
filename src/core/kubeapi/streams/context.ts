import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../cri/client.js';

/** What a pod's stream is served with: the router has authenticated the client, found the pod and checked its phase. */
export interface PodStreamContext {
  /** The desired pod with its status (metadata.uid, status.containerStatuses[].containerID "containerd://ID"). */
  pod: IPod;
  cri: CriClient;
  log?: (msg: string) => void;
}
