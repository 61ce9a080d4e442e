import { Args } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podViewFlags } from '../cli/pod-flags.js';
import { PodctlError } from '../core/errors.js';
import { podMeta } from '../core/util/pod-key.js';
import { prose } from '../cli/prose.js';

export class Describe extends PodctlCommand {
  static override summary =
    'Show a pod in detail: containers, states, probes, mounts, conditions, a lifecycle timeline, events, and why it is not running.';
  static override description = prose`kubectl describe's sections, plus a Timeline (sandbox and every container instance created, started
and exited, as the runtime and the log files record them; kills, backoffs and probe failures from the events; the
next start a backoff waits for) and, for a pod that is not running or not ready, one line saying why and what
would change it. Events come from the running watch (/events on its status socket); without one, the runtime's
records still give the timeline and the output says events need a watch.`;
  static override examples = ['<%= config.bin %> describe pod web', '<%= config.bin %> describe pod/web -n lab'];
  static override strict = false;
  static override args = { resource: Args.string({ description: 'pod NAME, or pod/NAME.', ignoreStdin: true }) };
  static override flags = { ...podViewFlags, namespace: namespaceFlag };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Describe);
    const words = argv as string[];
    const slash = words.length === 1 ? /^pods?\/(.+)$/.exec(words[0]!) : null;
    const name = slash ? slash[1] : ['pod', 'pods', 'po'].includes(words[0] ?? '') && words.length === 2 ? words[1] : undefined;
    if (!name) throw new PodctlError('expected pod NAME or pod/NAME (podctl describes pods only)', { exitCode: 2 });
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [
      { renderDescribe },
      { openPodView },
      { readLogFile },
      { findRuntimePod, newestInstance },
      { fetchPodEvents, podTimeline, whyNotRunning },
    ] = await Promise.all([
      import('../cli/describe.js'),
      import('../cli/podview.js'),
      import('../core/logs/index.js'),
      import('../core/podview/index.js'),
      import('../core/podview/describe.js'),
    ]);
    const { view, client, statusSocket } = await openPodView(flags);
    try {
      const viewed = await view.get(flags.namespace, name);
      if (!viewed) throw new PodctlError(`pod "${name}" not found in namespace ${flags.namespace}`);
      const rp = viewed.runtimeError ? undefined : await findRuntimePod(view, flags.namespace, name);
      const pod = viewed.pod;
      // A pod read from the runtime may have events too: the agent records why it keeps one whose applied file it cannot read.
      const events = await fetchPodEvents(statusSocket, podMeta(pod).uid);
      const lastLines = new Map<string, string | undefined>();
      for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
        const inst = rp && newestInstance(rp, c.name);
        const lines = inst?.logPath ? await readLogFile(inst.logPath) : [];
        lastLines.set(c.name, lines.at(-1)?.text);
      }
      const now = Date.now();
      const timeline = await podTimeline(pod, rp, events ?? []);
      const why = whyNotRunning(pod, (c) => lastLines.get(c), now, viewed.readinessUnknown);
      this.log(renderDescribe(pod, viewed.source, viewed.readinessUnknown, timeline, events, why, now));
    } finally {
      client.close();
    }
  }
}
