import type { IPod } from 'kubernetes-models/v1';
import { formatProblem, loadManifests, type ManifestSet } from '../core/pod/index.js';
import { PodctlError } from '../core/errors.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { admitPod, type NodeInfo } from '../core/admission.js';
import { podKey } from '../core/util/pod-key.js';

/** Loads the manifests named on the command line; warnings go to stderr. */
export async function loadPodsFromArgs(paths: string[], nodeName: string, texts?: { file: string; text: string }[]): Promise<ManifestSet> {
  // texts: every file's text as read (stdin too), for handing the manifests to the agent as they are.
  const set = await loadManifests(paths, {
    nodeName,
    readStdin: async () => {
      const text = await readStdin();
      texts?.push({ file: '<stdin>', text });
      return text;
    },
  });
  for (const w of set.warnings) process.stderr.write(`Warning: ${formatProblem(w)}\n`);
  if (set.pods.length === 0) {
    throw new PodctlError(`no Pod found in ${paths.join(', ')}`, { hint: 'expected at least one document with apiVersion: v1 and kind: Pod', exitCode: 2 });
  }
  if (texts) for (const file of set.files) texts.push({ file, text: readFileSync(file, 'utf8') });
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
 * anything: privileged containers need --allow-privileged, a pod a running
 * watch keeps is left to it, and, given the node, the GeneralPredicates
 * (node affinity, host ports, resources: src/core/admission.ts). Without the
 * node (plans), only host ports are checked.
 */
export function admitPods(
  pods: IPod[],
  opts: { allowPrivileged?: boolean; keptByWatch?: { pods: Set<string>; rootDir: string }; node?: NodeInfo } = {},
): { admitted: IPod[]; rejected: { pod: IPod; reason: string; message: string }[] } {
  const claimed = new Map<string, string>();
  const admitted: IPod[] = [];
  const rejected: { pod: IPod; reason: string; message: string }[] = [];
  for (const pod of pods) {
    const name = podKey(pod);
    if (opts.keptByWatch?.pods.has(name)) {
      rejected.push({ pod, reason: 'KeptByWatch', message: `the watch on ${opts.keptByWatch.rootDir} keeps this pod; change its manifest there, or stop that watch first` });
      continue;
    }
    const privileged = [...(pod.spec!.initContainers ?? []), ...pod.spec!.containers].find((c) => c.securityContext?.privileged);
    if (privileged && !opts.allowPrivileged) {
      rejected.push({ pod, reason: 'Forbidden', message: `container ${privileged.name} is privileged; pass --allow-privileged to run privileged containers` });
      continue;
    }
    if (opts.node) {
      const result = admitPod(pod, admitted, opts.node);
      if (!result.admit) {
        rejected.push({ pod, reason: result.reason, message: `${result.reason}: ${result.message}` });
        continue;
      }
      admitted.push(pod);
      continue;
    }
    const ports = pod.spec!.containers.flatMap((c) => (c.ports ?? []).filter((p) => p.hostPort).map((p) => `${p.protocol ?? 'TCP'}/${p.hostIP ?? '0.0.0.0'}:${p.hostPort}`));
    const conflict = ports.find((p) => claimed.has(p));
    if (conflict) {
      rejected.push({ pod, reason: 'NodePorts', message: `host port ${conflict} is already claimed by pod ${claimed.get(conflict)}` });
      continue;
    }
    for (const p of ports) claimed.set(p, name);
    admitted.push(pod);
  }
  return { admitted, rejected };
}

/**
 * The pods a running watch keeps on this state dir (namespace/name): run and
 * sync-once leave them to it rather than fight over them (and kill them on exit).
 */
export async function podsKeptByWatch(rootDir: string): Promise<Set<string>> {
  try {
    // Imported here: validate, which reads manifests, makes no request and need not load Node's http.
    const { getFromStatusSocket } = await import('../core/status/client.js');
    const list = await getFromStatusSocket<{ items: IPod[] }>(join(rootDir, 'podctl.sock'), '/pods', 1000);
    return new Set(list.items.map((p) => podKey(p)));
  } catch {
    return new Set();
  }
}
