import { dirname, join } from 'node:path';
import { PodctlError } from '../core/errors.js';
import { findRuntimePod, newestInstance, wouldRestart, type PodView, type RuntimePod } from '../core/podview/index.js';

/** The log file of the container's newest (or previous) instance; undefined with --all-containers when it never started. */
export function logFileOf(pod: RuntimePod, container: string, previous: boolean, lenient: boolean): string | undefined {
  const newest = newestInstance(pod, container);
  if (!newest?.logPath) {
    if (lenient) return undefined;
    const waiting = newest ? 'has no log file' : 'is waiting to start';
    throw new PodctlError(`container "${container}" in pod "${pod.runtime.name}" ${waiting}`);
  }
  if (!previous) return newest.logPath;
  if (newest.restartCount === 0) {
    if (lenient) return undefined;
    throw new PodctlError(`previous terminated container "${container}" in pod "${pod.runtime.name}" not found`);
  }
  return join(dirname(newest.logPath), `${newest.restartCount - 1}.log`);
}

/**
 * When following ends: Ctrl-C, the pod gone (or replaced), or the container
 * exited and its restartPolicy will not start it again. The runtime is asked
 * at most once a second, whichever container asks.
 */
export function followStopper(
  view: PodView,
  namespace: string,
  name: string,
  uid: string,
  interrupted: () => boolean,
): (container: string) => Promise<boolean> {
  let checkedAt = 0;
  let current: RuntimePod | undefined;
  return async (container) => {
    if (interrupted()) return true;
    if (Date.now() - checkedAt >= 1000) {
      checkedAt = Date.now();
      current = await findRuntimePod(view, namespace, name).catch(() => current);
    }
    if (!current || current.runtime.uid !== uid || !current.runtime.sandboxes.some((s) => s.state === 'ready')) return true;
    const newest = newestInstance(current, container);
    if (newest?.state !== 'exited') return false;
    const spec = [...(current.spec.initContainers ?? []), ...current.spec.containers].find((c) => c.name === container);
    return !wouldRestart(current.spec, spec, newest.kind, newest.exitCode);
  };
}
