import { join } from 'node:path';
import { realClock } from '../core/clock.js';
import type { CriClient } from '../core/cri/client.js';
import { PodctlError, escapeControls, quoteName } from '../core/errors.js';
import { PodView, defaultContainer, findRuntimePod, newestInstance, type RuntimePod } from '../core/podview/index.js';
import type { RuntimeContainerStatus } from '../core/container/types.js';
import { hostIP } from '../core/node/paths.js';
import { connect, type GlobalFlags } from './runtime.js';

/** A PodView on the resolved runtime, preferring the watch under --root-dir. */
export async function openPodView(
  flags: GlobalFlags & { 'root-dir': string },
): Promise<{ view: PodView; client: CriClient; statusSocket: string }> {
  const { client } = await connect(flags);
  const statusSocket = join(flags['root-dir'], 'podctl.sock');
  const view = new PodView({ runtime: client, images: client, clock: realClock, statusSocket, hostIP: hostIP() });
  return { view, client, statusSocket };
}

/** The pod, or the one-line "not found" error (exit 1). */
export async function requirePod(view: PodView, namespace: string, name: string): Promise<RuntimePod> {
  const pod = await findRuntimePod(view, namespace, name);
  if (!pod) throw new PodctlError(`pod ${quoteName(name)} not found in namespace ${escapeControls(namespace)}`);
  return pod;
}

export function containerNames(pod: RuntimePod): string[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name);
}

/**
 * The container a command acts on: -c when given (it must exist), else
 * kubectl's default, with kubectl's note when the pod has more than one.
 */
export function chooseContainer(pod: RuntimePod, name: string | undefined, flag = '-c'): string {
  const names = containerNames(pod);
  if (name !== undefined) {
    if (!names.includes(name)) {
      throw new PodctlError(
        `${flag} ${quoteName(name)}: no such container in pod "${pod.runtime.name}"; choose one of: ${names.join(', ')}`,
      );
    }
    return name;
  }
  const chosen = defaultContainer(pod);
  if (!chosen) throw new PodctlError(`pod "${pod.runtime.name}" has no containers`);
  if (pod.spec.containers.length > 1) process.stderr.write(`Defaulted container "${chosen}" out of: ${names.join(', ')}\n`);
  return chosen;
}

/** The running instance of a container, or the one-line error saying what state it is in. */
export function requireRunning(pod: RuntimePod, container: string): RuntimeContainerStatus {
  const instance = newestInstance(pod, container);
  if (instance?.state !== 'running') {
    const state = instance
      ? `${instance.state}${instance.exitCode === undefined ? '' : ` (exit ${instance.exitCode})`}`
      : 'not created yet';
    throw new PodctlError(`container "${container}" in pod "${pod.runtime.name}" is not running: ${state}`, {
      hint: `see \`podctl logs ${pod.runtime.name} -c ${container}\``,
    });
  }
  return instance;
}
