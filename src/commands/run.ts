import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { nodeFlags } from '../cli/node-flags.js';
import { planFlags } from '../cli/plan-flags.js';
import { traceFlags } from '../cli/trace-flags.js';
import { parseDuration } from '../core/util/duration.js';
import { PodctlError } from '../core/errors.js';
import type { WaitFor } from '../core/node/wait.js';
import { podKey } from '../core/util/pod-key.js';

// What a hand-over to a running agent needs is imported first in run(); the foreground run (src/cli/run.ts),
// the plan of --dry-run and the start of an agent are imported when that path is taken.

export class Run extends PodctlCommand {
  static override summary = 'Run pods from manifests: until Ctrl-C, or (--detach) handed to the node agent that keeps them.';
  static override description = `Runs every Pod in the given files (multi-document YAML allowed) and keeps it at its desired state:
crashed containers restart with CrashLoopBackOff, failed pulls retry with ImagePullBackOff, probes run.
In the foreground, the pods run until Ctrl-C or SIGTERM, then terminate gracefully (SIGTERM, the pod's grace
period, SIGKILL) and are removed; meanwhile run serves the agent API on <root-dir>/podctl.sock (so get, describe
and events see what it sees) and streams the containers' output as "pod/container | line" (--quiet: not).
When an agent already runs on the root dir, the pods are handed to it and taken back at exit.
--detach hands the pods to the node agent (starting it in the background when none runs: log in
<root-dir>/agent.log) and returns once each pod's phase is Running (--wait=ready: it is Ready; none: at once),
or it completed (phase Succeeded: exit 0); it exits 1 naming the reason when a pod failed (phase Failed: each
container's exit code and message) or cannot start (ErrImagePull, CreateContainerConfigError, ...). Handing over the same
namespace/name again, from any file, updates that pod (containers replaced as \`podctl plan\` shows).
Manifests are validated first: an invalid one hands nothing over.`;
  static override examples = [
    '<%= config.bin %> run examples/hello.yaml',
    '<%= config.bin %> run pod.yaml --detach',
    '<%= config.bin %> run pod.yaml --detach --wait=ready --timeout 2m',
    '<%= config.bin %> run pod.yaml --dry-run',
    '<%= config.bin %> run pod.yaml --trace -o json',
  ];
  static override strict = false;
  static override args = { paths: Args.string({ description: 'Manifest files or directories (- for stdin).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...nodeFlags,
    'dry-run': Flags.boolean({ summary: 'Print the plan (as `podctl plan`) instead of running anything; exit 0 if nothing would change, 2 if something would.' }),
    prune: Flags.boolean({ ...planFlags.prune, dependsOn: ['dry-run'] }),
    detach: Flags.boolean({ char: 'd', summary: 'Hand the pods to the node agent (started in the background if none runs) and return once they run.' }),
    wait: Flags.string({ summary: 'With --detach: return once every pod is running (its phase), ready (its Ready condition), or at once (none); a pod that completed or failed ends the wait too.', options: ['running', 'ready', 'none'], default: 'running' }),
    timeout: Flags.string({ summary: 'With --detach: how long to wait, e.g. 2m.', default: '5m' }),
    quiet: Flags.boolean({ char: 'q', summary: 'In the foreground: do not stream the containers\' output.' }),
    'pleg-relist-period': Flags.string({ summary: 'How often the runtime is relisted for changes.', default: '1s' }),
    ...traceFlags,
  };

  async run(): Promise<void> {
    const { argv, flags, metadata } = await this.withKubeletConfig(await this.parse(Run));
    const paths = argv as string[];
    const [{ awaitHandedOver }, { handManifestsOver }, { readManifestArgs, textsOf }, { nodeInfoFromFlags }, { AgentClient }] = await Promise.all([
      import('../cli/detach.js'),
      import('../cli/handover.js'),
      import('../cli/manifest-args.js'),
      import('../cli/node-info.js'),
      import('../core/node/client.js'),
    ]);
    const read = await readManifestArgs(paths);
    const agent = new AgentClient(flags['root-dir']);
    // An agent already on the root dir reads, validates and admits the manifests itself: this process loads no validator.
    // With a flag in error, the manifests are read here first, so that their problems are said first, as always.
    const validTimeout = flags.detach && !flags['dry-run'] ? orUndefined(() => parseDuration(flags.timeout, '--timeout')) : undefined;
    const node = validTimeout === undefined ? undefined : orUndefined(() => nodeInfoFromFlags(flags));
    if (validTimeout !== undefined && node) {
      const refs = await handManifestsOver(agent, read, paths, { nodeName: flags['node-name'], allowPrivileged: flags['allow-privileged'], node });
      // Straight to stdout: oclif's this.log would load its ux modules for the one line printed at the end.
      if (refs) return awaitHandedOver(printLine, agent, refs, '', flags, flags.wait as WaitFor, validTimeout);
    }
    const { admitPods, podsFromManifests } = await import('../cli/manifests.js');
    const set = podsFromManifests(read, paths, flags['node-name']);
    const texts = textsOf(read);
    const timeoutMs = parseDuration(flags.timeout, '--timeout');
    if (flags['dry-run']) {
      const { planAndPrint } = await import('../cli/plan.js');
      const code = await planAndPrint(admitPods(set.pods.map((p) => p.pod)).admitted, flags, { prune: flags.prune, output: 'text', log: (t) => this.log(t) });
      if (code !== 0) this.exit(code);
      return;
    }
    const { admitted, rejected } = admitPods(set.pods.map((p) => p.pod), { allowPrivileged: flags['allow-privileged'], node: nodeInfoFromFlags(flags) });
    for (const r of rejected) process.stderr.write(`${podKey(r.pod)}: rejected at admission: ${r.message}\n`);
    if (flags.detach && rejected.length) throw new PodctlError(`${rejected.length} pod(s) rejected at admission; nothing was handed to the agent`);
    if (admitted.length === 0) throw new PodctlError('no pod was admitted', { exitCode: 1 });

    const { detachPods, handOverUntilSignal, runUntilSignal } = await import('../cli/run.js');
    if (flags.detach) {
      const { agentArgs } = await import('../cli/node.js');
      return detachPods(printLine, agent, texts, flags, flags.wait as WaitFor, timeoutMs, agentArgs(flags, metadata, { also: ['pleg-relist-period', 'runtime-endpoint', 'image-endpoint'] }));
    }
    if (await agent.running()) return handOverUntilSignal((l) => this.log(l), agent, texts, flags);
    return runUntilSignal((l) => this.log(l), admitted, { configMaps: set.configMaps, secrets: set.secrets, runtimeClasses: set.runtimeClasses }, flags);
  }
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
