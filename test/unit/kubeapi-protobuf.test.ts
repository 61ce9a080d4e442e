import { test } from 'node:test';
import assert from 'node:assert/strict';
import kubePb from '../../src/generated/kube/kube-pb.js';
import { decodeKubeProtobuf } from '../../src/core/kubeapi/protobuf.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';

interface Message {
  fromObject(o: Record<string, unknown>): object;
  encode(m: object): { finish(): Uint8Array };
}
const pb = (kubePb as unknown as { kube: Record<string, Message> }).kube;
const MAGIC = Buffer.from('k8s\0', 'latin1');

const encode = (type: string, o: Record<string, unknown>) => Buffer.from(pb[type]!.encode(pb[type]!.fromObject(o)).finish());

/**
 * A body as client-go's protobuf serializer writes it: the magic, then a runtime.Unknown with the
 * object's TypeMeta and its own message, and empty contentEncoding and contentType (gogo writes every
 * non-pointer field, empty or not).
 */
function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  return Buffer.concat([MAGIC, encode('Unknown', { typeMeta: { apiVersion, kind }, raw, contentEncoding: '', contentType: '' })]);
}

/** ObjectMeta as gogo writes a new object's: empty strings, a zero generation and an empty creationTimestamp present. */
const newMeta = (name: string, namespace: string, extra: Record<string, unknown> = {}) => ({
  name,
  generateName: '',
  namespace,
  selfLink: '',
  uid: '',
  resourceVersion: '',
  generation: 0,
  creationTimestamp: {},
  ...extra,
});

function statusOf(fn: () => unknown): { code: number; reason: string; message: string } {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof KubeStatusError, `not a KubeStatusError: ${String(err)}`);
    return { code: err.code, reason: err.reason, message: err.message };
  }
  assert.fail('no error');
}

test('the body kubectl 1.32 sends for create configmap greeting --from-literal=G=hi decodes to its JSON', () => {
  // Captured from kubectl.1.32 -v=9 (its "Request Body" hex dump).
  const body = Buffer.from(
    [
      '6b 38 73 00 0a 0f 0a 02  76 31 12 09 43 6f 6e 66',
      '69 67 4d 61 70 12 2d 0a  22 0a 08 67 72 65 65 74',
      '69 6e 67 12 00 1a 0a 70  6f 64 63 74 6c 2d 65 32',
      '65 22 00 2a 00 32 00 38  00 42 00 12 07 0a 01 47',
      '12 02 68 69 1a 00 22 00',
    ]
      .join('')
      .replace(/ /g, ''),
    'hex',
  );
  const decoded = decodeKubeProtobuf(body, { apiVersion: 'v1', kind: 'ConfigMap' });
  assert.equal(decoded.kind, 'ConfigMap');
  assert.equal(decoded.apiVersion, 'v1');
  assert.deepEqual(decoded.object, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'greeting', namespace: 'podctl-e2e' },
    data: { G: 'hi' },
  });
});

test('a ConfigMap encoded as client-go does: metadata, data, binaryData in base64, immutable false kept', () => {
  const raw = encode('ConfigMap', {
    metadata: newMeta('cfg', 'ns', {
      labels: { app: 'web' },
      annotations: { note: 'x' },
      finalizers: ['example.com/keep'],
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u-1', controller: true }],
    }),
    data: { 'a.txt': 'hello\n', empty: '' },
    binaryData: { bin: Buffer.from([0, 1, 2, 255]) },
    immutable: false,
  });
  const { object } = decodeKubeProtobuf(envelope('v1', 'ConfigMap', raw), { apiVersion: 'v1', kind: 'ConfigMap' });
  assert.deepEqual(object, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'cfg',
      namespace: 'ns',
      labels: { app: 'web' },
      annotations: { note: 'x' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u-1', controller: true }],
      finalizers: ['example.com/keep'],
    },
    data: { 'a.txt': 'hello\n', empty: '' },
    binaryData: { bin: Buffer.from([0, 1, 2, 255]).toString('base64') },
    immutable: false,
  });
});

test('a Secret: data bytes as base64, type, stringData; times as RFC 3339; managedFields with fieldsV1 as JSON', () => {
  const created = Date.UTC(2026, 0, 2, 3, 4, 5) / 1000;
  const raw = encode('Secret', {
    metadata: newMeta('tok', 'podctl-e2e', {
      uid: '1b2c',
      resourceVersion: '42',
      generation: 3,
      creationTimestamp: { seconds: created, nanos: 0 },
      managedFields: [
        {
          manager: 'kubectl-create',
          operation: 'Update',
          apiVersion: 'v1',
          time: { seconds: created },
          fieldsType: 'FieldsV1',
          fieldsV1: { Raw: Buffer.from('{"f:data":{".":{},"f:T":{}},"f:type":{}}') },
          subresource: '',
        },
      ],
    }),
    data: { T: Buffer.from('s'), bin: Buffer.from([0xff, 0xfe]) },
    type: 'Opaque',
    stringData: { plain: 'text' },
  });
  const { object } = decodeKubeProtobuf(envelope('v1', 'Secret', raw), { apiVersion: 'v1', kind: 'Secret' });
  assert.deepEqual(object, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'tok',
      namespace: 'podctl-e2e',
      uid: '1b2c',
      resourceVersion: '42',
      generation: 3,
      creationTimestamp: '2026-01-02T03:04:05Z',
      managedFields: [
        {
          manager: 'kubectl-create',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-01-02T03:04:05Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:data': { '.': {}, 'f:T': {} }, 'f:type': {} },
        },
      ],
    },
    data: { T: Buffer.from('s').toString('base64'), bin: Buffer.from([0xff, 0xfe]).toString('base64') },
    stringData: { plain: 'text' },
    type: 'Opaque',
  });
});

test('DeleteOptions: a zero grace period and preconditions are kept (pointer fields)', () => {
  const raw = encode('DeleteOptions', {
    gracePeriodSeconds: 0,
    preconditions: { uid: 'u-1' },
    propagationPolicy: 'Background',
    dryRun: [],
  });
  const { object } = decodeKubeProtobuf(envelope('v1', 'DeleteOptions', raw), { apiVersion: 'v1', kind: 'DeleteOptions' });
  assert.deepEqual(object, {
    apiVersion: 'v1',
    kind: 'DeleteOptions',
    gracePeriodSeconds: 0,
    preconditions: { uid: 'u-1' },
    propagationPolicy: 'Background',
  });
});

test('a Namespace (kubectl create namespace): its metadata and finalizers; an empty spec is absent', () => {
  const raw = encode('Namespace', { metadata: newMeta('shop', '', { labels: { team: 'a' } }), spec: { finalizers: ['kubernetes'] } });
  assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'Namespace', raw), { apiVersion: 'v1', kind: 'Namespace' }).object, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'shop', labels: { team: 'a' } },
    spec: { finalizers: ['kubernetes'] },
  });
  const bare = encode('Namespace', { metadata: newMeta('shop', ''), spec: {} });
  assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'Namespace', bare)).object, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'shop' },
  });
});

test("an envelope without a kind or version takes the endpoint's", () => {
  const raw = encode('ConfigMap', { metadata: newMeta('c', 'ns'), data: { k: 'v' } });
  const body = Buffer.concat([MAGIC, encode('Unknown', { raw })]);
  const decoded = decodeKubeProtobuf(body, { apiVersion: 'v1', kind: 'ConfigMap' });
  assert.equal(decoded.kind, 'ConfigMap');
  assert.deepEqual(decoded.object, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' }, data: { k: 'v' } });
  assert.match(statusOf(() => decodeKubeProtobuf(body)).message, /Object 'Kind' is missing/);
});

test("a body that is not the envelope is a 400 in the API server's words", () => {
  const into = { apiVersion: 'v1', kind: 'ConfigMap' };
  const json = statusOf(() => decodeKubeProtobuf(Buffer.from('{"kind":"ConfigMap"}'), into));
  assert.equal(json.code, 400);
  assert.equal(json.reason, 'BadRequest');
  assert.equal(
    json.message,
    'the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, ' +
      `expected prefix [107 56 115 0] (${Buffer.from('{"kind":"ConfigMap"}').toString('hex')})`,
  );
  assert.match(statusOf(() => decodeKubeProtobuf(Buffer.alloc(0), into)).message, /: empty data \(<empty>\)$/);
  assert.match(statusOf(() => decodeKubeProtobuf(MAGIC, into)).message, /: empty body \(6b387300\)$/);
  // A truncated envelope: the Unknown's raw field claims 100 bytes and has 2.
  const truncated = statusOf(() => decodeKubeProtobuf(Buffer.concat([MAGIC, Buffer.from([0x12, 100, 1, 2])]), into));
  assert.equal(truncated.code, 400);
  assert.match(
    truncated.message,
    /^the object provided is unrecognized \(must be of type ConfigMap\): the runtime.Unknown envelope does not decode/,
  );
  // An object message that does not decode: a ConfigMap whose metadata is cut short.
  const bad = statusOf(() => decodeKubeProtobuf(envelope('v1', 'ConfigMap', Buffer.from([0x0a, 50, 0x0a])), into));
  assert.equal(bad.code, 400);
  assert.match(bad.message, /^ConfigMap in version "v1" cannot be handled as a ConfigMap: /);
});

test('a kind not decoded here: 400 on an endpoint of a decoded kind, 415 on one whose kind is not (a Pod)', () => {
  const foo = statusOf(() => decodeKubeProtobuf(envelope('v1', 'Foo', Buffer.alloc(0)), { apiVersion: 'v1', kind: 'Secret' }));
  assert.equal(foo.code, 400);
  assert.equal(foo.message, 'Foo in version "v1" cannot be handled as a Secret: no kind "Foo" is registered for version "v1"');
  const pod = statusOf(() => decodeKubeProtobuf(envelope('v1', 'Pod', Buffer.from([0x0a, 0])), { apiVersion: 'v1', kind: 'Pod' }));
  assert.equal(pod.code, 415);
  assert.equal(pod.reason, 'UnsupportedMediaType');
  assert.match(pod.message, /^the body of the request was in an unknown format - accepted media types include: application\/json/);
  assert.match(pod.message, /ConfigMap, Secret, Namespace, DeleteOptions; this body is a Pod/);
});
