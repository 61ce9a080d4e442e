import { Args, Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podArg, podViewFlags } from '../cli/pod-flags.js';
import { errorMessage, PodctlError } from '../core/errors.js';
import type { DescribedEvent } from '../core/podview/describe.js';
import { podMeta } from '../core/util/pod-key.js';

const LOG_TAIL = 1000;


const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

export class BundleCommand extends PodctlCommand {
  static override id = 'bundle';
  static override summary = 'Write one archive about a pod for a bug report: manifest, status, events, timeline, runtime inspect, logs, versions.';
  static override description = `The archive (.tar.gz, default POD-bundle-TIME.tar.gz) holds under POD-bundle/:
  manifest.yaml            the pod as podctl holds it (defaulted)
  status.json              its v1 status
  events.json, timeline.txt what describe shows
  inspect/sandbox-*.json   the runtime's verbose status of each sandbox
  inspect/container-*.json the runtime's verbose status of each container instance
  logs/C/current.log, logs/C/previous.log   the last ${LOG_TAIL} lines of each container's current and previous instance
  trace.txt                trace lines, when an agent keeps them (none does yet: run \`watch --trace\` to see them live)
  versions.json            podctl and runtime versions
Values that may come from a Secret (secretKeyRef, envFrom secretRef), and any environment value, argument or
command word holding one ($(VAR) expansions), are replaced wherever the runtime repeats the container's environment
and command line. The container's own output (logs) is included as written.`;
  static override examples = ['<%= config.bin %> bundle web', '<%= config.bin %> bundle web -o /tmp/web.tar.gz'];
  static override args = { pod: Args.string({ description: 'Pod name (or pod/NAME).', required: true, ignoreStdin: true }) };
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    output: Flags.string({ char: 'o', summary: 'Archive to write (.tar.gz): a new file of mode 0600, which replaces whatever is at that path.' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(BundleCommand);
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ dump }, { openPodView }, { Bundle, BundleOutputError, specContainer }, { redactEnv, secretEnvPredicate }, { newerFirst }, { readLogFileTail }, { eventsFromRuntime, fetchPodEvents, podTimeline }, { findRuntimePod }, { expandInfo }] =
      await Promise.all([import('js-yaml'), import('../cli/podview.js'), import('../core/bundle/index.js'), import('../core/redact.js'), import('../core/container/types.js'), import('../core/logs/index.js'), import('../core/podview/describe.js'), import('../core/podview/index.js'), import('../cli/render.js')]);
    const name = podArg(args.pod);
    const { view, client, statusSocket } = await openPodView(flags);
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
    const output = flags.output ?? `${name}-bundle-${stamp}.tar.gz`;
    const bundle = new Bundle(`${name}-bundle`);
    const notes: string[] = [];
    try {
      const viewed = await view.get(flags.namespace, name);
      const rp = await findRuntimePod(view, flags.namespace, name);
      if (!viewed || !rp) throw new PodctlError(`pod "${name}" not found in namespace ${flags.namespace}`);
      const pod = viewed.pod;
      const { status, ...manifest } = pod;
      bundle.add('manifest.yaml', dump(manifest, { noRefs: true, lineWidth: -1 }));
      bundle.add('status.json', json(status));

      const events: DescribedEvent[] = (viewed.source === 'watch' ? await fetchPodEvents(statusSocket, podMeta(pod).uid) : undefined) ?? eventsFromRuntime(rp.runtime);
      if (viewed.source !== 'watch') notes.push('events: implied by the runtime (no watch answered)');
      bundle.add('events.json', json(events));
      const timeline = await podTimeline(pod, rp, events);
      bundle.add('timeline.txt', timeline.map((t) => `${new Date(t.at).toISOString()}  ${t.container ? `${t.container}: ` : ''}${t.what}${t.warning ? '  (warning)' : ''}${t.future ? '  (due)' : ''}\n`).join(''));

      for (const s of rp.sandboxes) {
        try {
          const doc = await client.podSandboxStatus(s.id, true);
          bundle.add(`inspect/sandbox-${s.id.slice(0, 12)}.json`, json({ ...doc, info: expandInfo(doc.info) }));
        } catch (err) {
          notes.push(`inspect sandbox ${s.id.slice(0, 12)}: ${errorMessage(err)}`);
        }
      }
      const spec = pod.spec!;
      const instances = [...rp.runtime.containers, ...(rp.runtime.ephemeral ?? [])];
      for (const c of instances) {
        try {
          const doc = await client.containerStatus(c.id, true);
          const redacted = redactEnv({ ...doc, info: expandInfo(doc.info) }, secretEnvPredicate(specContainer(spec, c.name)));
          bundle.add(`inspect/container-${c.name}-${c.id.slice(0, 12)}.json`, json(redacted));
        } catch (err) {
          notes.push(`inspect container ${c.name}: ${errorMessage(err)}`);
        }
      }

      for (const cname of new Set(instances.map((c) => c.name))) {
        const [current, previous] = instances.filter((c) => c.name === cname).sort(newerFirst);
        for (const [label, inst] of [['current', current], ['previous', previous]] as const) {
          if (!inst?.logPath) continue;
          const records = await readLogFileTail(inst.logPath, LOG_TAIL);
          bundle.add(`logs/${cname}/${label}.log`, records.map((r) => `${r.time} ${r.stream} ${r.text}\n`).join(''));
        }
      }

      bundle.add('trace.txt', 'No agent keeps trace lines: run `podctl watch --trace` (or `-o json`) to record them as they happen.\n');
      const versions: Record<string, unknown> = { podctl: this.config.version, node: process.version };
      try {
        const v = await client.version();
        versions.runtime = { name: v.runtimeName, version: v.runtimeVersion, apiVersion: v.runtimeApiVersion, endpoint: client.endpoint };
      } catch (err) {
        notes.push(`runtime version: ${errorMessage(err)}`);
      }
      bundle.add('versions.json', json(versions));
      if (notes.length) bundle.add('NOTES.txt', notes.map((n) => `${n}\n`).join(''));
    } finally {
      client.close();
    }
    try {
      await bundle.writeTo(output);
    } catch (err) {
      if (err instanceof BundleOutputError) throw new PodctlError(`bundle: ${err.message}`, { cause: err });
      throw err;
    }
    this.log(`Wrote ${output}:`);
    for (const f of bundle.contents) this.log(`  ${f.path}  (${f.size} bytes)`);
    this.log('Values from Secrets are redacted in the inspect output; logs are as the containers wrote them.');
  }
}
