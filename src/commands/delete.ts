import { hostname } from 'node:os';
import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podViewFlags } from '../cli/pod-flags.js';
import { PodctlError, errorMessage } from '../core/errors.js';
import { podMeta } from '../core/util/pod-key.js';

export class Delete extends PodctlCommand {
  static override summary = 'Delete pods gracefully, as the kubelet terminates them (preStop, SIGTERM, the grace period, SIGKILL).';
  static override description = `Stops each container with the pod's terminationGracePeriodSeconds (or --grace-period; --force is
--grace-period=0, where the kubelet's minimum of 2 s still applies), then removes its containers and sandbox.
Names the pods as arguments (pod NAME…, pod/NAME), by manifest (-f FILE…), every pod of a namespace (--all), or
those whose labels match (-l).
When the node agent runs on --root-dir, it is told to forget each pod it keeps (its applied file goes, so the pod
never comes back) and podctl waits for the termination it performs; other pods are terminated here, and the applied
file of a pod handed to an agent that is not running goes too. A pod the
running watch keeps from a file or URL comes back: podctl says so and what to change. A pod that does not exist is
an error (exit 1) after the others are deleted.`;
  static override examples = [
    '<%= config.bin %> delete pod web',
    '<%= config.bin %> delete pod web db -n lab --grace-period 5',
    '<%= config.bin %> delete pod/web --force',
    '<%= config.bin %> delete -f pods.yaml',
    '<%= config.bin %> delete pods --all -n lab',
    '<%= config.bin %> delete pods -l app=web',
  ];
  static override strict = false;
  static override args = { resource: Args.string({ description: 'pod (or pods), then the names; or pod/NAME.', ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    filename: Flags.string({ char: 'f', summary: 'Delete the pods this manifest (file or directory) defines.', multiple: true }),
    'grace-period': Flags.integer({ summary: 'Seconds each container gets to stop (-1: the pod\'s own).', default: -1, min: -1 }),
    force: Flags.boolean({ summary: 'No grace: --grace-period=0.' }),
    all: Flags.boolean({ summary: 'Every pod of the namespace (-n).' }),
    selector: Flags.string({ char: 'l', summary: "The pods of the namespace (-n) whose labels match, as kubectl's -l: app=web, 'tier in (a,b)'." }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Delete);
    // Reading manifests (-f), the agent's client and deleting from the runtime: loaded when delete runs, not with the command index.
    const [{ loadPodsFromArgs }, { deleteGracePeriod, deleteRuntimePod, watchSourceOf }, { openPodView }, { AgentClient }, { forgetApplied, namespaceProblem, podRefProblem }, { deleteThroughAgent }, { findRuntimePod }] =
      await Promise.all([import('../cli/manifests.js'), import('../core/podview/delete.js'), import('../cli/podview.js'), import('../core/node/client.js'), import('../core/node/paths.js'), import('../cli/delete.js'), import('../core/podview/index.js')]);
    const words = argv as string[];
    const targets: { namespace: string; name: string }[] = [];
    // A bad -l is refused before the runtime is read (the selector's code loads with -l only).
    const matches = flags.selector === undefined ? undefined : (await import('../cli/selector.js')).labelFilter(flags.selector);
    const byName = !flags.all && flags.selector === undefined && !flags.filename?.length;
    if (byName) {
      for (const [i, w] of words.entries()) {
        const slash = /^pods?\/(.+)$/.exec(w);
        if (slash) targets.push({ namespace: flags.namespace, name: slash[1]! });
        else if (i === 0 && (w === 'pod' || w === 'pods' || w === 'po')) continue;
        else if (words[0] === 'pod' || words[0] === 'pods' || words[0] === 'po') targets.push({ namespace: flags.namespace, name: w });
        else throw new PodctlError(`"${w}": expected pod NAME… or pod/NAME (podctl deletes pods only)`, { exitCode: 2, hint: words.length === 1 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(w) ? `to delete the pod ${w}: ${this.config.bin} delete pod ${w}` : undefined });
      }
      if (targets.length === 0) throw new PodctlError('no pod named', { hint: 'e.g. `podctl delete pod web`, or -f FILE, or --all -n NS', exitCode: 2 });
    }
    // As the API server validates them, before a name reaches the runtime, the agent or a path: nothing is deleted.
    // (-f: the manifests' names, validated as they are read.)
    const problems = flags.filename?.length ? [] : [namespaceProblem(flags.namespace), ...targets.map((t) => podRefProblem(t.namespace, t.name))];
    const invalid = [...new Set(problems.filter((p) => p !== undefined))];
    if (invalid.length) {
      for (const p of invalid.slice(0, -1)) process.stderr.write(`Error: ${p}\n`);
      throw new PodctlError(invalid.at(-1)!, { exitCode: 2 });
    }
    const { view, client } = await openPodView(flags);
    const agent = new AgentClient(flags['root-dir']);
    const agentRuns = await agent.running();
    if (flags.all || flags.selector !== undefined) {
      if (flags.filename?.length || words.some((w) => !/^(pods?|po)$/.test(w))) throw new PodctlError(`${flags.all ? '--all' : '--selector'} deletes pods of the namespace: give no names and no -f`, { exitCode: 2 });
      for (const v of await view.list({ namespace: flags.namespace })) if (!matches || matches(v.pod.metadata?.labels)) targets.push({ namespace: flags.namespace, name: podMeta(v.pod).name });
    } else if (flags.filename?.length) {
      if (words.length) throw new PodctlError('give pod names or -f FILE, not both', { exitCode: 2 });
      const set = await loadPodsFromArgs(flags.filename, hostname());
      for (const p of set.pods) targets.push({ namespace: podMeta(p.pod).namespace, name: podMeta(p.pod).name });
    }
    const override = flags.force ? 0 : flags['grace-period'];
    const failures: string[] = [];
    try {
      for (const t of targets) {
        try {
          if (agentRuns && (await deleteThroughAgent(agent, t.namespace, t.name, override))) {
            this.log(`pod "${t.name}" deleted`);
            continue;
          }
          // With no agent running, its record of the pod goes too: it would start the pod again when it next starts.
          const forgotten = !agentRuns && forgetApplied(flags['root-dir'], t.namespace, t.name);
          const pod = await findRuntimePod(view, t.namespace, t.name);
          if (!pod) {
            if (forgotten) this.log(`pod "${t.name}" deleted`);
            else failures.push(`pod "${t.name}" not found in namespace ${t.namespace}`);
            continue;
          }
          await deleteRuntimePod(view, pod, deleteGracePeriod(pod, override));
          this.log(`pod "${t.name}" deleted`);
          const kept = (await view.fromWatch(t))?.[0];
          const source = kept && watchSourceOf(kept);
          if (source) {
            const how = source.kind === 'file' ? `remove it from ${source.where} (or the file) to delete it for good` : `remove it from what ${source.where} serves to delete it for good`;
            process.stderr.write(`Warning: the running watch keeps pod "${t.name}" from ${source.where} and will start it again; ${how}\n`);
          }
        } catch (err) {
          failures.push(`pod "${t.name}": ${errorMessage(err)}`);
        }
      }
    } finally {
      client.close();
    }
    if ((flags.all || flags.selector !== undefined) && targets.length === 0) process.stderr.write(`No resources found in ${flags.namespace} namespace.\n`);
    if (failures.length) {
      for (const f of failures.slice(0, -1)) process.stderr.write(`Error: ${f}\n`);
      throw new PodctlError(failures.at(-1)!);
    }
  }
}
