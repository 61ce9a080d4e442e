import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Root, Type } from 'protobufjs';
import kubePb from '../../src/generated/kube/kube-pb.js';
import protobuf from 'protobufjs/light.js';
import openapiDoc from '../../src/core/kubeapi/openapi/core-v1.json' with { type: 'json' };
import { INLINE_FIELDS, ZERO_KEPT, decodeKubeProtobuf } from '../../src/core/kubeapi/protobuf.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';

/** The kube messages' protobufjs Root (pbjs -t json-module). */
const kubeRoot = kubePb as unknown as Root;
const MAGIC = Buffer.from('k8s\0', 'latin1');

const encode = (type: string, o: Record<string, unknown>) => {
  const t = kubeRoot.lookupType(`kube.${type}`);
  return Buffer.from(t.encode(t.fromObject(o)).finish());
};

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

test('a Namespace (kubectl create namespace): its metadata and finalizers; an empty spec is {}, as Go writes a struct', () => {
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
    spec: {},
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

test('a kind not decoded here: 400 on an endpoint of a decoded kind, 415 on one whose kind is not (an Event)', () => {
  const foo = statusOf(() => decodeKubeProtobuf(envelope('v1', 'Foo', Buffer.alloc(0)), { apiVersion: 'v1', kind: 'Secret' }));
  assert.equal(foo.code, 400);
  assert.equal(foo.message, 'Foo in version "v1" cannot be handled as a Secret: no kind "Foo" is registered for version "v1"');
  const event = statusOf(() => decodeKubeProtobuf(envelope('v1', 'Event', Buffer.from([0x0a, 0])), { apiVersion: 'v1', kind: 'Event' }));
  assert.equal(event.code, 415);
  assert.equal(event.reason, 'UnsupportedMediaType');
  assert.match(event.message, /^the body of the request was in an unknown format - accepted media types include: application\/json/);
  assert.match(event.message, /ConfigMap, Secret, Namespace, Pod, DeleteOptions; this body is a Event/);
});

test('the Pod kubectl 1.32 sends for debug node/vm --image=busybox --profile=general -- true decodes to its JSON', () => {
  // Captured from kubectl 1.32 -v=9 (its "Request Body" hex dump).
  const body = Buffer.from(
    '6b3873000a090a0276311203506f6412d2010a260a166e6f64652d64656275676765722d766d2d6476636e7a12001a00' +
      '22002a003200380042001295010a120a09686f73742d726f6f7412050a030a012f124b0a086465627567676572120762' +
      '757379626f781a04747275652a0042004a180a09686f73742d726f6f7410001a052f686f7374220032006a0072008001' +
      '00880100900100a2010446696c651a054e65766572320042004a005202766d5801600168018201008a01009a0100b201' +
      '0e0a0012064578697374731a002200c201001a100a001a0022002a0032004a005a0072001a002200',
    'hex',
  );
  const decoded = decodeKubeProtobuf(body, { apiVersion: 'v1', kind: 'Pod' });
  assert.deepEqual(decoded.unknownFields, []);
  assert.deepEqual(decoded.object, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'node-debugger-vm-dvcnz' },
    spec: {
      // The hostPath's type is a pointer kubectl leaves nil, the volume's source inlined.
      volumes: [{ name: 'host-root', hostPath: { path: '/' } }],
      containers: [
        {
          name: 'debugger',
          image: 'busybox',
          command: ['true'],
          // A struct Go always writes; stdin and tty false, omitted as JSON omits them.
          resources: {},
          volumeMounts: [{ name: 'host-root', mountPath: '/host' }],
          terminationMessagePolicy: 'File',
        },
      ],
      restartPolicy: 'Never',
      nodeName: 'vm',
      hostNetwork: true,
      hostPID: true,
      hostIPC: true,
      tolerations: [{ operator: 'Exists' }],
    },
    status: {},
  });
});

/** A container as gogo writes one: every non-pointer field present, empty or zero. */
const gogoContainer = (name: string, extra: Record<string, unknown>) => ({
  name,
  image: 'busybox:1.36',
  workingDir: '',
  resources: {},
  terminationMessagePath: '',
  imagePullPolicy: '',
  stdin: false,
  stdinOnce: false,
  tty: false,
  terminationMessagePolicy: '',
  ...extra,
});

test("a Pod: Go's pointers keep their zero, other zeros go; embedded structs inline; Quantity, IntOrString and Time as JSON", () => {
  const raw = encode('Pod', {
    metadata: newMeta('rich', 'ns', { labels: { app: 'rich' } }),
    spec: {
      volumes: [
        { name: 'work', volumeSource: { emptyDir: {} } },
        { name: 'mem', volumeSource: { emptyDir: { medium: 'Memory', sizeLimit: { string: '8Mi' } } } },
        { name: 'cfg', volumeSource: { configMap: { localObjectReference: { name: 'c' }, defaultMode: 0o400, optional: false } } },
        { name: 'hp', volumeSource: { hostPath: { path: '/srv', type: '' } } },
      ],
      containers: [
        gogoContainer('app', {
          command: ['sh'],
          ports: [{ name: '', hostPort: 0, containerPort: 8080, protocol: 'TCP', hostIP: '' }],
          env: [
            { name: 'EMPTY', value: '' },
            {
              name: 'MEM',
              value: '',
              valueFrom: { resourceFieldRef: { containerName: '', resource: 'limits.memory', divisor: { string: '1Mi' } } },
            },
            { name: 'KEY', value: '', valueFrom: { secretKeyRef: { localObjectReference: { name: 's' }, key: 'k', optional: true } } },
          ],
          resources: { limits: { cpu: { string: '500m' }, memory: { string: '64Mi' } }, requests: { cpu: { string: '10m' } } },
          livenessProbe: {
            handler: { httpGet: { path: '/healthz', port: { type: 1, intVal: 0, strVal: 'http' }, host: '', scheme: 'HTTP' } },
            initialDelaySeconds: 0,
            timeoutSeconds: 1,
            periodSeconds: 10,
            successThreshold: 1,
            failureThreshold: 3,
            terminationGracePeriodSeconds: 0,
          },
          readinessProbe: { handler: { tcpSocket: { port: { type: 0, intVal: 8080, strVal: '' }, host: '' } }, periodSeconds: 5 },
          securityContext: { runAsUser: 0, allowPrivilegeEscalation: false, privileged: false, capabilities: { drop: ['ALL'] } },
        }),
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 0,
      dnsPolicy: '',
      nodeName: '',
      hostNetwork: false,
      enableServiceLinks: false,
      securityContext: { runAsGroup: 0, supplementalGroups: [0, 3000] },
      tolerations: [{ key: 'k', operator: 'Equal', value: '', effect: 'NoExecute', tolerationSeconds: 0 }],
    },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastProbeTime: {}, lastTransitionTime: { seconds: Date.UTC(2026, 0, 2) / 1000 } }],
      containerStatuses: [{ name: 'app', ready: false, restartCount: 0, image: '', imageID: '', state: { terminated: { exitCode: 0 } } }],
    },
  });
  const decoded = decodeKubeProtobuf(envelope('v1', 'Pod', raw), { apiVersion: 'v1', kind: 'Pod' });
  assert.deepEqual(decoded.unknownFields, []);
  assert.deepEqual(decoded.object, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'rich', namespace: 'ns', labels: { app: 'rich' } },
    spec: {
      volumes: [
        { name: 'work', emptyDir: {} },
        { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '8Mi' } },
        { name: 'cfg', configMap: { name: 'c', defaultMode: 0o400, optional: false } },
        { name: 'hp', hostPath: { path: '/srv', type: '' } },
      ],
      containers: [
        {
          name: 'app',
          image: 'busybox:1.36',
          command: ['sh'],
          ports: [{ containerPort: 8080, protocol: 'TCP' }],
          env: [
            { name: 'EMPTY' },
            { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
            { name: 'KEY', valueFrom: { secretKeyRef: { name: 's', key: 'k', optional: true } } },
          ],
          resources: { limits: { cpu: '500m', memory: '64Mi' }, requests: { cpu: '10m' } },
          livenessProbe: {
            httpGet: { path: '/healthz', port: 'http', scheme: 'HTTP' },
            timeoutSeconds: 1,
            periodSeconds: 10,
            successThreshold: 1,
            failureThreshold: 3,
            terminationGracePeriodSeconds: 0,
          },
          readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 5 },
          securityContext: { runAsUser: 0, allowPrivilegeEscalation: false, privileged: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 0,
      enableServiceLinks: false,
      securityContext: { runAsGroup: 0, supplementalGroups: [0, 3000] },
      tolerations: [{ key: 'k', operator: 'Equal', effect: 'NoExecute', tolerationSeconds: 0 }],
    },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-02T00:00:00Z' }],
      containerStatuses: [{ name: 'app', ready: false, restartCount: 0, image: '', imageID: '', state: { terminated: { exitCode: 0 } } }],
    },
  });
});

/** A length-delimited field, as protobufjs's Writer writes one. */
const lengthDelimited = (id: number, value: Uint8Array | string) => {
  const w = protobuf.Writer.create().uint32((id << 3) | 2);
  return Buffer.from((typeof value === 'string' ? w.string(value) : w.bytes(value)).finish());
};
/** A field number no 1.35 message has, appended to a message's bytes. */
const withField = (bytes: Uint8Array, id: number, value: string) => Buffer.concat([bytes, lengthDelimited(id, value)]);

test("fields a newer client's messages have are found where they are, unless empty (an unset non-pointer field)", () => {
  const containerType = kubeRoot.lookupType('kube.Container');
  const container = (extra: (b: Buffer) => Buffer) =>
    extra(Buffer.from(containerType.encode(containerType.fromObject(gogoContainer('app', {}))).finish()));
  // Pod.spec (2) holding PodSpec.containers (2).
  const pod = (c: Buffer) => Buffer.concat([encode('Pod', { metadata: newMeta('p', 'ns') }), lengthDelimited(2, lengthDelimited(2, c))]);
  const into = { apiVersion: 'v1', kind: 'Pod' };

  const set = decodeKubeProtobuf(envelope('v1', 'Pod', pod(container((b) => withField(b, 99, 'x')))), into);
  assert.deepEqual(set.unknownFields, ['spec.containers[0]: field 99 of Container']);
  // Dropped, and the rest of the container kept.
  assert.deepEqual((set.object.spec as { containers: unknown[] }).containers, [{ name: 'app', image: 'busybox:1.36', resources: {} }]);

  const unset = decodeKubeProtobuf(envelope('v1', 'Pod', pod(container((b) => withField(b, 99, '')))), into);
  assert.deepEqual(unset.unknownFields, []);
  // An unknown field at the top, and one inside a map's message value (a Quantity).
  const top = decodeKubeProtobuf(envelope('v1', 'Pod', withField(encode('Pod', { metadata: newMeta('p', 'ns') }), 7, 'y')), into);
  assert.deepEqual(top.unknownFields, ['Pod: field 7 of Pod']);
  const q = withField(encode('Quantity', { string: '1' }), 5, 'z');
  const entry = Buffer.concat([lengthDelimited(1, 'cpu'), lengthDelimited(2, q)]);
  // Container.resources (8) holding ResourceRequirements.limits (1).
  const resources = container((b) => Buffer.concat([b, lengthDelimited(8, lengthDelimited(1, entry))]));
  assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'Pod', pod(resources)), into).unknownFields, [
    'spec.containers[0].resources.limits["cpu"]: field 5 of Quantity',
  ]);
});

test("the messages are Kubernetes 1.35's as the served OpenAPI has them: every field of the Pod's tree, by its JSON name", () => {
  const api = (openapiDoc as { definitions: Record<string, { properties?: Record<string, unknown> }> }).definitions;
  const problems: string[] = [];
  const seen = new Set<string>();
  const walk = (type: Type) => {
    if (seen.has(type.name)) return;
    seen.add(type.name);
    const def = api[`io.k8s.api.core.v1.${type.name}`];
    const inlined = type.fieldsArray.filter((f) => INLINE_FIELDS.has(`${type.name}.${f.name}`));
    for (const f of type.fieldsArray) {
      if (f.resolvedType instanceof protobuf.Type) walk(f.resolvedType);
      if (def && !inlined.includes(f) && !def.properties?.[f.name]) problems.push(`${type.name}.${f.name}: not in the OpenAPI`);
    }
    if (!def) return;
    // Every property is a field, or a field of an inlined struct.
    const names = new Set(type.fieldsArray.map((f) => f.name));
    for (const f of inlined) for (const g of (f.resolvedType as Type).fieldsArray) names.add(g.name);
    for (const p of Object.keys(def.properties ?? {}))
      if (!names.has(p) && p !== 'apiVersion' && p !== 'kind') problems.push(`${type.name}: no field ${p}`);
  };
  kubeRoot.resolveAll();
  walk(kubeRoot.lookupType('kube.Pod'));
  walk(kubeRoot.lookupType('kube.Namespace'));
  assert.deepEqual(problems, []);
  assert.ok(seen.size > 100, `${seen.size} messages`);
  // Each field named as keeping its zero is a scalar of its message.
  for (const [message, fields] of Object.entries(ZERO_KEPT))
    for (const f of fields) {
      const field = kubeRoot.lookupType(`kube.${message}`).fields[f];
      assert.ok(field && !field.resolvedType && !field.repeated, `${message}.${f}`);
    }
});
