import type { IPod } from 'kubernetes-models/v1';
import { CONFIG_FILE_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../pod/load.js';
import { graceFromRuntime, RuntimeManager } from '../kuberuntime/manager.js';
import type { PodView, RuntimePod } from './index.js';

/** The grace a delete gives a pod: the override, else the pod's terminationGracePeriodSeconds (30 s by default). */
export function deleteGracePeriod(pod: RuntimePod, override?: number): number {
  if (override !== undefined && override >= 0) return override;
  return pod.spec.terminationGracePeriodSeconds ?? graceFromRuntime(pod.runtime);
}

/**
 * Deletes a pod as the kubelet terminates one: KillPod (each container
 * stopped with the grace period, preStop hooks run by the runtime manager),
 * then every container and sandbox removed.
 */
export async function deleteRuntimePod(view: PodView, pod: RuntimePod, gracePeriodSeconds: number): Promise<void> {
  // Only kills and removes: the pod's directories come from what its sandbox recorded, so no log root is needed.
  const manager = new RuntimeManager({ runtime: view.opts.runtime, images: view.opts.images, clock: view.opts.clock, logRoot: '' });
  await manager.killPodByStatus(pod.runtime, gracePeriodSeconds);
  await manager.removePod(pod.runtime);
}

/** Where a pod the running watch keeps comes from, when that source would start it again. */
export function watchSourceOf(pod: IPod): { kind: 'file' | 'http'; where: string } | undefined {
  const a = pod.metadata?.annotations ?? {};
  const source = a[CONFIG_SOURCE_ANNOTATION];
  if (source === 'file') return { kind: 'file', where: a[CONFIG_FILE_ANNOTATION] ?? 'its manifests path' };
  if (source === 'http') return { kind: 'http', where: 'its --manifest-url' };
  return undefined;
}
