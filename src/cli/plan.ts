import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../core/cri/client.js';
import { PodctlError } from '../core/errors.js';
import type { Plan } from '../core/plan.js';
import { AgentClient, AgentRequestError } from '../core/node/client.js';
import { manifestRefusal } from './handover.js';
import { noPodFound, printWarnings, readManifestArgs } from './manifest-args.js';
import { renderPlan } from './render.js';
import { clientFor, resolveFromFlags, type GlobalFlags } from './runtime.js';

/** Exit code of a plan that would change something (terraform plan -detailed-exitcode). */
export const PLAN_CHANGES_EXIT_CODE = 2;

export { planFlags } from './plan-flags.js';

/**
 * Plans the pods against the runtime and prints the plan; returns the exit
 * code: 0 when nothing would change, 2 when something would.
 */
export async function printPlan(
  client: CriClient,
  pods: IPod[],
  opts: { prune: boolean; output: string; log: (text: string) => void; nodeName?: string },
): Promise<number> {
  // Plan only reads: GetPodStatus, ImageStatus, ListPodSandbox. The status reader loads with the runtime's path only.
  const [{ PodStatusReader }, { planPods }, { realClock }] = await Promise.all([
    import('../core/kuberuntime/pod-status.js'),
    import('../core/plan.js'),
    import('../core/clock.js'),
  ]);
  const statusReader = new PodStatusReader({ runtime: client, clock: realClock });
  const plan: Plan = await planPods({ runtime: client, images: client, statusReader }, pods, {
    prune: opts.prune,
    now: realClock.now(),
    nodeName: opts.nodeName,
  });
  return printPlanAnswer(plan, opts);
}

/** Errors of a plan exit 1, whatever code the failing layer chose (2 means "would change"). */
export async function asPlanError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof PodctlError && err.exitCode !== 1)
      throw new PodctlError(err.message, { hint: err.hint, exitCode: 1, cause: err.cause });
    throw err;
  }
}

/**
 * The pods as the agent on the root dir knows them: a pod handed to it has the UID of its applied file,
 * not of the file given here, so the plan compares with what runs instead of planning a second pod.
 */
export async function withAgentUIDs(pods: IPod[], rootDir: string): Promise<IPod[]> {
  const agent = new AgentClient(rootDir);
  if (!(await agent.running())) return pods;
  const { withKeptUIDs } = await import('../core/plan.js');
  return withKeptUIDs(pods, await agent.pods().catch(() => [] as IPod[]));
}

/**
 * The plan from the agent on the root dir when it reads the same runtime: it holds the runtime's
 * state already, and this process then loads no gRPC. Undefined when no agent answers (or an older
 * one without POST /v1/plan, or one on another runtime): the caller reads the runtime itself.
 */
export async function planByAgent(pods: IPod[], rootDir: string, runtimeEndpoint: string, prune: boolean): Promise<Plan | undefined> {
  const answer = await new AgentClient(rootDir).plan(pods, prune).catch((err: unknown) => {
    // A refusal of the pods themselves is an answer; a missing agent or route is not.
    if (err instanceof AgentRequestError && err.status === 400) throw new PodctlError(err.message, { exitCode: 1 });
    return undefined;
  });
  return answer?.runtimeEndpoint === runtimeEndpoint ? answer.plan : undefined;
}

/**
 * `podctl plan PATHS`: the manifests read, handed as they are to the agent on the root dir when it
 * reads the same runtime: it reads them as this command would (the same problems and warnings) and
 * plans them, and this process loads neither the API validators nor gRPC. Else they are read and
 * validated here, and planned by planAndPrint. The exit code.
 */
export async function planManifestsAndPrint(
  paths: string[],
  flags: GlobalFlags & { 'root-dir': string; 'node-name': string },
  opts: { prune: boolean; output: string; log: (text: string) => void },
): Promise<number> {
  const read = await readManifestArgs(paths);
  const endpoints = await resolveFromFlags(flags);
  let agentAnswers = true;
  const answer = await new AgentClient(flags['root-dir'])
    .planManifests({ manifests: read, nodeName: flags['node-name'], prune: opts.prune })
    .catch((err: unknown) => {
      if (err instanceof AgentRequestError && err.status === 400) throw manifestRefusal(err, paths);
      // No agent (no socket, nobody listening) or one that failed: the runtime is read here.
      agentAnswers = err instanceof AgentRequestError;
      return undefined;
    });
  if (answer?.runtimeEndpoint === endpoints.runtime.endpoint) {
    printWarnings(answer.warnings);
    if (answer.pods === 0) throw noPodFound(paths);
    return printPlanAnswer(answer.plan, opts);
  }
  const { podsFromManifests } = await import('./manifests.js');
  const set = podsFromManifests(read, paths, flags['node-name']);
  // An agent on another runtime has answered already; an older one may still plan pods (POST /v1/plan).
  return planAndPrint(
    set.pods.map((p) => p.pod),
    flags,
    { ...opts, askAgent: agentAnswers && !answer },
  );
}

/**
 * Plans the pods and prints the plan; the exit code. An agent on the root dir that reads the same
 * runtime plans them (it reads the runtime already, and this process loads no gRPC); else the
 * runtime is read here, with the UIDs of the pods the agent keeps.
 */
export async function planAndPrint(
  pods: IPod[],
  flags: GlobalFlags & { 'root-dir': string },
  opts: { prune: boolean; output: string; log: (text: string) => void; askAgent?: boolean },
): Promise<number> {
  const endpoints = await resolveFromFlags(flags);
  const byAgent = opts.askAgent === false ? undefined : await planByAgent(pods, flags['root-dir'], endpoints.runtime.endpoint, opts.prune);
  if (byAgent) return printPlanAnswer(byAgent, opts);
  const { client } = await clientFor(endpoints);
  try {
    return await printPlan(client, await withAgentUIDs(pods, flags['root-dir']), {
      ...opts,
      nodeName: (flags as { 'node-name'?: string })['node-name'],
    });
  } finally {
    client.close();
  }
}

/** Prints a plan; the exit code: 0 when nothing would change, 2 when something would. */
export function printPlanAnswer(plan: Plan, opts: { output: string; log: (text: string) => void }): number {
  opts.log(opts.output === 'json' ? JSON.stringify(plan, null, 2) : renderPlan(plan));
  return plan.changes ? PLAN_CHANGES_EXIT_CODE : 0;
}
