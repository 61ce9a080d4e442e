import { hostname } from 'node:os';
import { PodctlError, errorMessage } from '../core/errors.js';
import { AgentClient, AgentRequestError } from '../core/node/client.js';
import { podMeta } from '../core/util/pod-key.js';
import type { GlobalFlags } from './runtime.js';
import { say, sayAllButLast, warn } from './say.js';

/** How often the agent's pods are read while its watch says nothing: a safety net for a watch that breaks or has not started. */
const POLL_MS = 1000;

/** A pod the agent keeps; by namespace and name, and by UID when known. */
export interface AgentPodRef {
  namespace: string;
  name: string;
  uid?: string;
}

/**
 * Watches the agent for these pods' end: DELETED on its watch, which the agent sends as it drops a
 * pod from its list. Opened before the pods are deleted, so that no end is missed. untilGone
 * resolves once none of them is on the agent, without reading the list of every pod again and
 * again; the list is still read every pollMs, for a watch that breaks (or an agent without one).
 */
export function watchForRemoval(
  agent: Pick<AgentClient, 'pods' | 'watchPods'>,
  refs: AgentPodRef[],
  opts: { pollMs?: number } = {},
): { untilGone(deadline?: { at: number; error: () => Error }): Promise<void>; cancel(): void } {
  const removed = new Set<AgentPodRef>();
  let wake: (() => void) | undefined;
  const watch = agent.watchPods(
    (e) => {
      const m = e.object?.metadata;
      if (e.type !== 'DELETED' || !m) return;
      const ref = refs.find((r) => m.namespace === r.namespace && m.name === r.name && (!r.uid || m.uid === r.uid));
      if (!ref) return;
      removed.add(ref);
      wake?.();
    },
    () => undefined,
  );
  return {
    async untilGone(deadline) {
      for (;;) {
        if (refs.every((r) => removed.has(r))) return;
        const listed = await agent.pods();
        if (!refs.some((r) => !removed.has(r) && listed.some((p) => p.metadata?.namespace === r.namespace && p.metadata?.name === r.name)))
          return;
        if (deadline && Date.now() > deadline.at) throw deadline.error();
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, opts.pollMs ?? POLL_MS);
        });
        clearTimeout(timer);
        wake = undefined;
      }
    },
    cancel: () => watch.cancel(),
  };
}

/**
 * Asks the agent to forget the pod and waits until it has terminated and removed it (its grace
 * period, then some); false when the agent does not keep this pod, or keeps it from a watch source.
 */
export async function deleteThroughAgent(
  agent: Pick<AgentClient, 'pods' | 'delete' | 'watchPods'>,
  namespace: string,
  name: string,
  grace: number,
  opts: { pollMs?: number } = {},
): Promise<boolean> {
  const kept = (await agent.pods()).find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name);
  const removal = watchForRemoval(agent, [{ namespace, name, uid: kept?.metadata?.uid }], opts);
  try {
    try {
      await agent.delete(namespace, name, grace);
    } catch (err) {
      // 404: not the agent's; 405: a status server that takes no deletes; 409: its watch PATH or URL keeps it
      // (deleted here, with the warning that it comes back).
      if (err instanceof AgentRequestError && [404, 405, 409].includes(err.status)) return false;
      throw err;
    }
    const seconds = grace >= 0 ? grace : (kept?.spec?.terminationGracePeriodSeconds ?? 30);
    await removal.untilGone({
      at: Date.now() + (seconds + 60) * 1000,
      error: () => new PodctlError(`the agent still terminates pod "${name}" after ${seconds + 60} s`),
    });
    return true;
  } finally {
    removal.cancel();
  }
}

export type DeleteFlags = GlobalFlags & {
  'root-dir': string;
  namespace: string;
  filename?: string[];
  'grace-period': number;
  force: boolean;
  all: boolean;
  selector?: string;
};

type PodRef = { namespace: string; name: string };

/**
 * `podctl delete`: the pods the words and flags name, validated before anything is read, then each
 * deleted by the agent that keeps it, or here from the runtime (forgetting what was handed to an agent
 * that is not running). onDeleted hears each pod deleted; a pod not found, or not deleted, throws at
 * the end, once the others are.
 */
export async function deletePods(words: string[], flags: DeleteFlags, onDeleted: (name: string) => void, bin: string): Promise<void> {
  // Reading manifests (-f) and deleting from the runtime: loaded when delete runs, not with the command index.
  const [{ loadPodsFromArgs }, { deleteGracePeriod, deleteRuntimePod, watchSourceOf }, { openPodView }, paths, { findRuntimePod }] =
    await Promise.all([
      import('./manifests.js'),
      import('../core/podview/delete.js'),
      import('./podview.js'),
      import('../core/node/paths.js'),
      import('../core/podview/index.js'),
    ]);
  const { forgetApplied, namespaceProblem, podRefProblem } = paths;
  // A bad -l is refused before the runtime is read (the selector's code loads with -l only).
  const matches = flags.selector === undefined ? undefined : (await import('./selector.js')).labelFilter(flags.selector);
  const ofNamespace = flags.all || flags.selector !== undefined;
  const targets = ofNamespace || flags.filename?.length ? [] : namedTargets(words, flags.namespace, bin);
  // As the API server validates them, before a name reaches the runtime, the agent or a path: nothing is deleted.
  // (-f: the manifests' names, validated as they are read.)
  const problems = flags.filename?.length
    ? []
    : [namespaceProblem(flags.namespace), ...targets.map((t) => podRefProblem(t.namespace, t.name))];
  const invalid = [...new Set(problems.filter((p) => p !== undefined))];
  if (invalid.length) throw new PodctlError(sayAllButLast(invalid), { exitCode: 2 });
  const { view, client } = await openPodView(flags);
  const agent = new AgentClient(flags['root-dir']);
  const agentRuns = await agent.running();
  if (ofNamespace) {
    if (flags.filename?.length || words.some((w) => !/^(pods?|po)$/.test(w)))
      throw new PodctlError(`${flags.all ? '--all' : '--selector'} deletes pods of the namespace: give no names and no -f`, {
        exitCode: 2,
      });
    for (const v of await view.list({ namespace: flags.namespace }))
      if (!matches || matches(v.pod.metadata?.labels)) targets.push({ namespace: flags.namespace, name: podMeta(v.pod).name });
  } else if (flags.filename?.length) {
    if (words.length) throw new PodctlError('give pod names or -f FILE, not both', { exitCode: 2 });
    const set = await loadPodsFromArgs(flags.filename, hostname());
    for (const p of set.pods) targets.push({ namespace: podMeta(p.pod).namespace, name: podMeta(p.pod).name });
  }
  const override = flags.force ? 0 : flags['grace-period'];
  const failures: string[] = [];
  // One pod deleted, or why not (not found).
  const deleteOne = async (t: PodRef): Promise<string | undefined> => {
    if (agentRuns && (await deleteThroughAgent(agent, t.namespace, t.name, override))) {
      onDeleted(t.name);
      return undefined;
    }
    // With no agent running, its record of the pod goes too: it would start the pod again when it next starts.
    const forgotten = !agentRuns && forgetApplied(flags['root-dir'], t.namespace, t.name);
    const pod = await findRuntimePod(view, t.namespace, t.name);
    if (!pod) {
      if (!forgotten) return `pod "${t.name}" not found in namespace ${t.namespace}`;
      onDeleted(t.name);
      return undefined;
    }
    await deleteRuntimePod(view, pod, deleteGracePeriod(pod, override));
    onDeleted(t.name);
    const kept = (await view.fromWatch(t))?.[0];
    const source = kept && watchSourceOf(kept);
    if (source) warn(comesBack(t.name, source));
    return undefined;
  };
  try {
    for (const t of targets) {
      const failure = await deleteOne(t).catch((err: unknown) => `pod "${t.name}": ${errorMessage(err)}`);
      if (failure) failures.push(failure);
    }
  } finally {
    client.close();
  }
  if (ofNamespace && targets.length === 0) say(`No resources found in ${flags.namespace} namespace.`);
  if (failures.length) throw new PodctlError(sayAllButLast(failures));
}

/** The pods named on the command line: pod NAME…, pods NAME…, po NAME…, or pod/NAME each. */
function namedTargets(words: string[], namespace: string, bin: string): PodRef[] {
  const targets: PodRef[] = [];
  const kind = (w: string | undefined) => w === 'pod' || w === 'pods' || w === 'po';
  for (const [i, w] of words.entries()) {
    const slash = /^pods?\/(.+)$/.exec(w);
    if (slash) targets.push({ namespace, name: slash[1]! });
    else if (i === 0 && kind(w)) continue;
    else if (kind(words[0])) targets.push({ namespace, name: w });
    else {
      const aName = words.length === 1 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(w);
      throw new PodctlError(`"${w}": expected pod NAME… or pod/NAME (podctl deletes pods only)`, {
        exitCode: 2,
        hint: aName ? `to delete the pod ${w}: ${bin} delete pod ${w}` : undefined,
      });
    }
  }
  if (targets.length === 0)
    throw new PodctlError('no pod named', { hint: 'e.g. `podctl delete pod web`, or -f FILE, or --all -n NS', exitCode: 2 });
  return targets;
}

/** The warning for a pod deleted here that a watch source will start again. */
function comesBack(name: string, source: { kind: 'file' | 'http'; where: string }): string {
  const how =
    source.kind === 'file'
      ? `remove it from ${source.where} (or the file) to delete it for good`
      : `remove it from what ${source.where} serves to delete it for good`;
  return `the running watch keeps pod "${name}" from ${source.where} and will start it again; ${how}`;
}
