// The strategic merge patch against the API server's documented cases (the sig-api-machinery
// strategic-merge-patch.md examples and the directives strategicpatch's table tests cover), on Pod fields, with
// the merge keys the Kubernetes OpenAPI gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { strategicMergePatch } from '../../src/core/kubeapi/patch/strategic.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';

const POD = 'io.k8s.api.core.v1.Pod';
type Obj = Record<string, unknown>;
const smp = (original: Obj, patch: Obj) => strategicMergePatch(original, patch, POD);
const spec = (s: Obj): Obj => ({ spec: s });
const names = (list: unknown) => (list as { name: string }[]).map((c) => c.name);

function refused(fn: () => unknown, code: number, reason: string, message: string | RegExp) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof KubeStatusError, `expected a KubeStatusError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.equal(err.reason, reason);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

const twoContainers = spec({
  containers: [
    { name: 'nginx', image: 'nginx-1.0', env: [{ name: 'A', value: '1' }], ports: [{ containerPort: 80, name: 'http' }] },
    { name: 'sidecar', image: 'side-1.0', args: ['--a', '--b'] },
  ],
});

test('containers merge by name: the patched one keeps the fields the patch does not name, a new one is added', () => {
  const out = smp(
    twoContainers,
    spec({
      containers: [
        { name: 'log-tailer', image: 'log-tailer-1.0' },
        { name: 'nginx', image: 'nginx-2.0' },
      ],
    }),
  );
  const containers = (out.spec as Obj).containers as Obj[];
  // Without $setElementOrder the API server puts the patch's elements in the patch's order, server-only ones
  // after the patch elements the live list had before them: the new one, then nginx, then sidecar.
  assert.deepEqual(names(containers), ['log-tailer', 'nginx', 'sidecar']);
  assert.deepEqual(containers[1], {
    name: 'nginx',
    image: 'nginx-2.0',
    env: [{ name: 'A', value: '1' }],
    ports: [{ containerPort: 80, name: 'http' }],
  });
  assert.deepEqual(containers[2], { name: 'sidecar', image: 'side-1.0', args: ['--a', '--b'] });
});

test('env merges by name inside a merged container; a $patch: delete element removes that variable', () => {
  const original = spec({
    containers: [
      {
        name: 'c',
        env: [
          { name: 'A', value: '1' },
          { name: 'B', value: '2' },
          { name: 'C', value: '3' },
        ],
      },
    ],
  });
  const out = smp(
    original,
    spec({
      containers: [
        {
          name: 'c',
          env: [
            { name: 'B', value: 'two' },
            { name: 'C', $patch: 'delete' },
          ],
        },
      ],
    }),
  );
  assert.deepEqual(((out.spec as Obj).containers as Obj[])[0].env, [
    { name: 'A', value: '1' },
    { name: 'B', value: 'two' },
  ]);
});

test('ports merge by containerPort and volumeMounts by mountPath, as the OpenAPI declares', () => {
  const original = spec({
    containers: [{ name: 'c', ports: [{ containerPort: 80, name: 'http' }], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
  });
  const out = smp(
    original,
    spec({
      containers: [
        {
          name: 'c',
          ports: [{ containerPort: 80, protocol: 'TCP' }, { containerPort: 443 }],
          volumeMounts: [{ mountPath: '/data', readOnly: true }],
        },
      ],
    }),
  );
  const c = ((out.spec as Obj).containers as Obj[])[0];
  assert.deepEqual(c.ports, [{ containerPort: 80, name: 'http', protocol: 'TCP' }, { containerPort: 443 }]);
  assert.deepEqual(c.volumeMounts, [{ name: 'data', mountPath: '/data', readOnly: true }]);
});

test('labels and annotations: null deletes a key, a new key is added, the others stay', () => {
  const original = { metadata: { name: 'p', labels: { app: 'web', tier: 'front' }, annotations: { a: '1', b: '2' } } };
  const out = smp(original, { metadata: { labels: { tier: null, track: 'stable' }, annotations: { a: null } } });
  assert.deepEqual(out.metadata, { name: 'p', labels: { app: 'web', track: 'stable' }, annotations: { b: '2' } });
});

test('a null for a field the original lacks changes nothing; a null for a whole map deletes it', () => {
  const original = { metadata: { name: 'p', labels: { app: 'web' } } };
  assert.deepEqual(smp(original, { metadata: { annotations: null } }), original);
  assert.deepEqual(smp(original, { metadata: { labels: null } }), { metadata: { name: 'p' } });
});

test('lists without a merge strategy are replaced whole: args, command, tolerations (atomic)', () => {
  const original = spec({
    containers: [{ name: 'c', command: ['sh'], args: ['-c', 'echo a'] }],
    tolerations: [
      { key: 'a', operator: 'Exists' },
      { key: 'b', operator: 'Exists' },
    ],
  });
  const out = smp(original, spec({ containers: [{ name: 'c', args: ['-c', 'echo b'] }], tolerations: [{ key: 'c', operator: 'Exists' }] }));
  assert.deepEqual(((out.spec as Obj).containers as Obj[])[0], { name: 'c', command: ['sh'], args: ['-c', 'echo b'] });
  assert.deepEqual((out.spec as Obj).tolerations, [{ key: 'c', operator: 'Exists' }]);
});

test('imagePullSecrets merge by name (strategy merge in the OpenAPI)', () => {
  const out = smp(spec({ imagePullSecrets: [{ name: 'a' }] }), spec({ imagePullSecrets: [{ name: 'b' }] }));
  assert.deepEqual(names((out.spec as Obj).imagePullSecrets), ['b', 'a']);
});

test('$patch: replace in a list makes the rest of the patch list the whole list', () => {
  const out = smp(twoContainers, spec({ containers: [{ name: 'only', image: 'x' }, { $patch: 'replace' }] }));
  assert.deepEqual((out.spec as Obj).containers, [{ name: 'only', image: 'x' }]);
});

test('$patch: replace in a map takes the map literally; $patch: delete empties it', () => {
  const original = spec({ securityContext: { runAsUser: 1000, runAsGroup: 1000 }, nodeSelector: { disk: 'ssd', zone: 'a' } });
  const out = smp(original, spec({ securityContext: { $patch: 'replace', runAsNonRoot: true }, nodeSelector: { $patch: 'delete' } }));
  assert.deepEqual(out.spec, { securityContext: { runAsNonRoot: true }, nodeSelector: {} });
  // At the top level, the whole object.
  assert.deepEqual(smp(twoContainers, { $patch: 'replace', metadata: { name: 'x' } }), { metadata: { name: 'x' } });
});

test('$patch: delete removes every element with that merge key', () => {
  const out = smp(twoContainers, spec({ containers: [{ name: 'sidecar', $patch: 'delete' }] }));
  assert.deepEqual(names((out.spec as Obj).containers), ['nginx']);
});

test('a list element without its merge key is refused with the API server words (a 500 it prints as Error from server)', () => {
  refused(
    () => smp(twoContainers, spec({ containers: [{ image: 'nginx:1.25' }] })),
    500,
    '',
    'map: map[image:nginx:1.25] does not contain declared merge key: name',
  );
  refused(
    () => smp(twoContainers, spec({ containers: [{ $patch: 'delete' }] })),
    500,
    '',
    'map: map[$patch:delete] does not contain declared merge key: name',
  );
  refused(
    () => smp(spec({ volumes: [{ name: 'v', emptyDir: {} }] }), spec({ volumes: [{ hostPath: { path: '/var/lib/kubelet/pods' } }] })),
    500,
    '',
    'map: map[hostPath:map[path:/var/lib/kubelet/pods]] does not contain declared merge key: name',
  );
});

test('unknown directives are refused: $patch with another value, and $patch: merge', () => {
  refused(
    () => smp(twoContainers, spec({ securityContext: { $patch: 'foo', runAsUser: 1 } })),
    500,
    '',
    'unknown patch type: foo in map: map[$patch:foo runAsUser:1]',
  );
  refused(
    () => smp(twoContainers, spec({ containers: [{ name: 'nginx', $patch: 'bar' }] })),
    500,
    '',
    'unknown patch type: bar in map: map[$patch:bar name:nginx]',
  );
  refused(
    () => smp(twoContainers, spec({ containers: [{ $patch: 'merge' }] })),
    500,
    '',
    'merging lists cannot yet be specified in the patch',
  );
  refused(
    () => smp(twoContainers, spec({ securityContext: { $patch: 'merge' } })),
    500,
    '',
    'unknown patch type: merge in map: map[$patch:merge]',
  );
});

test('finalizers (a list of primitives with strategy merge): a union, in the patch order after what the live list had first', () => {
  const out = smp({ metadata: { finalizers: ['a', 'b'] } }, { metadata: { finalizers: ['b', 'c'] } });
  assert.deepEqual((out.metadata as Obj).finalizers, ['a', 'b', 'c']);
});

test('$deleteFromPrimitiveList/finalizers deletes those items (the documented example)', () => {
  const out = smp({ metadata: { finalizers: ['a', 'b', 'c'] } }, { metadata: { '$deleteFromPrimitiveList/finalizers': ['b', 'c'] } });
  assert.deepEqual(out.metadata, { finalizers: ['a'] });
  const both = smp(
    { metadata: { finalizers: ['a', 'b'] } },
    { metadata: { finalizers: ['c'], '$deleteFromPrimitiveList/finalizers': ['a'] } },
  );
  assert.deepEqual((both.metadata as Obj).finalizers, ['c', 'b']);
});

test('$setElementOrder orders a list of primitives and a list of maps (the documented examples)', () => {
  const f = smp({ metadata: { finalizers: ['a', 'b', 'c'] } }, { metadata: { '$setElementOrder/finalizers': ['b', 'c', 'a'] } });
  assert.deepEqual((f.metadata as Obj).finalizers, ['b', 'c', 'a']);
  const original = spec({
    containers: [
      { name: 'a', image: 'ia' },
      { name: 'b', image: 'ib' },
      { name: 'c', image: 'ic' },
    ],
  });
  const out = smp(original, spec({ '$setElementOrder/containers': [{ name: 'b' }, { name: 'c' }, { name: 'a' }] }));
  assert.deepEqual((out.spec as Obj).containers, [
    { name: 'b', image: 'ib' },
    { name: 'c', image: 'ic' },
    { name: 'a', image: 'ia' },
  ]);
});

test('kubectl apply: $setElementOrder places an added container where the file has it, and merges the changed one', () => {
  const original = spec({
    containers: [
      { name: 'a', image: 'ia' },
      { name: 'c', image: 'ic' },
    ],
  });
  const patch = spec({
    '$setElementOrder/containers': [{ name: 'a' }, { name: 'b' }, { name: 'c' }],
    containers: [
      { name: 'b', image: 'ib' },
      { name: 'c', image: 'ic2' },
    ],
  });
  assert.deepEqual((smp(original, patch).spec as Obj).containers, [
    { name: 'a', image: 'ia' },
    { name: 'b', image: 'ib' },
    { name: 'c', image: 'ic2' },
  ]);
});

test('a patch list that does not follow its $setElementOrder list is refused', () => {
  refused(
    () => smp(twoContainers, spec({ '$setElementOrder/containers': [{ name: 'nginx' }], containers: [{ name: 'other', image: 'x' }] })),
    500,
    '',
    "The order in patch list:\n[map[image:x name:other]]\n doesn't match $setElementOrder list:\n[map[name:nginx]]\n",
  );
});

test('$retainKeys clears the volume source the patch does not keep (volumes are merge,retainKeys)', () => {
  const original = spec({
    volumes: [
      { name: 'data', emptyDir: {} },
      { name: 'cfg', configMap: { name: 'c' } },
    ],
  });
  const patch = spec({ volumes: [{ name: 'data', hostPath: { path: '/srv' }, $retainKeys: ['hostPath', 'name'] }] });
  assert.deepEqual((smp(original, patch).spec as Obj).volumes, [
    { name: 'data', hostPath: { path: '/srv' } },
    { name: 'cfg', configMap: { name: 'c' } },
  ]);
});

test('a $retainKeys that is no list, or that leaves out a key the patch sets, is a 400', () => {
  const original = spec({ volumes: [{ name: 'data', emptyDir: {} }] });
  const msg = 'invalid patch format of retainKeys';
  refused(
    () => smp(original, spec({ volumes: [{ name: 'data', hostPath: { path: '/x' }, $retainKeys: ['name'] }] })),
    400,
    'BadRequest',
    msg,
  );
  refused(() => smp(original, spec({ volumes: [{ name: 'data', $retainKeys: 'name' }] })), 400, 'BadRequest', msg);
});

test('a directive key without its field is a 400', () => {
  refused(
    () => smp({ metadata: { finalizers: ['a'] } }, { metadata: { $deleteFromPrimitiveList: ['a'] } }),
    400,
    'BadRequest',
    'invalid patch format of primitive list',
  );
  refused(
    () => smp(twoContainers, spec({ $setElementOrder: [{ name: 'nginx' }] })),
    400,
    'BadRequest',
    'invalid patch format of setElementOrder list',
  );
});

test('lists of lists are a 422, mixed element types are refused', () => {
  refused(
    () => smp({}, { metadata: { finalizers: [['a']] } }),
    422,
    'Invalid',
    'the server rejected our request due to an error in our request',
  );
  refused(
    () => smp({ metadata: { finalizers: ['a'] } }, { metadata: { finalizers: [1] } }),
    500,
    '',
    'list element types are not identical: [[a] [1]]',
  );
});

test('fields the schema does not know merge as plain maps, and their lists are replaced', () => {
  const original = spec({ extra: { keep: 1, list: [{ name: 'a' }] }, containers: [{ name: 'c', x: { y: 1 } }] });
  const out = smp(original, spec({ extra: { add: 2, list: [{ name: 'b' }] }, containers: [{ name: 'c', x: { z: 2 } }] }));
  assert.deepEqual((out.spec as Obj).extra, { keep: 1, add: 2, list: [{ name: 'b' }] });
  assert.deepEqual(((out.spec as Obj).containers as Obj[])[0], { name: 'c', x: { y: 1, z: 2 } });
});

test('a value of another type replaces, scalars are replaced, and new fields come without directives', () => {
  const original = spec({ restartPolicy: 'Always', nodeSelector: { a: 'b' } });
  const out = smp(
    original,
    spec({
      restartPolicy: 'Never',
      nodeSelector: 'oops',
      containers: [{ name: 'n', env: [{ name: 'A', value: '1' }, { $patch: 'replace' }] }],
    }),
  );
  assert.deepEqual(out.spec, {
    restartPolicy: 'Never',
    nodeSelector: 'oops',
    containers: [{ name: 'n', env: [{ name: 'A', value: '1' }] }],
  });
});

test('neither the original nor the patch is changed', () => {
  const original = structuredClone(twoContainers);
  const patch = spec({
    containers: [
      { name: 'nginx', image: 'n2' },
      { name: 'sidecar', $patch: 'delete' },
    ],
    '$setElementOrder/containers': [{ name: 'nginx' }],
  });
  const patchCopy = structuredClone(patch);
  smp(original, patch);
  assert.deepEqual(original, twoContainers);
  assert.deepEqual(patch, patchCopy);
});

test('a ConfigMap: data merges key by key, null deletes (no lists to merge)', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1', b: '2' } };
  const out = strategicMergePatch(cm, { data: { a: null, c: '3' } }, 'io.k8s.api.core.v1.ConfigMap');
  assert.deepEqual(out.data, { b: '2', c: '3' });
});

test('a patch that is no object is a 400, an unknown definition a programming error', () => {
  refused(
    () => strategicMergePatch({}, [] as unknown as object, POD),
    400,
    'BadRequest',
    'json: cannot unmarshal array into Go value of type map[string]interface {}',
  );
  assert.throws(() => strategicMergePatch({}, {}, 'io.k8s.api.core.v1.Nope'), /no OpenAPI definition io\.k8s\.api\.core\.v1\.Nope/);
});

// Three-way cases of strategicpatch's table tests, where kubectl apply adds and deletes in one patch and the
// live list has elements the file never had: the order the API server gives them, element for element.
test('kubectl apply: add one container and delete another, with one the live object alone has', () => {
  const c = (name: string, extra: Obj = {}) => ({ name, ...extra });
  const cases: [Obj[], Obj, string[]][] = [
    [
      [c('1'), c('2', { image: 'b' }), c('4', { image: 'c' })],
      { '$setElementOrder/containers': [c('2'), c('3')], containers: [c('3'), c('1', { $patch: 'delete' })] },
      ['2', '4', '3'],
    ],
    [
      [c('1', { image: 'a' }), c('4', { image: 'c' })],
      { '$setElementOrder/containers': [c('2'), c('3')], containers: [c('2'), c('3'), c('1', { $patch: 'delete' })] },
      ['4', '2', '3'],
    ],
    [[c('3', { image: 'a' })], { '$setElementOrder/containers': [c('2')], containers: [c('2'), c('1', { $patch: 'delete' })] }, ['2', '3']],
  ];
  for (const [live, patch, want] of cases) {
    const out = smp(spec({ containers: live }), spec(patch));
    assert.deepEqual(names((out.spec as Obj).containers), want, JSON.stringify(patch));
  }
  // What the live object alone had keeps its fields.
  const out = smp(spec({ containers: [c('1'), c('2', { image: 'b' }), c('4', { image: 'c' })] }), spec(cases[0][1]));
  assert.deepEqual((out.spec as Obj).containers, [c('2', { image: 'b' }), c('4', { image: 'c' }), c('3')]);
});

test('the patch kubectl 1.32 apply sends for an edited file, against a live pod with fields the file never had', () => {
  // Live: what the file had applied (containers c and d, env A and B, an emptyDir volume, labels app and old),
  // plus what others set: an annotation, a defaulted imagePullPolicy and an injected container.
  const live = {
    metadata: { name: 'x', labels: { app: 'a', old: 'y' }, annotations: { other: 'kept' } },
    spec: {
      containers: [
        {
          name: 'c',
          image: 'busybox:1',
          imagePullPolicy: 'IfNotPresent',
          env: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
          ],
        },
        { name: 'd', image: 'nginx' },
        { name: 'injected', image: 'sidecar' },
      ],
      volumes: [{ name: 'v', emptyDir: {} }],
    },
  };
  // The file now: container e before c, c with env B and C, the volume a hostPath, label app changed, old gone.
  const patch = {
    metadata: { labels: { app: 'b', old: null } },
    spec: {
      '$setElementOrder/containers': [{ name: 'e' }, { name: 'c' }],
      '$setElementOrder/volumes': [{ name: 'v' }],
      containers: [
        { image: 'redis', name: 'e' },
        {
          '$setElementOrder/env': [{ name: 'B' }, { name: 'C' }],
          env: [
            { name: 'C', value: '3' },
            { $patch: 'delete', name: 'A' },
          ],
          image: 'busybox:2',
          name: 'c',
        },
        { $patch: 'delete', name: 'd' },
      ],
      volumes: [{ $retainKeys: ['hostPath', 'name'], emptyDir: null, hostPath: { path: '/srv' }, name: 'v' }],
    },
  };
  assert.deepEqual(smp(live, patch), {
    metadata: { name: 'x', labels: { app: 'b' }, annotations: { other: 'kept' } },
    spec: {
      containers: [
        { name: 'injected', image: 'sidecar' },
        { name: 'e', image: 'redis' },
        {
          name: 'c',
          image: 'busybox:2',
          imagePullPolicy: 'IfNotPresent',
          env: [
            { name: 'B', value: '2' },
            { name: 'C', value: '3' },
          ],
        },
      ],
      volumes: [{ name: 'v', hostPath: { path: '/srv' } }],
    },
  });
});
