import type { IPod } from 'kubernetes-models/v1';
import { admitPods } from '../admission.js';
import { planPods, withKeptUIDs, type PlanAnswer } from '../plan.js';
import {
  formatProblem,
  ManifestError,
  manifestSetWithDocuments,
  parseManifestText,
  validateDocument,
  type ManifestDocuments,
  type ManifestProblem,
  type ManifestSet,
} from '../pod/index.js';
import { StatusManager } from '../status/manager.js';
import { podKey, podMeta } from '../util/pod-key.js';
import { ApiError, type ApplyManifestsRequest, type ManifestsRequest, type ManifestText, type PodConditionInput } from './agent.js';
import { appliedPods, splitApplied, type AppliedPod } from './applied.js';

// What the agent reads of what a client gives it (manifests, pods to plan, a condition), before it changes anything.

/** Pods to keep, as the applied files they become, with the UID each namespace/name takes from its manifest. */
export interface PodsToKeep {
  pods: AppliedPod[];
  uids: Map<string, string>;
}

/** Manifest texts handed over, split into one applied file per pod: invalid ones, or none at all, are a 400. */
export function readApplied(files: ManifestText[], nodeName: string): PodsToKeep {
  const split = splitApplied(files, nodeName);
  if (split.problems.length) {
    throw new ApiError(400, split.problems.map(formatProblem).join('\n'), { problems: split.problems });
  }
  if (split.pods.length === 0) throw new ApiError(400, `no Pod found in ${files.map((f) => f.file).join(', ')}`);
  const uids = new Map(
    split.pods.map((p) => [
      `${p.namespace}/${p.name}`,
      podMeta(parseManifestText(p.text, { kind: 'file', path: p.name }, { nodeName }).pods[0]?.pod ?? {}).uid,
    ]),
  );
  return { pods: split.pods, uids };
}

/**
 * Manifests a command read, read here as the command would have (400 with the same problems), their
 * pods admitted with the command's own admission settings (403 naming each pod refused).
 */
export function readAdmitted(req: ApplyManifestsRequest): PodsToKeep & { warnings: ManifestProblem[] } {
  // Each text is parsed and validated once: its documents as loaded are what the applied files are made of.
  const { set, documents } = readSetWithDocuments(req);
  if (set.pods.length === 0) throw new ApiError(400, 'no Pod found in the manifests', { noPods: true, warnings: set.warnings });
  const { rejected } = admitPods(
    set.pods.map((p) => p.pod),
    req.admission,
  );
  if (rejected.length) {
    throw new ApiError(403, `${rejected.length} pod(s) rejected at admission; nothing was handed to the agent`, {
      rejected: rejected.map((r) => ({ pod: podKey(r.pod), reason: r.reason, message: r.message })),
      warnings: set.warnings,
    });
  }
  // The texts as apply takes them: stdin first, then the files by absolute path. Valid, with a pod at
  // least, and no two of one namespace/name (the set said so): what apply would refuse of them, it has.
  const texts = documents.map(({ entry, docs }) => ({ file: entry.kind === 'file' ? entry.path : '<stdin>', docs }));
  const files = [...texts.filter((t) => t.file === '<stdin>'), ...texts.filter((t) => t.file !== '<stdin>')];
  const uids = new Map(set.pods.map(({ pod }) => [podKey(pod), podMeta(pod).uid]));
  return { pods: appliedPods(files), uids, warnings: set.warnings };
}

/** What planning asks of the node: its runtime, and its clock and name. */
export interface PlanContext {
  cri: Parameters<typeof planPods>[0];
  /** The pods the node keeps: a pod planned keeps its UID. */
  kept: IPod[];
  now: number;
  nodeName: string;
}

/** Pods planned against the node's runtime, each validated as apply validates a manifest's, before anything asks the runtime. */
export async function planRequest(ctx: PlanContext, req: { pods: unknown[]; prune: boolean }): Promise<PlanAnswer> {
  const problems: { field: string; message: string }[] = [];
  req.pods.forEach((pod: unknown, i) => {
    const at = `pods[${i}]`;
    if (pod === null || typeof pod !== 'object' || Array.isArray(pod)) {
      return void problems.push({
        field: at,
        message: `expected a v1 Pod (a mapping), got ${pod === null ? 'null' : Array.isArray(pod) ? 'a list' : typeof pod}`,
      });
    }
    for (const p of validateDocument('Pod', pod as Record<string, unknown>, 'error'))
      if (p.severity === 'error') problems.push({ field: `${at}.${p.field}`, message: p.message });
    const uid = (pod as IPod).metadata?.uid;
    if (typeof uid !== 'string' || uid === '')
      problems.push({ field: `${at}.metadata.uid`, message: 'required: the UID the command gave the pod' });
  });
  if (problems.length) {
    throw new ApiError(400, problems.map((p) => `${p.field}: ${p.message}`).join('\n'), { problems });
  }
  const pods = withKeptUIDs(req.pods as IPod[], ctx.kept);
  return {
    runtimeEndpoint: ctx.cri.runtime.endpoint,
    plan: await planPods(ctx.cri, pods, { prune: req.prune, now: ctx.now, nodeName: ctx.nodeName }),
  };
}

/** Manifests a command read, read here as the command would have (the same problems, warnings and UIDs), then planned. */
export async function planManifestsRequest(
  ctx: PlanContext,
  req: ManifestsRequest,
): Promise<PlanAnswer & { pods: number; warnings: ManifestProblem[] }> {
  const set = readSetWithDocuments(req).set;
  const pods = withKeptUIDs(
    set.pods.map((p) => p.pod),
    ctx.kept,
  );
  const plan = await planPods(ctx.cri, pods, { prune: req.prune === true, now: ctx.now, nodeName: ctx.nodeName });
  return { runtimeEndpoint: ctx.cri.runtime.endpoint, plan, pods: set.pods.length, warnings: set.warnings };
}

/** A condition a client may set: a qualified name's type, none of the kubelet's own. */
export function checkCondition(c: PodConditionInput): void {
  if (!/^([a-z0-9.-]+\/)?[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(c.type)) {
    throw new ApiError(400, 'type: expected a condition type, e.g. example.com/feature-1 (a qualified name)');
  }
  if (StatusManager.OWNED_CONDITIONS.has(c.type))
    throw new ApiError(400, `type: ${c.type} is set by the kubelet itself; set a readiness gate's condition instead`);
}

/** The manifest set of a request, with each text's documents as loaded; its problems as a 400 that carries them. */
function readSetWithDocuments(req: ManifestsRequest): { set: ManifestSet; documents: ManifestDocuments[] } {
  try {
    return manifestSetWithDocuments(req.manifests, { nodeName: req.nodeName });
  } catch (err) {
    if (err instanceof ManifestError) throw new ApiError(400, err.message, { problems: err.problems, warnings: err.warnings });
    throw err;
  }
}
