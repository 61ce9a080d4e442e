import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IConfigMap, IContainerStatus, IEvent, IPod, ISecret } from 'kubernetes-models/v1';
import { podRow } from '../../src/cli/table.js';
import { displayStatus, readyColumn, restartsColumn } from '../../src/cli/status-line.js';
import { humanDuration } from '../../src/core/printers/duration.js';
import { podColumns } from '../../src/core/printers/pod.js';
import { namespaceObjects } from '../../src/core/kubeapi/namespaces.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';
import { columnDefinitions, tableRowEvent, tableWatch, toTable, type Table } from '../../src/core/kubeapi/table.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

const cs = (name: string, o: Partial<IContainerStatus> = {}): IContainerStatus => ({
  name,
  image: 'busybox:1.36',
  imageID: '',
  ready: false,
  restartCount: 0,
  ...o,
});

function pod(
  name: string,
  status: IPod['status'],
  o: { init?: string[]; sidecars?: string[]; app?: string[]; deleted?: boolean } = {},
): IPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      uid: `uid-${name}`,
      resourceVersion: '7',
      creationTimestamp: ago(300),
      ...(o.deleted ? { deletionTimestamp: ago(5) } : {}),
    },
    spec: {
      nodeName: 'node-a',
      initContainers: [
        ...(o.init ?? []).map((n) => ({ name: n, image: 'busybox:1.36' })),
        ...(o.sidecars ?? []).map((n) => ({ name: n, image: 'busybox:1.36', restartPolicy: 'Always' })),
      ],
      containers: (o.app ?? ['app']).map((n) => ({ name: n, image: 'busybox:1.36' })),
    },
    status,
  };
}

const running = (name: string, extra: Partial<IContainerStatus> = {}) =>
  cs(name, { ready: true, started: true, state: { running: { startedAt: ago(200) } }, ...extra });
const readyTrue = [{ type: 'Ready', status: 'True' }];

const PODS: Record<string, IPod> = {
  running: pod(
    'running',
    {
      phase: 'Running',
      podIP: '10.88.0.4',
      podIPs: [{ ip: '10.88.0.4' }],
      conditions: readyTrue,
      containerStatuses: [running('a'), running('b')],
    },
    { app: ['a', 'b'] },
  ),
  crashing: pod('crashing', {
    phase: 'Running',
    containerStatuses: [
      cs('app', {
        restartCount: 3,
        state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s' } },
        lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: ago(40) } },
      }),
    ],
  }),
  initializing: pod(
    'initializing',
    {
      phase: 'Pending',
      initContainerStatuses: [cs('setup', { state: { running: { startedAt: ago(10) } } })],
      containerStatuses: [cs('app', { state: { waiting: { reason: 'PodInitializing' } } })],
    },
    { init: ['setup'] },
  ),
  completed: pod('completed', {
    phase: 'Succeeded',
    containerStatuses: [cs('app', { state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: ago(60) } } })],
  }),
  terminating: pod('terminating', { phase: 'Running', conditions: readyTrue, containerStatuses: [running('app')] }, { deleted: true }),
  creating: pod('creating', { phase: 'Pending', containerStatuses: [cs('app', { state: { waiting: { reason: 'ContainerCreating' } } })] }),
};

test("the pods Table's cells are podctl get pods' cells, for Running, CrashLoopBackOff, Init:0/1, Completed, Terminating, ContainerCreating", () => {
  const pods = Object.values(PODS);
  const table = toTable('pods', pods, { now: NOW });
  assert.deepEqual(
    table.rows.map((r) => r.cells.slice(0, 5)),
    pods.map((p) => podRow(p, { now: NOW })),
  );
  assert.deepEqual(
    table.rows.map((r) => r.cells.slice(0, 5)),
    [
      ['running', '2/2', 'Running', '0', '5m'],
      ['crashing', '0/1', 'CrashLoopBackOff', '3 (40s ago)', '5m'],
      ['initializing', '0/1', 'Init:0/1', '0', '5m'],
      ['completed', '0/1', 'Completed', '0', '5m'],
      ['terminating', '1/1', 'Terminating', '0', '5m'],
      ['creating', '0/1', 'ContainerCreating', '0', '5m'],
    ],
  );
  // The wide cells: IP and Node as podctl -o wide prints them, then Nominated Node and Readiness Gates.
  assert.deepEqual(table.rows[0]!.cells.slice(5), ['10.88.0.4', 'node-a', '<none>', '<none>']);
  assert.deepEqual(podRow(PODS.running!, { now: NOW, wide: true }).slice(5), ['10.88.0.4', 'node-a', 'a,b']);
  assert.deepEqual(table.rows[1]!.cells.slice(5), ['<none>', 'node-a', '<none>', '<none>']);
  // A finished pod's row says so, as printPod's row conditions.
  assert.deepEqual(table.rows[3]!.conditions, [
    { type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' },
  ]);
  assert.equal(table.rows[0]!.conditions, undefined);
});

test("STATUS, READY and RESTARTS as printPod: sidecars, init failures, signals, the pod's reason, NodeLost, Completed beside a running container", () => {
  const cols = (p: IPod) => {
    const c = podColumns(p);
    return [c.ready, c.status, c.restarts];
  };
  const sidecar = pod(
    'sidecar',
    {
      phase: 'Running',
      conditions: readyTrue,
      initContainerStatuses: [running('proxy', { restartCount: 2 })],
      containerStatuses: [running('app')],
    },
    { sidecars: ['proxy'] },
  );
  assert.deepEqual(cols(sidecar), ['2/2', 'Running', 2], 'a started sidecar counts with the app containers');
  const initFailed = (t: Record<string, unknown>) =>
    pod(
      'f',
      { phase: 'Pending', initContainerStatuses: [cs('setup', { restartCount: 4, state: { terminated: { exitCode: 1, ...t } } })] },
      { init: ['setup'] },
    );
  assert.deepEqual(
    cols(initFailed({ reason: 'Error' })),
    ['0/1', 'Init:Error', 4],
    "an init container's restarts while the pod initializes",
  );
  assert.deepEqual(cols(initFailed({})), ['0/1', 'Init:ExitCode:1', 4]);
  assert.deepEqual(cols(initFailed({ signal: 9 })), ['0/1', 'Init:Signal:9', 4]);
  const initBackOff = pod(
    'b',
    { phase: 'Pending', initContainerStatuses: [cs('setup', { state: { waiting: { reason: 'CrashLoopBackOff' } } })] },
    { init: ['setup'] },
  );
  assert.equal(podColumns(initBackOff).status, 'Init:CrashLoopBackOff');
  const exited = (t: Record<string, unknown>) =>
    pod('x', { phase: 'Running', containerStatuses: [cs('app', { state: { terminated: { exitCode: 137, ...t } } })] });
  assert.equal(podColumns(exited({ signal: 9 })).status, 'Signal:9');
  assert.equal(podColumns(exited({})).status, 'ExitCode:137');
  // The first container's state is the one STATUS says (printPod walks them last to first).
  const two = pod(
    'two',
    {
      phase: 'Running',
      containerStatuses: [
        cs('a', { state: { waiting: { reason: 'ImagePullBackOff' } } }),
        cs('b', { state: { waiting: { reason: 'ContainerCreating' } } }),
      ],
    },
    { app: ['a', 'b'] },
  );
  assert.equal(podColumns(two).status, 'ImagePullBackOff');
  const oneDone = (conditions: { type: string; status: string }[]) =>
    pod(
      'd',
      {
        phase: 'Running',
        conditions,
        containerStatuses: [running('a'), cs('b', { state: { terminated: { exitCode: 0, reason: 'Completed' } } })],
      },
      { app: ['a', 'b'] },
    );
  assert.equal(podColumns(oneDone(readyTrue)).status, 'Running');
  assert.equal(podColumns(oneDone([{ type: 'Ready', status: 'False' }])).status, 'NotReady');
  const evicted = pod('e', { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: ephemeral-storage.' });
  assert.equal(podColumns(evicted).status, 'Evicted', "the pod's reason over its phase");
  assert.equal(
    podColumns(pod('g', { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] })).status,
    'SchedulingGated',
  );
  const lost = pod('l', { phase: 'Running', reason: 'NodeLost', containerStatuses: [running('app')] }, { deleted: true });
  assert.equal(podColumns(lost).status, 'Unknown');
  const finished = pod(
    's',
    { phase: 'Succeeded', containerStatuses: [cs('app', { state: { terminated: { exitCode: 0, reason: 'Completed' } } })] },
    { deleted: true },
  );
  assert.equal(podColumns(finished).status, 'Completed', 'a finished pod being deleted says how it finished');
  assert.equal(podColumns(pod('n', undefined)).status, 'Unknown', 'podctl has no status for it yet');
  // podctl's columns are these: one implementation.
  for (const p of [sidecar, initFailed({ reason: 'Error' }), two, lost]) {
    assert.deepEqual([readyColumn(p, p.status), displayStatus(p, p.status), restartsColumn(p, p.status)], cols(p));
  }
});

test('HumanDuration as apimachinery: truncation toward zero, days and years', () => {
  assert.deepEqual(
    [-1500, -2500, 0, 119_999, 600_000, 3 * 3600_000, 8 * 86_400_000, 730 * 86_400_000, 760 * 86_400_000, 3000 * 86_400_000].map(
      humanDuration,
    ),
    ['0s', '<invalid>', '0s', '119s', '10m', '3h', '8d', '2y', '2y30d', '8y'],
  );
});

test('column definitions for every resource, as the API server prints them (priority 1: shown with -o wide)', () => {
  const shape = (r: string) => columnDefinitions(r).map((c) => `${c.name}:${c.type}:${c.format}:${c.priority}`);
  assert.deepEqual(shape('pods'), [
    'Name:string:name:0',
    'Ready:string::0',
    'Status:string::0',
    'Restarts:string::0',
    'Age:string::0',
    'IP:string::1',
    'Node:string::1',
    'Nominated Node:string::1',
    'Readiness Gates:string::1',
  ]);
  assert.deepEqual(shape('events'), [
    'Last Seen:string::0',
    'Type:string::0',
    'Reason:string::0',
    'Object:string::0',
    'Subobject:string::1',
    'Source:string::1',
    'Message:string::0',
    'First Seen:string::1',
    'Count:string::1',
    'Name:string:name:1',
  ]);
  assert.deepEqual(shape('configmaps'), ['Name:string:name:0', 'Data:string::0', 'Age:string::0']);
  assert.deepEqual(shape('secrets'), ['Name:string:name:0', 'Type:string::0', 'Data:string::0', 'Age:string::0']);
  assert.deepEqual(shape('nodes'), [
    'Name:string:name:0',
    'Status:string::0',
    'Roles:string::0',
    'Age:string::0',
    'Version:string::0',
    'Internal-IP:string::1',
    'External-IP:string::1',
    'OS-Image:string::1',
    'Kernel-Version:string::1',
    'Container-Runtime:string::1',
  ]);
  assert.deepEqual(shape('namespaces'), ['Name:string:name:0', 'Status:string::0', 'Age:string::0']);
  // A resource with no printer gets the generic convertor's: Name and Created At.
  assert.deepEqual(shape('leases'), ['Name:string:name:0', 'Created At:date::0']);
  for (const r of ['pods', 'events', 'configmaps', 'secrets', 'nodes', 'namespaces']) {
    for (const c of columnDefinitions(r)) {
      assert.deepEqual(Object.keys(c), ['name', 'type', 'format', 'description', 'priority'], `${r} ${c.name}`);
      assert.ok(c.description.length > 0, `${r} ${c.name} is described`);
    }
  }
  assert.equal(columnDefinitions('pods')[1]!.description, 'The aggregate readiness state of this pod for accepting traffic.');
  assert.match(columnDefinitions('pods')[0]!.description, /^Name must be unique within a namespace\./);
});

test('events: last seen from lastTimestamp, else eventTime or the series; Object as kind/name; the source', () => {
  const core: IEvent = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'web.1', namespace: 'default', creationTimestamp: ago(120) },
    involvedObject: { kind: 'Pod', name: 'web', fieldPath: 'spec.containers{app}' },
    reason: 'BackOff',
    message: ' Back-off restarting failed container app \n',
    type: 'Warning',
    count: 5,
    firstTimestamp: ago(120),
    lastTimestamp: ago(30),
    source: { component: 'kubelet', host: 'node-a' },
  };
  const modern: IEvent = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'web.2', namespace: 'default' },
    involvedObject: { kind: 'Pod', name: 'web' },
    reason: 'Scheduled',
    message: 'placed',
    type: 'Normal',
    // 59.88 s ago: truncated, as HumanDuration does.
    eventTime: '2026-03-01T11:59:00.123456Z',
    reportingComponent: 'podctl',
  };
  const series: IEvent = { ...modern, metadata: { name: 'web.3' }, series: { count: 9, lastObservedTime: ago(10) } };
  const bare: IEvent = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'x' }, involvedObject: { kind: 'Node' } };
  assert.deepEqual(
    toTable('events', [core, modern, series, bare], { now: NOW }).rows.map((r) => r.cells),
    [
      [
        '30s',
        'Warning',
        'BackOff',
        'pod/web',
        'spec.containers{app}',
        'kubelet, node-a',
        'Back-off restarting failed container app',
        '2m',
        5,
        'web.1',
      ],
      ['59s', 'Normal', 'Scheduled', 'pod/web', '', 'podctl', 'placed', '59s', 1, 'web.2'],
      ['10s', 'Normal', 'Scheduled', 'pod/web', '', 'podctl', 'placed', '59s', 9, 'web.3'],
      ['<unknown>', '', '', 'node', '', '', '', '<unknown>', 1, 'x'],
    ],
  );
});

test('configmaps, secrets and namespaces: their data counted, their type, Active namespaces', () => {
  const cm: IConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cfg', creationTimestamp: ago(90) },
    data: { a: '1', b: '2' },
    binaryData: { c: 'AA==' },
  };
  const secret: ISecret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'tls', creationTimestamp: ago(90) },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': '', 'tls.key': '' },
  };
  const untyped: ISecret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'plain', creationTimestamp: ago(90) } };
  assert.deepEqual(toTable('configmaps', [cm], { now: NOW }).rows[0]!.cells, ['cfg', 3, '90s']);
  assert.deepEqual(
    toTable('secrets', [secret, untyped], { now: NOW }).rows.map((r) => r.cells),
    [
      ['tls', 'kubernetes.io/tls', 2, '90s'],
      ['plain', 'Opaque', 0, '90s'],
    ],
  );
  const namespaces = namespaceObjects(['team-b', 'default', 'team-a', 'team-b'], NOW - 3600_000);
  assert.deepEqual(
    namespaces.map((n) => [n.metadata?.name, n.metadata?.labels?.['kubernetes.io/metadata.name'], n.status?.phase]),
    [
      ['default', 'default', 'Active'],
      ['team-a', 'team-a', 'Active'],
      ['team-b', 'team-b', 'Active'],
    ],
  );
  assert.deepEqual(
    namespaceObjects([], NOW).map((n) => n.metadata?.name),
    ['default'],
    'default always',
  );
  assert.equal(namespaceObjects([], NOW)[0]!.metadata?.uid, namespaces[0]!.metadata?.uid, 'the same UID on every call');
  assert.notEqual(namespaces[1]!.metadata?.uid, namespaces[2]!.metadata?.uid);
  assert.deepEqual(
    toTable('namespaces', namespaces, { now: NOW }).rows.map((r) => r.cells),
    [
      ['default', 'Active', '60m'],
      ['team-a', 'Active', '60m'],
      ['team-b', 'Active', '60m'],
    ],
  );
  assert.throws(() => namespaceObjects(['Bad_Name'], NOW), /namespace "Bad_Name" is not a DNS label/);
});

test('includeObject: Metadata (the default) a PartialObjectMetadata, Object the object, None nothing; another value is a 400', () => {
  const p = PODS.running!;
  const meta = toTable('pods', [p], { now: NOW, listMeta: { resourceVersion: '42' } });
  assert.equal(meta.kind, 'Table');
  assert.equal(meta.apiVersion, 'meta.k8s.io/v1');
  assert.deepEqual(meta.metadata, { resourceVersion: '42' });
  assert.deepEqual(meta.rows[0]!.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: p.metadata });
  assert.deepEqual(toTable('pods', [p], { now: NOW, includeObject: 'Object' }).rows[0]!.object, p);
  const { kind: _kind, apiVersion: _v, ...bare } = p;
  assert.deepEqual(
    toTable('pods', [bare], { now: NOW, includeObject: 'Object' }).rows[0]!.object,
    p,
    'the kind and version it is served as',
  );
  const none = toTable('pods', [p], { now: NOW, includeObject: 'None' });
  assert.equal('object' in none.rows[0]!, false);
  assert.deepEqual(toTable('pods', [], { now: NOW }).rows, []);
  const v1beta1 = toTable('pods', [p], { now: NOW, apiVersion: 'meta.k8s.io/v1beta1' });
  assert.equal(v1beta1.apiVersion, 'meta.k8s.io/v1beta1');
  assert.equal(v1beta1.rows[0]!.object!.apiVersion, 'meta.k8s.io/v1beta1');
  assert.throws(
    () => toTable('pods', [p], { now: NOW, includeObject: 'Everything' }),
    (e: unknown) =>
      e instanceof KubeStatusError &&
      e.code === 400 &&
      e.reason === 'BadRequest' &&
      e.message === 'unrecognized includeObject value: "Everything"',
  );
  assert.throws(
    () => toTable('pods', [p, null as unknown as object], { now: NOW }),
    /toTable\(pods\): objects\[1\] is null, expected an object/,
  );
  // A resource with no printer: Name and Created At (RFC 3339).
  assert.deepEqual(
    toTable('leases', [{ metadata: { name: 'l', creationTimestamp: '2026-03-01T11:00:00Z' } }], { now: NOW }).rows[0]!.cells,
    ['l', '2026-03-01T11:00:00Z'],
  );
});

test('a watch in Table form: the column definitions on the first event only, one row each, ERROR passed as it is', () => {
  const next = tableWatch('pods', { now: () => NOW });
  const first = next('ADDED', PODS.creating!);
  const second = next('MODIFIED', { ...PODS.running!, metadata: { ...PODS.running!.metadata, resourceVersion: '9' } });
  const third = next('DELETED', PODS.terminating!);
  const t1 = first.object as Table;
  const t2 = second.object as Table;
  assert.equal(first.type, 'ADDED');
  assert.deepEqual(t1.columnDefinitions, columnDefinitions('pods'));
  assert.equal(t2.columnDefinitions, null);
  assert.equal((third.object as Table).columnDefinitions, null);
  assert.deepEqual(t2.metadata, { resourceVersion: '9' }, "the object's resourceVersion is the Table's");
  assert.deepEqual(
    [t1, t2, third.object as Table].map((t) => t.rows.map((r) => r.cells.slice(0, 3))),
    [[['creating', '0/1', 'ContainerCreating']], [['running', '2/2', 'Running']], [['terminating', '1/1', 'Terminating']]],
  );
  const status = { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410, reason: 'Expired' };
  assert.equal(next('ERROR', status).object, status);
  // One event on its own, as tableRowEvent makes it.
  const one = tableRowEvent('ADDED', PODS.completed!, { resource: 'pods', now: NOW, columns: false, includeObject: 'None' });
  assert.equal((one.object as Table).columnDefinitions, null);
  assert.deepEqual((one.object as Table).rows[0], {
    cells: ['completed', '0/1', 'Completed', '0', '5m', '<none>', 'node-a', '<none>', '<none>'],
    conditions: [{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' }],
  });
  assert.throws(() => tableWatch('pods', { includeObject: 'All' }), KubeStatusError);
});
