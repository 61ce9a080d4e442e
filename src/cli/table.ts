import Table from 'cli-table3';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { timestampSince } from '../core/printers/duration.js';
import { podAge, podColumns, podWideCells, restartsCell as podRestartsCell } from '../core/printers/pod.js';
import { displayStatus, readyColumn, restartsColumn } from './render.js';
import { podKey, podMeta } from '../core/util/pod-key.js';

export { humanDuration } from '../core/printers/duration.js';

export function age(from: string | number | undefined, now: number): string {
  return timestampSince(from, now);
}

/** kubectl's RESTARTS: the count, and how long ago the last restart was ("3 (40s ago)"). */
export function restartsCell(pod: IPod, now: number): string {
  return podRestartsCell(podColumns(pod), now);
}

export interface PlainTableOptions {
  noHeaders?: boolean;
}

/** kubectl's and crictl's table look: no borders, three spaces between columns. */
export function plainTable(head: string[], rows: string[][], opts: PlainTableOptions = {}): string {
  const table = new Table({
    head: opts.noHeaders ? [] : head,
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '   ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
  });
  for (const r of rows) table.push(r);
  // cli-table3 pads the last column: trailing blanks would break scripts' exact matches.
  return table
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

export interface PodTableOptions extends PlainTableOptions {
  allNamespaces?: boolean;
  wide?: boolean;
  /** --show-labels: a LABELS column last, as kubectl's. */
  showLabels?: boolean;
  now?: number;
  /** For -o yaml: js-yaml's dump, which the command loads only when it prints YAML. */
  dumpYaml?: (doc: unknown) => string;
}

export function podTableHead(opts: PodTableOptions): string[] {
  return [
    ...(opts.allNamespaces ? ['NAMESPACE'] : []),
    'NAME',
    'READY',
    'STATUS',
    'RESTARTS',
    'AGE',
    ...(opts.wide ? ['IP', 'NODE', 'CONTAINERS'] : []),
    ...(opts.showLabels ? ['LABELS'] : []),
  ];
}

/** kubectl's LABELS cell: key=value pairs sorted by key, joined by commas, or <none>. */
export function labelsCell(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : '<none>';
}

export function podRow(p: IPod, opts: PodTableOptions): string[] {
  const now = opts.now ?? Date.now();
  const m = podMeta(p);
  const c = podColumns(p);
  const containers = [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].map((c) => c.name).join(',');
  const [ip, node] = podWideCells(p);
  return [
    ...(opts.allNamespaces ? [m.namespace ?? 'default'] : []),
    m.name ?? '',
    c.ready,
    c.status,
    podRestartsCell(c, now),
    podAge(p, now),
    ...(opts.wide ? [ip, node, containers || '<none>'] : []),
    ...(opts.showLabels ? [labelsCell(m.labels)] : []),
  ];
}

/** kubectl get pods' columns (NAMESPACE with -A; IP, NODE, CONTAINERS with -o wide). */
export function podTable(pods: IPod[], opts: PodTableOptions = {}): string {
  return plainTable(
    podTableHead(opts),
    pods.map((p) => podRow(p, opts)),
    opts,
  );
}

/** Sizes as crictl prints them: 4.26MB, 812kB (decimal units). */
export function humanBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${v}B` : `${v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0)}${units[i]}`;
}

/** crictl's truncated IDs (13 characters, without a sha256: prefix). */
export const shortId = (id: string): string => id.replace(/^sha256:/, '').slice(0, 13);

export type PodOutput = 'table' | 'wide' | 'json' | 'yaml' | 'name';

/** One pod as `get pods -w` prints a change; `withHead`: the table's header above the row (the first row after an empty listing). */
export function renderOnePod(pod: IPod, output: PodOutput, opts: PodTableOptions, withHead = false): string {
  if (output === 'json') return JSON.stringify(pod, null, 2);
  if (output === 'yaml') {
    if (!opts.dumpYaml) throw new Error('renderOnePod: -o yaml needs opts.dumpYaml');
    return `---\n${opts.dumpYaml(pod).trimEnd()}`;
  }
  if (output === 'name') return `pod/${podMeta(pod).name}`;
  const head = withHead && !opts.noHeaders;
  return plainTable(head ? podTableHead(opts) : [], [podRow(pod, opts)], { noHeaders: !head });
}

export interface ResultRow {
  pod: IPod;
  status?: IPodStatus;
  ok: boolean;
  message?: string;
}

/** The RunOnce table: one row per pod. */
export function renderResultTable(rows: ResultRow[]): string {
  const table = new Table({
    head: ['POD', 'PHASE', 'STATUS', 'READY', 'RESTARTS', 'RESULT'],
    style: { head: [], border: [] },
    wordWrap: true,
    colWidths: [null, null, null, null, null, 60] as unknown as number[],
  });
  for (const r of rows) {
    const m = podMeta(r.pod);
    table.push([
      podKey(m),
      r.status?.phase ?? 'Unknown',
      displayStatus(r.pod, r.status),
      readyColumn(r.pod, r.status),
      String(restartsColumn(r.pod, r.status)),
      r.ok ? 'ok' : `FAILED: ${r.message ?? ''}`,
    ]);
  }
  return table.toString();
}
