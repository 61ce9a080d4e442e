// PATCH bodies by Content-Type: the JSON merge patch (RFC 7386, with its appendix's examples), the JSON patch
// (RFC 6902, through fast-json-patch) and the API server's answers to bodies it refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyPatch, jsonMergePatch, jsonPatch, unsupportedPatchType } from '../../src/core/kubeapi/patch/index.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';

const POD = 'io.k8s.api.core.v1.Pod';
type Obj = Record<string, unknown>;
const INVALID = 'the server rejected our request due to an error in our request';

function refused(fn: () => unknown, code: number, reason: string, message: string) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof KubeStatusError, `expected a KubeStatusError, got ${String(err)}`);
    assert.deepEqual({ code: err.code, reason: err.reason, message: err.message }, { code, reason, message });
    return true;
  });
}

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', labels: { app: 'web', tier: 'front' } },
  spec: {
    containers: [
      { name: 'a', image: 'ia' },
      { name: 'b', image: 'ib' },
    ],
  },
};

test('JSON merge patch: the RFC 7386 appendix cases', () => {
  const cases: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [original, patch, want] of cases) assert.deepEqual(jsonMergePatch(original, patch), want, JSON.stringify({ original, patch }));
});

test('JSON merge patch through applyPatch: lists are replaced (no merge keys), null deletes, the original is unchanged', () => {
  const copy = structuredClone(pod);
  const out = applyPatch(
    'application/merge-patch+json',
    pod,
    JSON.stringify({ metadata: { labels: { tier: null } }, spec: { containers: [{ name: 'a', image: 'new' }] } }),
    POD,
  );
  assert.deepEqual(out.metadata, { name: 'p', labels: { app: 'web' } });
  assert.deepEqual((out.spec as Obj).containers, [{ name: 'a', image: 'new' }]);
  assert.deepEqual(pod, copy);
});

test('strategic merge patch through applyPatch, with a charset parameter on the Content-Type', () => {
  const out = applyPatch(
    'application/strategic-merge-patch+json; charset=utf-8',
    pod,
    '{"spec":{"containers":[{"name":"a","image":"new"}]}}',
    POD,
  );
  assert.deepEqual((out.spec as Obj).containers, [
    { name: 'a', image: 'new' },
    { name: 'b', image: 'ib' },
  ]);
  // A null body patches nothing, as the API server decodes it into an empty map.
  assert.deepEqual(applyPatch('application/strategic-merge-patch+json', pod, 'null', POD), pod);
});

test('JSON patch: add, replace, remove, move, copy and a passing test apply in order', () => {
  const ops = [
    { op: 'test', path: '/metadata/name', value: 'p' },
    { op: 'add', path: '/metadata/annotations', value: { a: '1' } },
    { op: 'replace', path: '/spec/containers/0/image', value: 'new' },
    { op: 'remove', path: '/metadata/labels/tier' },
    { op: 'add', path: '/spec/containers/-', value: { name: 'c', image: 'ic' } },
    { op: 'copy', from: '/metadata/labels', path: '/metadata/annotations/copy' },
    { op: 'move', from: '/spec/containers/1', path: '/spec/containers/0' },
  ];
  const out = applyPatch('application/json-patch+json', pod, JSON.stringify(ops), POD);
  assert.deepEqual(out.metadata, { name: 'p', labels: { app: 'web' }, annotations: { a: '1', copy: { app: 'web' } } });
  assert.deepEqual((out.spec as Obj).containers, [
    { name: 'b', image: 'ib' },
    { name: 'a', image: 'new' },
    { name: 'c', image: 'ic' },
  ]);
  assert.equal((pod.spec.containers[0] as Obj).image, 'ia');
});

test('JSON patch: an operation that cannot apply is a 422 in the API server generic words, and nothing changes', () => {
  const copy = structuredClone(pod);
  for (const ops of [
    [{ op: 'test', path: '/metadata/name', value: 'q' }],
    [{ op: 'remove', path: '/metadata/annotations' }],
    [{ op: 'replace', path: '/spec/nope', value: 1 }],
    [{ op: 'add', path: '/spec/containers/9', value: {} }],
    [{ op: 'add', path: '/x/y', value: 1 }],
    [{ op: 'frobnicate', path: '/spec' }],
    [
      { op: 'add', path: '/metadata/labels/x', value: 'y' },
      { op: 'test', path: '/metadata/labels/x', value: 'z' },
    ],
  ]) {
    refused(() => applyPatch('application/json-patch+json', pod, JSON.stringify(ops), POD), 422, 'Invalid', INVALID);
  }
  assert.deepEqual(pod, copy);
});

test('JSON patch: a body that is no list of operations is a 400, too many operations a 413, null patches nothing', () => {
  refused(
    () => applyPatch('application/json-patch+json', pod, '{"op":"add"}', POD),
    400,
    'BadRequest',
    'error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp',
  );
  refused(
    () => applyPatch('application/json-patch+json', pod, '[1]', POD),
    400,
    'BadRequest',
    'error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp',
  );
  const many = Array.from({ length: 10001 }, () => ({ op: 'test', path: '/kind', value: 'Pod' }));
  refused(
    () => jsonPatch(pod, many),
    413,
    'RequestEntityTooLarge',
    'Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001',
  );
  assert.deepEqual(applyPatch('application/json-patch+json', pod, 'null', POD), pod);
});

test('a body that is not JSON is a 400 with the words of Go encoding/json', () => {
  refused(
    () => applyPatch('application/strategic-merge-patch+json', pod, '{"spec":', POD),
    400,
    'BadRequest',
    'unexpected end of JSON input',
  );
  refused(
    () => applyPatch('application/strategic-merge-patch+json', pod, '{spec: 1}', POD),
    400,
    'BadRequest',
    "invalid character 's' looking for beginning of object key string",
  );
  refused(
    () => applyPatch('application/merge-patch+json', pod, '{"a":1} x', POD),
    400,
    'BadRequest',
    "error decoding patch: invalid character 'x' after top-level value",
  );
  refused(
    () => applyPatch('application/json-patch+json', pod, '[1,]', POD),
    400,
    'BadRequest',
    "error decoding patch: invalid character ']' looking for beginning of value",
  );
});

test('merge and strategic patches that are no JSON object are a 400', () => {
  refused(
    () => applyPatch('application/strategic-merge-patch+json', pod, '[]', POD),
    400,
    'BadRequest',
    'json: cannot unmarshal array into Go value of type map[string]interface {}',
  );
  refused(
    () => applyPatch('application/merge-patch+json', pod, '"x"', POD),
    400,
    'BadRequest',
    'error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}',
  );
  refused(() => applyPatch('application/merge-patch+json', pod, 'null', POD), 400, 'BadRequest', 'Invalid JSON Patch');
});

test('another Content-Type is a 415 UnsupportedMediaType naming the accepted types', () => {
  const message =
    'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, ' +
    'application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml';
  for (const type of ['application/json', 'text/plain', undefined])
    refused(() => applyPatch(type, pod, '{}', POD), 415, 'UnsupportedMediaType', message);
  assert.deepEqual(unsupportedPatchType().toStatus(), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'UnsupportedMediaType',
    code: 415,
  });
});
