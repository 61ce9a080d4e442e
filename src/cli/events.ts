import type { PodView } from '../core/podview/index.js';
import { eventsFromRuntime, fetchEvents, type PodEventRow } from '../core/podview/describe.js';
import { say } from './say.js';
import { age, plainTable } from './table.js';

/** `podctl events`: the watch's events, or (none answering) those the runtime's records imply; -w keeps printing them. */

export interface EventsQuery {
  /** Undefined: every namespace. */
  namespace: string | undefined;
  pod: string | undefined;
  output: string;
  watch: boolean;
  noHeaders: boolean;
}

/** An event row as a v1 Event, as kubectl get events -o json prints one. */
export function v1Event(e: PodEventRow): Record<string, unknown> {
  const fieldPath = e.container ? { fieldPath: `spec.containers{${e.container}}` } : {};
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { namespace: e.namespace, name: `${e.pod}.${e.first.toString(16)}.${e.reason}` },
    involvedObject: { kind: 'Pod', apiVersion: 'v1', namespace: e.namespace, name: e.pod, uid: e.uid, ...fieldPath },
    type: e.type,
    reason: e.reason,
    message: e.message,
    count: e.count,
    firstTimestamp: new Date(e.first).toISOString(),
    lastTimestamp: new Date(e.last).toISOString(),
    source: { component: 'kubelet' },
  };
}

/** Prints the events as asked; with -w, then the new and repeated ones each second until SIGINT or SIGTERM. */
export async function printEvents(view: PodView, statusSocket: string, q: EventsQuery, log: (text: string) => void): Promise<void> {
  const { namespace } = q;
  const collect = async (): Promise<{ rows: PodEventRow[]; fromWatch: boolean }> => {
    const watched = await fetchEvents(statusSocket);
    const rows = watched ?? (await runtimeEvents(view, namespace, q.pod));
    const wanted = rows.filter((e) => (namespace === undefined || e.namespace === namespace) && (!q.pod || e.pod === q.pod));
    return { rows: wanted.sort((a, b) => a.last - b.last), fromWatch: watched !== undefined };
  };
  const first = await collect();
  if (!first.fromWatch)
    say(
      "note: no watch answers: these are the events the runtime's records imply; " +
        'kills, backoffs and probe failures need a running `podctl watch`',
    );
  const cols = (e: PodEventRow, now: number) => [
    ...(namespace === undefined ? [e.namespace] : []),
    age(e.last, now),
    e.type,
    e.reason,
    `pod/${e.pod}`,
    `${e.container ? `[${e.container}] ` : ''}${e.message}${e.count > 1 ? ` (x${e.count})` : ''}`,
  ];
  const head = [...(namespace === undefined ? ['NAMESPACE'] : []), 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'];
  if (q.output === 'json' && !q.watch) {
    log(JSON.stringify({ apiVersion: 'v1', kind: 'EventList', metadata: {}, items: first.rows.map(v1Event) }, null, 2));
    return;
  }
  const print = (rows: PodEventRow[], headers: boolean) => {
    if (!rows.length) return;
    if (q.output === 'json') for (const e of rows) log(JSON.stringify(v1Event(e)));
    else
      log(
        plainTable(
          head,
          rows.map((e) => cols(e, Date.now())),
          { noHeaders: !headers },
        ),
      );
  };
  if (!first.rows.length && !q.watch) {
    say(`No events found in ${namespace ?? 'any'} namespace.`);
    return;
  }
  print(first.rows, !q.noHeaders);
  if (!q.watch) return;
  const key = (e: PodEventRow) => `${e.uid}/${e.container}/${e.reason}/${e.message}/${e.first}`;
  const seen = new Map(first.rows.map((e) => [key(e), e.count]));
  let stopped = false;
  process.once('SIGINT', () => (stopped = true));
  process.once('SIGTERM', () => (stopped = true));
  let headers = !q.noHeaders && !first.rows.length;
  while (!stopped) {
    await new Promise((r) => setTimeout(r, 1000));
    if (stopped) break;
    const fresh = (await collect()).rows.filter((e) => seen.get(key(e)) !== e.count);
    for (const e of fresh) seen.set(key(e), e.count);
    print(fresh, headers);
    if (fresh.length) headers = false;
  }
}

/** The events the runtime's records imply, for the pods asked about. */
async function runtimeEvents(view: PodView, namespace: string | undefined, pod: string | undefined): Promise<PodEventRow[]> {
  const byUid = await view.sandboxesByPod({ namespace, name: pod });
  const rows: PodEventRow[] = [];
  for (const list of byUid.values()) rows.push(...eventsFromRuntime(await view.runtimeStatus(list[0]!)));
  return rows;
}
