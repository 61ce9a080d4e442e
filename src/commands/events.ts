import { Flags } from '@oclif/core';
import { PodctlCommand } from '../cli/base.js';
import { namespaceFlag, podViewFlags } from '../cli/pod-flags.js';
import type { PodView } from '../core/podview/index.js';
import type { PodEventRow } from '../core/podview/describe.js';

function v1(e: PodEventRow): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { namespace: e.namespace, name: `${e.pod}.${e.first.toString(16)}.${e.reason}` },
    involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace: e.namespace, name: e.pod, uid: e.uid, ...(e.container ? { fieldPath: `spec.containers{${e.container}}` } : {}) },
    type: e.type,
    reason: e.reason,
    message: e.message,
    count: e.count,
    firstTimestamp: new Date(e.first).toISOString(),
    lastTimestamp: new Date(e.last).toISOString(),
    source: { component: 'kubelet' },
  };
}

export class Events extends PodctlCommand {
  static override summary = "The kubelet's events about podctl's pods, as kubectl get events lists them.";
  static override description = `From the running watch (/events on its status socket): Created, Started, Killing, BackOff, Failed,
probe failures, each with its count. Without a watch, the events the runtime's records imply (Created, Started,
ContainerDied of the container instances it holds), and a note saying so. -w keeps printing new and repeated
events until Ctrl-C; -o json prints a v1 EventList (with -w, one v1 Event per line).`;
  static override examples = ['<%= config.bin %> events', '<%= config.bin %> events -A -w', '<%= config.bin %> events --for pod/web', '<%= config.bin %> events -o json'];
  static override flags = {
    ...podViewFlags,
    namespace: namespaceFlag,
    'all-namespaces': Flags.boolean({ char: 'A', summary: 'Events of every namespace.' }),
    for: Flags.string({ summary: 'Only the events of this pod (pod/NAME or NAME).' }),
    watch: Flags.boolean({ char: 'w', summary: 'Keep printing new and repeated events.' }),
    output: Flags.string({ char: 'o', summary: 'Output format.', options: ['table', 'json'], default: 'table' }),
    'no-headers': Flags.boolean({ summary: 'Print the table without its header line.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Events);
    const podName = flags.for?.replace(/^pods?\//, '');
    const namespace = flags['all-namespaces'] ? undefined : flags.namespace;
    // What only this command's path uses: loaded when it runs, not with the command index.
    const [{ openPodView }, { age, plainTable }, { fetchEvents }] = await Promise.all([import('../cli/podview.js'), import('../cli/table.js'), import('../core/podview/describe.js')]);
    const { view, client, statusSocket } = await openPodView(flags);
    try {
      const collect = async (): Promise<{ rows: PodEventRow[]; fromWatch: boolean }> => {
        const watched = await fetchEvents(statusSocket);
        const rows = watched ?? (await this.runtimeEvents(view, namespace, podName));
        return { rows: rows.filter((e) => (namespace === undefined || e.namespace === namespace) && (!podName || e.pod === podName)).sort((a, b) => a.last - b.last), fromWatch: watched !== undefined };
      };
      const first = await collect();
      if (!first.fromWatch) process.stderr.write('note: no watch answers: these are the events the runtime\'s records imply; kills, backoffs and probe failures need a running `podctl watch`\n');
      const cols = (e: PodEventRow, now: number) => [
        ...(namespace === undefined ? [e.namespace] : []),
        age(e.last, now),
        e.type,
        e.reason,
        `pod/${e.pod}`,
        `${e.container ? `[${e.container}] ` : ''}${e.message}${e.count > 1 ? ` (x${e.count})` : ''}`,
      ];
      const head = [...(namespace === undefined ? ['NAMESPACE'] : []), 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'];
      if (flags.output === 'json' && !flags.watch) {
        this.log(JSON.stringify({ apiVersion: 'v1', kind: 'EventList', metadata: {}, items: first.rows.map(v1) }, null, 2));
        return;
      }
      const print = (rows: PodEventRow[], headers: boolean) => {
        if (!rows.length) return;
        if (flags.output === 'json') for (const e of rows) this.log(JSON.stringify(v1(e)));
        else this.log(plainTable(head, rows.map((e) => cols(e, Date.now())), { noHeaders: !headers }));
      };
      if (!first.rows.length && !flags.watch) {
        process.stderr.write(`No events found in ${namespace ?? 'any'} namespace.\n`);
        return;
      }
      print(first.rows, !flags['no-headers']);
      if (!flags.watch) return;
      const key = (e: PodEventRow) => `${e.uid}/${e.container}/${e.reason}/${e.message}/${e.first}`;
      const seen = new Map(first.rows.map((e) => [key(e), e.count]));
      let stopped = false;
      process.once('SIGINT', () => (stopped = true));
      process.once('SIGTERM', () => (stopped = true));
      let headers = !flags['no-headers'] && !first.rows.length;
      while (!stopped) {
        await new Promise((r) => setTimeout(r, 1000));
        if (stopped) break;
        const fresh = (await collect()).rows.filter((e) => seen.get(key(e)) !== e.count);
        for (const e of fresh) seen.set(key(e), e.count);
        print(fresh, headers);
        if (fresh.length) headers = false;
      }
    } finally {
      client.close();
    }
  }

  private async runtimeEvents(view: PodView, namespace: string | undefined, pod: string | undefined): Promise<PodEventRow[]> {
    const byUid = await view.sandboxesByPod({ namespace, name: pod });
    const { eventsFromRuntime } = await import('../core/podview/describe.js');
    const rows: PodEventRow[] = [];
    for (const list of byUid.values()) rows.push(...eventsFromRuntime(await view.runtimeStatus(list[0]!)));
    return rows;
  }
}
