import type { IPod } from 'kubernetes-models/v1';
import ora from 'ora';
import { realClock } from '../core/clock.js';
import type { CriClient } from '../core/cri/client.js';
import { appliedWhileStopped, keptByMessage, podsKeptByAgent } from '../core/node/keeper.js';
import { missingReferences } from '../core/pod/index.js';
import type { ManifestSet } from '../core/pod/load.js';
import { podsHeldByRuntime, settleIdentities } from '../core/pod-identity.js';
import { allContainersRunning, runOnce } from '../core/runonce.js';
import { podKey, podMeta } from '../core/util/pod-key.js';
import { admitPods } from './manifests.js';
import { buildKubelet, nodeInfoFromFlags } from './node.js';
import { podWithStatus, renderObjects } from './render.js';
import { say } from './say.js';
import { statusLine } from './status-line.js';
import { renderResultTable, type ResultRow } from './table.js';

/** `podctl sync-once` once it has its pods: the kubelet's RunOnce, then one row per pod, printed. */

export type SyncOnceFlags = Parameters<typeof buildKubelet>[1] &
  Parameters<typeof nodeInfoFromFlags>[0] & { 'allow-privileged': boolean; 'max-retries': number; output: string };

type Refused = { pod: IPod; reason: string; message: string };

/** Runs the pods once and prints the result; the exit code (1 when a pod did not run). */
export async function syncPodsOnce(
  client: CriClient,
  set: ManifestSet,
  flags: SyncOnceFlags,
  timing: { timeoutMs: number; retryDelayMs: number },
  log: (text: string) => void,
): Promise<number> {
  const version = await client.version();
  const kubelet = await buildKubelet(client, flags, version.runtimeName);
  kubelet.objects.set('file', { configMaps: set.configMaps, secrets: set.secrets, runtimeClasses: set.runtimeClasses });
  const { admitted, rejected } = await admitHere(
    client,
    set.pods.map((p) => p.pod),
    flags,
  );
  const spinner =
    process.stderr.isTTY && flags.output === 'table'
      ? ora({ text: `Running ${admitted.length} pod(s)…`, stream: process.stderr }).start()
      : undefined;
  const running = new Set<string>();
  const shown = new Map<string, string>();
  const imageNotFound = (pod: IPod) => {
    const missing = kubelet.runtimeManager.imagePuller.imageNotFound(pod);
    return missing && { reason: 'ErrImagePull', message: `${missing.container}: ${missing.message}` };
  };
  const results = await runOnce(kubelet, admitted, {
    clock: realClock,
    maxRetries: flags['max-retries'],
    retryDelayMs: timing.retryDelayMs,
    timeoutMs: timing.timeoutMs,
    // The set is read once: what it does not provide now, it never will in this run. Nor will
    // retrying the pull bring an image the runtime found in no registry.
    neverStarts: (pod) =>
      missingReferences(pod, kubelet.objects).find((m) => m.reason !== 'FailedToRetrieveImagePullSecret') ?? imageNotFound(pod),
    onProgress: (pod, status, attempt) => {
      const uid = podMeta(pod).uid;
      if (allContainersRunning(pod, status) || status.phase === 'Succeeded') running.add(uid);
      // Each change after a sync, as run and watch print them: a wait of minutes says what it waits on.
      // The line at a fixed time is what changed, the clock apart.
      const change = statusLine(pod, status, new Date(0));
      if (attempt > 0 && shown.get(uid) !== change) {
        shown.set(uid, change);
        spinner?.clear();
        say(statusLine(pod, status));
      }
      if (spinner) spinner.text = `Running ${admitted.length} pod(s)… ${running.size} done`;
      spinner?.render();
    },
  });
  spinner?.stop();
  const rows: ResultRow[] = [
    ...results.map((r) => ({ pod: r.pod, status: r.status, ok: r.ok, message: r.message })),
    ...rejected.map((r) => ({
      pod: r.pod,
      status: { phase: 'Failed' as const, reason: r.reason, message: r.message },
      ok: false,
      message: `rejected at admission: ${r.message}`,
    })),
  ];
  if (flags.output === 'table') log(renderResultTable(rows));
  else
    log(
      await renderObjects(
        rows.map((r) => podWithStatus(r.pod, r.status)),
        flags.output as 'json' | 'yaml',
      ),
    );
  const failed = rows.filter((r) => !r.ok);
  if (!failed.length) return 0;
  say(`Error: ${failed.length} of ${rows.length} pod(s) failed: ${failed.map((r) => podKey(r.pod)).join(', ')}`);
  return 1;
}

/**
 * The pods this run may run, and those it refuses: kept by the node on this root dir, a UID another
 * pod holds, or rejected at admission. Each refused here (not at admission) is said whole, on one
 * line: the table wraps its RESULT column.
 */
async function admitHere(client: CriClient, pods: IPod[], flags: SyncOnceFlags): Promise<{ admitted: IPod[]; rejected: Refused[] }> {
  // A pod the node on this root dir keeps is its own (the agent, a watch, a foreground run; or handed
  // to the agent, stopped now): running it here too would make a second pod of that namespace/name.
  const rootDir = flags['root-dir'];
  const kept = await podsKeptByAgent(rootDir);
  const keptBy = (pod: IPod): string | undefined => {
    const m = podMeta(pod);
    const k = kept?.get(podKey(pod));
    return k ? keptByMessage(k, rootDir) : kept ? undefined : appliedWhileStopped(rootDir, m.namespace, m.name);
  };
  const refusedHere: Refused[] = [];
  const free = pods.filter((pod) => {
    const message = keptBy(pod);
    if (message) refusedHere.push({ pod, reason: 'KeptByNode', message });
    return !message;
  });
  // What the runtime runs under the same namespace/name is that pod (updated, not doubled); a UID another pod holds is refused.
  const settled = settleIdentities(free, await podsHeldByRuntime(client), flags['node-name']);
  for (const r of settled.refused) refusedHere.push({ ...r, reason: 'UIDConflict' });
  const admission = admitPods(settled.pods, { allowPrivileged: flags['allow-privileged'], node: nodeInfoFromFlags(flags) });
  for (const r of refusedHere) say(`${podKey(r.pod)}: refused: ${r.message}`);
  return { admitted: admission.admitted, rejected: [...refusedHere, ...admission.rejected] };
}
