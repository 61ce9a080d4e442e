import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LAST_APPLIED,
  decodeManagedFields,
  encodeManagedFields,
  fieldManagerFor,
  recordUpdate,
  serverSideApply,
  validatePatchOptions,
  type ApplyOptions,
} from '../../src/core/kubeapi/patch/apply.js';
import { FieldSet, pathString, type ListInfo } from '../../src/core/kubeapi/patch/fieldpath.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';

/** The list semantics of a Pod as the OpenAPI gives them, for the lists these tests use. */
const listInfo: ListInfo = (path) => {
  const p = path.join('.');
  if (/^spec\.(containers|initContainers|ephemeralContainers)$/.test(p)) return { listType: 'map', mapKeys: ['name'] };
  if (/^spec\.(initContainers|containers)\.\*\.env$/.test(p)) return { listType: 'map', mapKeys: ['name'] };
  if (/^spec\.(initContainers|containers)\.\*\.ports$/.test(p))
    return { listType: 'map', mapKeys: ['containerPort', 'protocol'], keyDefaults: { protocol: 'TCP' } };
  if (/^spec\.(initContainers|containers)\.\*\.volumeMounts$/.test(p)) return { listType: 'map', mapKeys: ['mountPath'] };
  if (p === 'spec.volumes' || p === 'spec.imagePullSecrets') return { listType: 'map', mapKeys: ['name'] };
  if (p === 'spec.tolerations') return { listType: 'atomic' };
  if (p === 'metadata.finalizers') return { listType: 'set' };
  return undefined;
};

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:01:00Z';
const T2 = '2026-01-01T00:02:00Z';

function pod(container: Obj, metadata: Obj = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'hello', namespace: 'default', ...metadata },
    spec: { containers: [container] },
  };
}

const apply = (o: Partial<ApplyOptions> & Pick<ApplyOptions, 'applied'>): { object: Obj; managedFields: Obj[] } =>
  serverSideApply({ live: undefined, manager: 'kubectl', force: false, now: T0, listInfo, operationVersion: 'v1', kind: 'Pod', ...o });

function entry(fields: Obj[], manager: string, operation = 'Apply'): Obj | undefined {
  return fields.find((e) => e.manager === manager && e.operation === operation);
}

const record = (o: Parameters<typeof recordUpdate>[0]): Obj => recordUpdate(o);

function statusOf(fn: () => unknown): KubeStatusError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof KubeStatusError, `expected a KubeStatusError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a KubeStatusError');
}

test('an apply that creates owns every field of its configuration, in the FieldsV1 form, metadata identity and status aside', () => {
  const applied = pod({ name: 'app', image: 'busybox:1', command: ['sleep', '3600'] }, { labels: { app: 'hello' } });
  applied.status = { phase: 'Running' };
  const { object, managedFields } = apply({ applied });
  assert.equal(object.status, undefined, 'status is not written through the main resource');
  assert.deepEqual(object.spec, applied.spec);
  assert.deepEqual(object.metadata.managedFields, managedFields);
  assert.deepEqual(managedFields, [
    {
      manager: 'kubectl',
      operation: 'Apply',
      apiVersion: 'v1',
      time: T0,
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:metadata': { 'f:labels': { 'f:app': {} } },
        'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:command': {}, 'f:image': {}, 'f:name': {} } } },
      },
    },
  ]);
  assert.deepEqual(Object.keys(managedFields[0]!.fieldsV1['f:spec']['f:containers']['k:{"name":"app"}']), [
    '.',
    'f:command',
    'f:image',
    'f:name',
  ]);
});

test('the same manager applying again: changed fields change, fields it no longer applies are removed, the time moves', () => {
  const first = apply({ applied: pod({ name: 'app', image: 'busybox:1', command: ['sleep', '3600'] }, { labels: { app: 'hello' } }) });
  const live = { ...first.object, metadata: { ...first.object.metadata, uid: 'u1', resourceVersion: '5' }, status: { phase: 'Running' } };
  const second = apply({ live, applied: pod({ name: 'app', image: 'busybox:2' }, { labels: { tier: 'web' } }), now: T1 });
  assert.deepEqual(second.object.metadata.labels, { tier: 'web' });
  assert.deepEqual(second.object.spec.containers, [{ name: 'app', image: 'busybox:2' }]);
  assert.deepEqual(second.object.status, { phase: 'Running' }, 'the live status stays');
  assert.equal(second.object.metadata.uid, 'u1');
  const e = entry(second.managedFields, 'kubectl')!;
  assert.equal(e.time, T1);
  assert.deepEqual(e.fieldsV1, {
    'f:metadata': { 'f:labels': { 'f:tier': {} } },
    'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:image': {}, 'f:name': {} } } },
  });

  const same = apply({ live: second.object, applied: pod({ name: 'app', image: 'busybox:2' }, { labels: { tier: 'web' } }), now: T2 });
  assert.equal(entry(same.managedFields, 'kubectl')!.time, T1, 'an apply that changes nothing keeps the time');
});

test('a field another manager changed conflicts: 409 with the API server message and causes; force moves the field', () => {
  const created = apply({ applied: pod({ name: 'app', image: 'busybox:1' }) });
  const edited = JSON.parse(JSON.stringify(created.object));
  edited.spec.containers[0].image = 'busybox:2';
  const live = record({ before: created.object, after: edited, manager: 'other-manager', now: T1, listInfo });
  assert.equal(live.spec.containers[0].image, 'busybox:2');

  const applied = pod({ name: 'app', image: 'busybox:3' });
  const err = statusOf(() => apply({ live, applied, now: T2 }));
  assert.equal(err.code, 409);
  assert.equal(err.message, 'Apply failed with 1 conflict: conflict with "other-manager" using v1: .spec.containers[name="app"].image');
  assert.deepEqual(err.toStatus(), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Apply failed with 1 conflict: conflict with "other-manager" using v1: .spec.containers[name="app"].image',
    reason: 'Conflict',
    details: {
      causes: [
        { reason: 'FieldManagerConflict', message: 'conflict with "other-manager" using v1', field: '.spec.containers[name="app"].image' },
      ],
    },
    code: 409,
  });

  // Applying the value the other manager set is no conflict: both own it.
  const agreed = apply({ live, applied: pod({ name: 'app', image: 'busybox:2' }), now: T2 });
  assert.ok(entry(agreed.managedFields, 'other-manager', 'Update')!.fieldsV1['f:spec']['f:containers']['k:{"name":"app"}']['f:image']);

  const forced = apply({ live, applied, now: T2, force: true });
  assert.equal(forced.object.spec.containers[0].image, 'busybox:3');
  assert.equal(entry(forced.managedFields, 'other-manager', 'Update'), undefined, 'it owned only the image, so its entry goes');
  assert.deepEqual(entry(forced.managedFields, 'kubectl')!.fieldsV1['f:spec']['f:containers']['k:{"name":"app"}'], {
    '.': {},
    'f:image': {},
    'f:name': {},
  });
});

test('conflicts between two appliers, and several conflicts grouped by manager', () => {
  const a = apply({ applied: pod({ name: 'app', image: 'busybox:1' }, { labels: { app: 'a', tier: 'x' } }), manager: 'alpha' });
  const err = statusOf(() =>
    apply({ live: a.object, applied: pod({ name: 'app', image: 'busybox:9' }, { labels: { app: 'b' } }), manager: 'beta' }),
  );
  assert.equal(
    err.message,
    'Apply failed with 2 conflicts: conflicts with "alpha":\n- .metadata.labels.app\n- .spec.containers[name="app"].image',
  );
  assert.deepEqual(
    err.details?.causes?.map((c) => [c.reason, c.message, c.field]),
    [
      ['FieldManagerConflict', 'conflict with "alpha"', '.metadata.labels.app'],
      ['FieldManagerConflict', 'conflict with "alpha"', '.spec.containers[name="app"].image'],
    ],
  );
  // beta applying only its own label shares the container and takes nothing.
  const b = apply({ live: a.object, applied: pod({ name: 'app' }, { labels: { owner: 'beta' } }), manager: 'beta', now: T1 });
  assert.deepEqual(b.object.metadata.labels, { app: 'a', tier: 'x', owner: 'beta' });
  assert.deepEqual(
    b.managedFields.map((e) => e.manager),
    ['alpha', 'beta'],
    'appliers sorted by time',
  );
});

test('list-map items are owned per key: each applier keeps its own env entry, and dropping one leaves the other', () => {
  const one = apply({ applied: pod({ name: 'app', image: 'busybox', env: [{ name: 'FOO', value: '1' }] }), manager: 'one' });
  const two = apply({ live: one.object, applied: pod({ name: 'app', env: [{ name: 'BAR', value: '2' }] }), manager: 'two', now: T1 });
  assert.deepEqual(two.object.spec.containers[0].env, [
    { name: 'FOO', value: '1' },
    { name: 'BAR', value: '2' },
  ]);
  const item = (e: Obj | undefined) => e!.fieldsV1['f:spec']['f:containers']['k:{"name":"app"}'];
  assert.deepEqual(Object.keys(item(entry(two.managedFields, 'two'))['f:env']), ['k:{"name":"BAR"}']);
  const dropped = apply({ live: two.object, applied: pod({ name: 'app', image: 'busybox' }), manager: 'one', now: T2 });
  assert.deepEqual(dropped.object.spec.containers[0].env, [{ name: 'BAR', value: '2' }]);
  assert.equal(item(entry(dropped.managedFields, 'one'))['f:env'], undefined);

  // A key field left out takes the schema's default (ports are keyed by containerPort and protocol).
  const ports = apply({ applied: pod({ name: 'app', image: 'nginx', ports: [{ containerPort: 80 }] }) });
  const keys = Object.keys(item(entry(ports.managedFields, 'kubectl'))['f:ports']);
  assert.deepEqual(keys, ['k:{"containerPort":80,"protocol":"TCP"}']);
  const missing = statusOf(() => apply({ applied: pod({ image: 'nginx' }) }));
  assert.equal(missing.code, 500);
  assert.match(
    missing.message,
    /^failed to create typed patch object \(default\/hello; \/v1, Kind=Pod\): \.spec\.containers: element 0: .*"name"/,
  );
  const dup = statusOf(() =>
    apply({ applied: { ...pod({ name: 'a', image: 'x' }), spec: { containers: [{ name: 'a' }, { name: 'a' }] } } }),
  );
  assert.match(dup.message, /\.spec\.containers: duplicate entries for key \[name="a"\]$/);
});

test('FieldsV1 round trip: keys, set values, the element itself, and the printed paths', () => {
  const v1 = {
    'f:metadata': { 'f:finalizers': { '.': {}, 'v:"a/b"': {} }, 'f:labels': { '.': {}, 'f:app': {} } },
    'f:spec': {
      'f:containers': {
        'k:{"name":"app"}': {
          '.': {},
          'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
          'f:name': {},
        },
      },
    },
  };
  const s = FieldSet.fromFieldsV1(v1);
  assert.deepEqual(s.toFieldsV1(), v1);
  assert.deepEqual(Object.keys((s.toFieldsV1() as Obj)['f:spec']['f:containers']['k:{"name":"app"}']), ['.', 'f:name', 'f:ports']);
  assert.deepEqual(FieldSet.fromFieldsV1(JSON.parse(JSON.stringify(s.toFieldsV1()))).paths(), s.paths());
  assert.deepEqual(s.paths().map(pathString), [
    '.metadata.finalizers',
    '.metadata.finalizers[="a/b"]',
    '.metadata.labels',
    '.metadata.labels.app',
    '.spec.containers[name="app"]',
    '.spec.containers[name="app"].name',
    '.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"]',
    '.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"].containerPort',
  ]);
  assert.throws(() => FieldSet.fromFieldsV1({ 'x:y': {} }), /is not f:, k:, v: or i:/);
  assert.throws(() => FieldSet.fromFieldsV1({ 'k:{bad': {} }), /does not hold JSON/);
  const entries = encodeManagedFields(
    decodeManagedFields([{ manager: 'm', operation: 'Update', apiVersion: 'v1', time: T0, fieldsType: 'FieldsV1', fieldsV1: v1 }]),
  );
  assert.deepEqual(entries, [{ manager: 'm', operation: 'Update', apiVersion: 'v1', time: T0, fieldsType: 'FieldsV1', fieldsV1: v1 }]);
  assert.throws(
    () => decodeManagedFields([{ manager: 'm', operation: 'Patch' }]),
    /metadata\.managedFields\[0\]\.operation must be Apply or Update/,
  );
});

test('writes that are not apply record Update entries owning what they changed, taken from whoever owned it', () => {
  const created = record({
    before: undefined,
    after: { ...pod({ name: 'app', image: 'busybox:1' }, { labels: { app: 'x' } }), status: { phase: 'Pending' } },
    manager: 'kubectl-client-side-apply',
    now: T0,
    listInfo,
  });
  assert.deepEqual(created.metadata.managedFields, [
    {
      manager: 'kubectl-client-side-apply',
      operation: 'Update',
      apiVersion: 'v1',
      time: T0,
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:metadata': { 'f:labels': { 'f:app': {} } },
        'f:spec': { 'f:containers': { 'k:{"name":"app"}': { '.': {}, 'f:image': {}, 'f:name': {} } } },
      },
    },
  ]);
  const edit = JSON.parse(JSON.stringify(created));
  edit.spec.containers[0].image = 'busybox:2';
  const edited = record({ before: created, after: edit, manager: 'kubectl-edit', now: T1, listInfo });
  const mf = edited.metadata.managedFields as Obj[];
  assert.deepEqual(
    mf.map((e) => e.manager),
    ['kubectl-client-side-apply', 'kubectl-edit'],
  );
  assert.deepEqual(mf[1]!.fieldsV1, { 'f:spec': { 'f:containers': { 'k:{"name":"app"}': { 'f:image': {} } } } });
  assert.equal(mf[0]!.fieldsV1['f:spec']['f:containers']['k:{"name":"app"}']['f:image'], undefined);

  // A write that changes nothing records nothing; the status subresource records only status.
  const noop = record({ before: edited, after: edited, manager: 'kubectl-patch', now: T2, listInfo });
  assert.deepEqual(noop.metadata.managedFields, mf);
  const status = record({
    before: edited,
    after: { ...edited, status: { phase: 'Running' } },
    manager: 'podctl',
    now: T2,
    listInfo,
    subresource: 'status',
  });
  const st = entry(status.metadata.managedFields, 'podctl', 'Update')!;
  assert.deepEqual([st.subresource, st.fieldsV1], ['status', { 'f:status': { 'f:phase': {} } }]);

  // managedFields a client sends replace the recorded ones; [] resets them.
  const reset = record({
    before: edited,
    after: { ...edited, metadata: { ...edited.metadata, managedFields: [] } },
    manager: 'x',
    now: T2,
    listInfo,
  });
  assert.deepEqual(reset.metadata.managedFields, []);
});

test('an object with no recorded managers belongs to before-first-apply, and an apply that changes it conflicts', () => {
  const live = { ...pod({ name: 'app', image: 'busybox:1' }), status: { phase: 'Running' } };
  const err = statusOf(() => apply({ live, applied: pod({ name: 'app', image: 'busybox:2' }) }));
  assert.equal(
    err.message,
    'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .spec.containers[name="app"].image',
  );
  const ok = apply({ live, applied: pod({ name: 'app', image: 'busybox:1' }, { labels: { a: 'b' } }) });
  assert.deepEqual(
    ok.managedFields.map((e) => `${e.manager}/${e.operation}`),
    ['kubectl/Apply', 'before-first-apply/Update'],
  );
});

test('kubectl moving from client-side to server-side apply takes over what its last-applied-configuration held', () => {
  const config = pod({ name: 'app', image: 'busybox:1' });
  const created = record({
    before: undefined,
    after: { ...config, metadata: { ...config.metadata, annotations: { [LAST_APPLIED]: JSON.stringify(config) } } },
    manager: 'kubectl-client-side-apply',
    now: T0,
    listInfo,
  });
  const applied = pod({ name: 'app', image: 'busybox:2' });
  const upgraded = apply({ live: created, applied, now: T1 });
  assert.equal(upgraded.object.spec.containers[0].image, 'busybox:2');
  assert.deepEqual(JSON.parse(upgraded.object.metadata.annotations[LAST_APPLIED]), applied, 'the annotation follows the apply');
  // Another manager gets the conflict.
  assert.equal(statusOf(() => apply({ live: created, applied, manager: 'ci', now: T1 })).code, 409);
});

test('requests the API server refuses before applying', () => {
  const wrongKind = statusOf(() => apply({ applied: { ...pod({ name: 'a', image: 'x' }), kind: 'Service' } }));
  assert.deepEqual([wrongKind.code, wrongKind.message], [400, 'invalid object type: /v1, Kind=Service']);
  const withFields = pod({ name: 'a', image: 'x' }, { managedFields: [] });
  assert.deepEqual(
    [statusOf(() => apply({ applied: withFields })).code, statusOf(() => apply({ applied: withFields })).message],
    [400, 'metadata.managedFields must be nil'],
  );
  const noManager = statusOf(() => validatePatchOptions({ apply: true }));
  assert.deepEqual(noManager.toStatus(), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    reason: 'Invalid',
    details: {
      group: 'meta.k8s.io',
      kind: 'PatchOptions',
      causes: [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }],
    },
    code: 422,
  });
  assert.match(
    statusOf(() => validatePatchOptions({ apply: false, force: 'true' })).message,
    /force: Forbidden: may not be specified for non-apply patch$/,
  );
  validatePatchOptions({ apply: true, fieldManager: 'kubectl', force: 'true' });
  assert.equal(fieldManagerFor({ userAgent: 'kubectl/v1.32.0 (linux/amd64) kubernetes/abc' }), 'kubectl');
  assert.equal(fieldManagerFor({ fieldManager: 'kubectl-edit', userAgent: 'kubectl/v1.32.0' }), 'kubectl-edit');
});

test('set items are owned per value, and what cannot be walked is refused (apply) or left untracked (update)', () => {
  const a = apply({ applied: pod({ name: 'app', image: 'x' }, { finalizers: ['a/one'] }), manager: 'a' });
  const b = apply({ live: a.object, applied: pod({ name: 'app' }, { finalizers: ['b/two'] }), manager: 'b', now: T1 });
  assert.deepEqual(b.object.metadata.finalizers, ['a/one', 'b/two']);
  assert.deepEqual(entry(b.managedFields, 'b')!.fieldsV1['f:metadata'], { 'f:finalizers': { 'v:"b/two"': {} } });

  const broken: Obj = { ...pod({ name: 'app', image: 'x' }), spec: { containers: [{ image: 'x' }] } };
  const live = statusOf(() => apply({ live: broken, applied: pod({ name: 'app', image: 'y' }) }));
  assert.match(live.message, /^failed to create typed live object \(default\/hello; \/v1, Kind=Pod\): \.spec\.containers: element 0: /);
  const untracked = record({
    before: undefined,
    after: { ...broken, metadata: { ...broken.metadata, managedFields: [] } },
    manager: 'm',
    now: T0,
    listInfo,
  });
  assert.equal(untracked.metadata.managedFields, undefined);
  assert.deepEqual(untracked.spec, broken.spec);
});
