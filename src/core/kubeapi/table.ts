import type { IConfigMap, IEvent, INamespace, INode, IPod, ISecret } from 'kubernetes-models/v1';
import { timestampMs, timestampSince } from '../printers/duration.js';
import { podCells } from '../printers/pod.js';
import { KubeStatusError } from './status.js';
import { COLUMNS, type TableColumnDefinition, type TableResource } from './table-columns.js';

export { COLUMNS, type TableColumnDefinition, type TableResource } from './table-columns.js';

/**
 * Tables as the API server renders them for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`
 * (apiserver's endpoints/handlers asTable over the printers' TableConvertor): every column, the wide
 * ones too (the server always prints wide, kubectl hides priority 1 unless -o wide), and each row's
 * object as includeObject asks.
 */

export type IncludeObject = 'None' | 'Object' | 'Metadata';

export interface TableOptions {
  now: number;
  /** ?includeObject=: Metadata (the default) a PartialObjectMetadata, Object the object, None nothing. */
  includeObject?: IncludeObject | string;
  listMeta?: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  /** The Table's group version as negotiated: meta.k8s.io/v1 (default) or meta.k8s.io/v1beta1. */
  apiVersion?: 'meta.k8s.io/v1' | 'meta.k8s.io/v1beta1';
}

export interface TableRowCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface TableRow {
  cells: unknown[];
  conditions?: TableRowCondition[];
  object?: Record<string, unknown>;
}

export interface Table {
  kind: 'Table';
  apiVersion: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  /** null on a watch's events after the first: the server sends the columns once per watch. */
  columnDefinitions: TableColumnDefinition[] | null;
  rows: TableRow[];
}

type Obj = Record<string, unknown> & { metadata?: { name?: string; creationTimestamp?: string; resourceVersion?: string } };

const KINDS: Record<TableResource, string> = {
  pods: 'Pod',
  events: 'Event',
  configmaps: 'ConfigMap',
  secrets: 'Secret',
  nodes: 'Node',
  namespaces: 'Namespace',
};

/** The generic convertor's columns (apiserver's DefaultTableConvertor), for a resource with no printer of its own. */
const DEFAULT_COLUMNS: TableColumnDefinition[] = [
  { ...COLUMNS.namespaces[0]! },
  { name: 'Created At', type: 'date', format: '', description: COLUMNS.namespaces[2]!.description, priority: 0 },
];

const POD_COMPLETED: Record<string, TableRowCondition[]> = {
  Succeeded: [{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' }],
  Failed: [{ type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod failed.' }],
};

const hasPrinter = (resource: string): resource is TableResource => Object.hasOwn(COLUMNS, resource);

/** The column definitions of a resource's Table. */
export function columnDefinitions(resource: string): TableColumnDefinition[] {
  return (hasPrinter(resource) ? COLUMNS[resource] : DEFAULT_COLUMNS).map((c) => ({ ...c }));
}

const nameOf = (o: Obj) => o.metadata?.name ?? '';
const ageOf = (o: Obj, now: number) => timestampSince(o.metadata?.creationTimestamp, now);

function eventCells(e: IEvent, now: number): unknown[] {
  // Events of the events.k8s.io API carry eventTime (and series) and no first/lastTimestamp.
  const firstSeen = e.firstTimestamp ? timestampSince(e.firstTimestamp as string, now) : timestampSince(e.eventTime as string, now);
  let lastSeen = e.lastTimestamp ? timestampSince(e.lastTimestamp as string, now) : firstSeen;
  let count = e.count ?? 0;
  if (e.series) {
    lastSeen = timestampSince(e.series.lastObservedTime as string, now);
    count = e.series.count ?? 0;
  } else if (count === 0) count = 1;
  const kind = (e.involvedObject?.kind ?? '').toLowerCase();
  const target = e.involvedObject?.name ? `${kind}/${e.involvedObject.name}` : kind;
  const component = e.source?.component || e.reportingComponent || '';
  const instance = e.source?.host || e.reportingInstance || '';
  return [
    lastSeen,
    e.type ?? '',
    e.reason ?? '',
    target,
    e.involvedObject?.fieldPath ?? '',
    instance ? `${component}, ${instance}` : component,
    (e.message ?? '').trim(),
    firstSeen,
    count,
    e.metadata?.name ?? '',
  ];
}

/** printNode's roles: node-role.kubernetes.io/<role> labels and a kubernetes.io/role label, sorted, or <none>. */
function nodeRoles(labels: Record<string, string> | undefined): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/') && k.length > 'node-role.kubernetes.io/'.length) roles.add(k.slice(24));
    else if (k === 'kubernetes.io/role' && v) roles.add(v);
  }
  return [...roles].sort().join(',') || '<none>';
}

function nodeCells(n: INode, now: number): unknown[] {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  const status = [
    ready ? (ready.status === 'True' ? 'Ready' : 'NotReady') : 'Unknown',
    ...(n.spec?.unschedulable ? ['SchedulingDisabled'] : []),
  ];
  const address = (type: string) => n.status?.addresses?.find((a) => a.type === type)?.address ?? '<none>';
  const info = n.status?.nodeInfo;
  return [
    n.metadata?.name ?? '',
    status.join(','),
    nodeRoles(n.metadata?.labels),
    ageOf(n as unknown as Obj, now),
    info?.kubeletVersion ?? '',
    address('InternalIP'),
    address('ExternalIP'),
    info?.osImage || '<unknown>',
    info?.kernelVersion || '<unknown>',
    info?.containerRuntimeVersion || '<unknown>',
  ];
}

function cellsOf(resource: string, o: Obj, now: number): unknown[] {
  switch (resource) {
    case 'pods':
      return podCells(o as unknown as IPod, now, true);
    case 'events':
      return eventCells(o as unknown as IEvent, now);
    case 'configmaps': {
      const cm = o as unknown as IConfigMap;
      return [nameOf(o), Object.keys(cm.data ?? {}).length + Object.keys(cm.binaryData ?? {}).length, ageOf(o, now)];
    }
    case 'secrets': {
      const s = o as unknown as ISecret;
      // The API server stores a secret without a type as Opaque.
      return [nameOf(o), s.type || 'Opaque', Object.keys(s.data ?? {}).length, ageOf(o, now)];
    }
    case 'nodes':
      return nodeCells(o as unknown as INode, now);
    case 'namespaces':
      return [nameOf(o), (o as unknown as INamespace).status?.phase ?? '', ageOf(o, now)];
    default: {
      const created = timestampMs(o.metadata?.creationTimestamp);
      return [nameOf(o), created === undefined ? null : new Date(created).toISOString().replace(/\.\d{3}Z$/, 'Z')];
    }
  }
}

function rowObject(resource: string, o: Obj, include: string, apiVersion: string): Record<string, unknown> | undefined {
  switch (include) {
    case 'None':
      return undefined;
    case 'Object':
      return hasPrinter(resource) && !o.kind ? { kind: KINDS[resource], apiVersion: 'v1', ...o } : o;
    default:
      return { kind: 'PartialObjectMetadata', apiVersion, metadata: o.metadata ?? {} };
  }
}

function checkInclude(include: string | undefined): string {
  const v = include || 'Metadata';
  if (v !== 'None' && v !== 'Object' && v !== 'Metadata')
    throw new KubeStatusError(400, 'BadRequest', `unrecognized includeObject value: "${v}"`);
  return v;
}

function rowsOf(resource: string, objects: readonly object[], opts: TableOptions): TableRow[] {
  const include = checkInclude(opts.includeObject);
  const apiVersion = opts.apiVersion ?? 'meta.k8s.io/v1';
  return objects.map((obj, i) => {
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj))
      throw new TypeError(`toTable(${resource}): objects[${i}] is ${Array.isArray(obj) ? 'an array' : String(obj)}, expected an object`);
    const o = obj as Obj;
    const phase = resource === 'pods' ? (o as unknown as IPod).status?.phase : undefined;
    const conditions = phase ? POD_COMPLETED[phase] : undefined;
    const object = rowObject(resource, o, include, apiVersion);
    return {
      cells: cellsOf(resource, o, opts.now),
      ...(conditions ? { conditions: conditions.map((c) => ({ ...c })) } : {}),
      ...(object ? { object } : {}),
    };
  });
}

/** A Table of `objects` (a list's items, or the one object of a GET with its resourceVersion as listMeta). */
export function toTable(resource: TableResource | (string & {}), objects: readonly object[], opts: TableOptions): Table {
  return {
    kind: 'Table',
    apiVersion: opts.apiVersion ?? 'meta.k8s.io/v1',
    metadata: { ...(opts.listMeta ?? {}) },
    columnDefinitions: columnDefinitions(resource),
    rows: rowsOf(resource, objects, opts),
  };
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface TableWatchOptions extends Omit<TableOptions, 'listMeta'> {
  resource: TableResource | (string & {});
  /** Whether this event carries the column definitions: the first event of a watch does, later ones do not. */
  columns: boolean;
}

/**
 * One watch event in Table form: a Table of the one object, its resourceVersion as the Table's. ERROR (a
 * Status) and BOOKMARK events are not rows: they are returned as they are.
 */
export function tableRowEvent(type: WatchEventType, object: object, opts: TableWatchOptions): { type: WatchEventType; object: object } {
  if (type === 'ERROR' || type === 'BOOKMARK') return { type, object };
  const rv = (object as Obj).metadata?.resourceVersion;
  const table = toTable(opts.resource, [object], { ...opts, ...(rv ? { listMeta: { resourceVersion: rv } } : {}) });
  if (!opts.columns) table.columnDefinitions = null;
  return { type, object: table };
}

/**
 * The events of one watch in Table form, as the API server's watch encoder sends them: column definitions on
 * the first row only (kubectl keeps the columns of the list it printed, or of that first event, for the rest).
 */
export function tableWatch(
  resource: TableResource | (string & {}),
  opts: Omit<TableOptions, 'listMeta' | 'now'> & { now?: () => number },
): (type: WatchEventType, object: object) => { type: WatchEventType; object: object } {
  checkInclude(opts.includeObject);
  let first = true;
  return (type, object) => {
    const event = tableRowEvent(type, object, { ...opts, resource, now: (opts.now ?? Date.now)(), columns: first });
    if (event.object !== object) first = false;
    return event;
  };
}
