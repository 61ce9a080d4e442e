import type { IPod } from 'kubernetes-models/v1';
import { formatProblem, loadManifests, type ManifestSet } from '../core/pod/index.js';
import { PodctlError } from '../core/errors.js';

/** Loads the manifests named on the command line; warnings go to stderr. */
export async function loadPodsFromArgs(paths: string[], nodeName: string): Promise<ManifestSet> {
  const set = await loadManifests(paths, { nodeName, readStdin });
  for (const w of set.warnings) process.stderr.write(`Warning: ${formatProblem(w)}\n`);
  if (set.pods.length === 0) {
    throw new PodctlError(`no Pod found in ${paths.join(', ')}`, { hint: 'expected at least one document with apiVersion: v1 and kind: Pod', exitCode: 2 });
  }
  return set;
}

/** All of standard input, for manifests given as `-`. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The kubelet's admission, for what one node can check before running
 * anything: two pods may not claim the same host port, and privileged
 * containers need --allow-privileged.
 */
export function admitPods(pods: IPod[], opts: { allowPrivileged?: boolean } = {}): { admitted: IPod[]; rejected: { pod: IPod; message: string }[] } {
  const claimed = new Map<string, string>();
  const admitted: IPod[] = [];
  const rejected: { pod: IPod; message: string }[] = [];
  for (const pod of pods) {
    const name = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
    const privileged = [...(pod.spec!.initContainers ?? []), ...pod.spec!.containers].find((c) => c.securityContext?.privileged);
    if (privileged && !opts.allowPrivileged) {
      rejected.push({ pod, message: `container ${privileged.name} is privileged; pass --allow-privileged to run privileged containers` });
      continue;
    }
    const ports = pod.spec!.containers.flatMap((c) => (c.ports ?? []).filter((p) => p.hostPort).map((p) => `${p.protocol ?? 'TCP'}/${p.hostIP ?? '0.0.0.0'}:${p.hostPort}`));
    const conflict = ports.find((p) => claimed.has(p));
    if (conflict) {
      rejected.push({ pod, message: `host port ${conflict} is already claimed by pod ${claimed.get(conflict)}` });
      continue;
    }
    for (const p of ports) claimed.set(p, name);
    admitted.push(pod);
  }
  return { admitted, rejected };
}
