import { AgentClient } from '../core/node/client.js';
import type { WaitFor } from '../core/node/wait.js';
import { parseDuration } from '../core/util/duration.js';
import { awaitHandedOver } from './detach.js';
import { handManifestsOver } from './handover.js';
import { readManifestArgs, textsOf } from './manifest-args.js';
import { nodeInfoFromFlags } from './node-info.js';
import type { runUntilSignal } from './run-foreground.js';

/**
 * What `podctl run` does with its manifests: hand them to a running agent (which reads and admits
 * them), print the plan (--dry-run), or admit them here, then detach (the agent keeps them), hand them
 * over until a signal, or be the node in the foreground. Only the hand-over's modules load with this
 * one; each other path imports its own when it is taken.
 */

export type RunFlags = Parameters<typeof runUntilSignal>[3] & {
  detach: boolean;
  'dry-run': boolean;
  prune: boolean;
  wait: string;
  timeout: string;
  'max-pods': number;
} & Record<string, unknown>;

/** The exit code (--dry-run: the plan's); a refusal throws. */
export async function runPods(
  paths: string[],
  flags: RunFlags,
  metadata: { flags: Record<string, { setFromDefault?: boolean } | undefined> },
  log: (line: string) => void,
): Promise<number> {
  const read = await readManifestArgs(paths);
  const agent = new AgentClient(flags['root-dir']);
  // An agent already on the root dir reads, validates and admits the manifests itself: this process loads no validator.
  // With a flag in error, the manifests are read here first, so that their problems are said first, as always.
  const validTimeout = flags.detach && !flags['dry-run'] ? orUndefined(() => parseDuration(flags.timeout, '--timeout')) : undefined;
  const node = validTimeout === undefined ? undefined : orUndefined(() => nodeInfoFromFlags(flags));
  if (validTimeout !== undefined && node) {
    const admission = { nodeName: flags['node-name'], allowPrivileged: flags['allow-privileged'], node };
    const refs = await handManifestsOver(agent, read, paths, admission);
    // Straight to stdout: oclif's this.log would load its ux modules for the one line printed at the end.
    if (refs) return awaitHandedOver(printLine, agent, refs, '', flags, flags.wait as WaitFor, validTimeout).then(() => 0);
  }
  const { admitOrRefuse, admitPods, podsFromManifests } = await import('./manifests.js');
  const set = podsFromManifests(read, paths, flags['node-name']);
  const texts = textsOf(read);
  const timeoutMs = parseDuration(flags.timeout, '--timeout');
  if (flags['dry-run']) {
    const { planAndPrint } = await import('./plan.js');
    return planAndPrint(admitPods(set.pods.map((p) => p.pod)).admitted, flags, { prune: flags.prune, output: 'text', log });
  }
  const admission = { allowPrivileged: flags['allow-privileged'], node: nodeInfoFromFlags(flags) };
  const admitted = admitOrRefuse(
    set.pods.map((p) => p.pod),
    admission,
    flags.detach,
  );

  if (flags.detach) {
    const [{ detachPods }, { agentArgs }] = await Promise.all([import('./run-detach.js'), import('./node.js')]);
    const nodeArgs = agentArgs(flags, metadata, { also: ['pleg-relist-period', 'runtime-endpoint', 'image-endpoint'] });
    return detachPods(printLine, agent, texts, flags, flags.wait as WaitFor, timeoutMs, nodeArgs).then(() => 0);
  }
  if (await agent.running()) return (await import('./run-handover.js')).handOverUntilSignal(log, agent, texts, flags).then(() => 0);
  const objects = { configMaps: set.configMaps, secrets: set.secrets, runtimeClasses: set.runtimeClasses };
  return (await import('./run-foreground.js')).runUntilSignal(log, admitted, objects, flags).then(() => 0);
}

const printLine = (line: string): void => void process.stdout.write(`${line}\n`);

/** What fn returns, or undefined when it throws (a usage error, said again where it always was). */
function orUndefined<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
