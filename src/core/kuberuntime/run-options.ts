import type { IContainer, IPod } from 'kubernetes-models/v1';
import type * as T from '../cri/types.js';
import { errorMessage } from '../errors.js';
import type { PodVolumes, VolumeManager } from '../volumes/index.js';
import { podRef, type RuntimeContext } from './context.js';
import { makeEnvironmentVariables } from './env.js';
import { StartContainerError } from './images.js';

/**
 * The kubelet's volume set-up before SyncPod (WaitForAttachAndMount): run every sync, so that a ConfigMap
 * or Secret that changed reaches the volumes of a running pod too. Throws in the kubelet's words.
 */
export async function setUpPodVolumes(volumes: VolumeManager | undefined, pod: IPod, ips: string[]): Promise<PodVolumes | undefined> {
  if ((pod.spec?.volumes ?? []).length === 0) return undefined;
  try {
    if (!volumes) throw new Error('volumes need a state directory (--root-dir)');
    return await volumes.setUpPodVolumes(pod, ips);
  } catch (err) {
    // VolumeErrors already speak the kubelet's words ("MountVolume.SetUp failed for volume ...").
    throw new Error(errorMessage(err).startsWith('MountVolume') ? errorMessage(err) : `MountVolume.SetUp failed: ${errorMessage(err)}`);
  }
}

/**
 * The kubelet's GenerateRunContainerOptions, less /etc/hosts (PodFiles): the container's environment
 * and its volume mounts. What cannot be resolved is a CreateContainerConfigError.
 */
export async function runContainerOptions(
  ctx: Pick<RuntimeContext, 'events' | 'objects' | 'hostIP' | 'node' | 'volumes'>,
  pod: IPod,
  container: IContainer,
  podIPs: string[],
  podVolumes: PodVolumes | undefined,
): Promise<{ env: { key: string; value: string }[]; mounts: T.MountInput[] }> {
  try {
    const resolved = makeEnvironmentVariables({ pod, container, objects: ctx.objects, podIPs, hostIP: ctx.hostIP, node: ctx.node });
    const env = resolved.env;
    if (resolved.skipped.length) {
      ctx.events.record(
        podRef(pod),
        'Warning',
        'InvalidEnvironmentVariableNames',
        `Keys [${resolved.skipped.join(', ')}] from the EnvFrom were skipped since they are invalid environment variable names.`,
        container.name,
      );
    }
    let mounts: T.MountInput[] = [];
    if (podVolumes && ctx.volumes)
      mounts = await ctx.volumes.containerMounts(pod, container, podVolumes, Object.fromEntries(env.map((e) => [e.key, e.value])));
    return { env, mounts };
  } catch (err) {
    throw err instanceof StartContainerError ? err : new StartContainerError('CreateContainerConfigError', errorMessage(err));
  }
}
