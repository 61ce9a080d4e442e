import { PodctlError } from '../core/errors.js';
import { AgentRequestError, type AgentClient } from '../core/node/client.js';
import type { AppliedPodRef } from '../core/node/node.js';
import { ManifestError } from '../core/pod/problems.js';
import type { ReadManifests } from '../core/pod/read.js';
import type { ManifestProblem } from '../core/pod/types.js';
import type { NodeInfo } from '../core/admission.js';
import { noPodFound, printWarnings } from './manifest-args.js';

/**
 * Manifests handed to the agent as read (POST /v1/manifests/*): the agent reads, validates and
 * admits them, and its refusals come back here as the command would have said them itself.
 */

/**
 * The agent's refusal of manifests (a 400) as the command would have refused them itself: the same
 * ManifestError (every problem, its hint and exit code), or no Pod in them. Any other error as it is.
 */
export function manifestRefusal(err: unknown, paths: string[]): unknown {
  if (!(err instanceof AgentRequestError) || err.status !== 400) return err;
  const d = err.details as { problems?: ManifestProblem[]; warnings?: ManifestProblem[]; noPods?: boolean };
  if (Array.isArray(d.problems) && d.problems.length) return new ManifestError(d.problems, d.warnings ?? []);
  if (d.noPods) {
    printWarnings(d.warnings ?? []);
    return noPodFound(paths);
  }
  return err;
}

/**
 * Hands the manifests to the agent on the root dir, which reads and admits them with this command's
 * settings; the pods it now keeps. Undefined when no agent answers there (or an older one, without
 * the route): the command then reads them itself. Refusals throw as the command would have: the
 * manifests' problems, or each pod rejected at admission on stderr and nothing handed over.
 */
export async function handManifestsOver(
  agent: AgentClient,
  read: ReadManifests,
  paths: string[],
  admission: { nodeName: string; allowPrivileged: boolean; node: NodeInfo },
): Promise<AppliedPodRef[] | undefined> {
  let answer: Awaited<ReturnType<AgentClient['applyManifests']>>;
  try {
    answer = await agent.applyManifests({
      manifests: read,
      nodeName: admission.nodeName,
      admission: { allowPrivileged: admission.allowPrivileged, node: admission.node },
    });
  } catch (err) {
    // No agent there (no socket, nobody listening): not an answer.
    if (!(err instanceof AgentRequestError)) return undefined;
    const d = err.details as { rejected?: { pod: string; message: string }[]; warnings?: ManifestProblem[] };
    if (err.status === 403 && Array.isArray(d.rejected)) {
      printWarnings(d.warnings ?? []);
      for (const r of d.rejected) process.stderr.write(`${r.pod}: rejected at admission: ${r.message}\n`);
      throw new PodctlError(err.message);
    }
    throw manifestRefusal(err, paths);
  }
  if (!answer) return undefined;
  printWarnings(answer.warnings);
  return answer.pods;
}
