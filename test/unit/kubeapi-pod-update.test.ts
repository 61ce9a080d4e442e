import { test } from 'node:test';
import assert from 'node:assert/strict';
import { podUpdateChanges, podUpdateKind, validatePodUpdate } from '../../src/core/kubeapi/pod-update.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const FORBIDDEN_FIRST_LINE =
  'Pod "hello" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

function hello(): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'hello', namespace: 'default', uid: 'u-1', labels: { app: 'hello' }, resourceVersion: '3' },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'busybox:1.36',
          command: ['sleep', '3600'],
          resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '1', memory: '128Mi' } },
        },
      ],
      tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
    },
    status: { phase: 'Running' },
  };
}

const changed = (edit: (p: Obj) => void): Obj => {
  const p = hello();
  edit(p);
  return p;
};

function refusal(oldPod: Obj, newPod: Obj, opts = {}): KubeStatusError {
  try {
    validatePodUpdate(oldPod, newPod, opts);
  } catch (err) {
    assert.ok(err instanceof KubeStatusError);
    assert.equal(err.code, 422);
    assert.equal(err.reason, 'Invalid');
    return err;
  }
  assert.fail('the update was allowed');
}

test('an image change is allowed and is a container replacement; labels alone are metadata; nothing is none', () => {
  const image = changed((p) => (p.spec.containers[0].image = 'busybox:1.37'));
  validatePodUpdate(hello(), image);
  assert.equal(podUpdateKind(hello(), image), 'image');
  assert.deepEqual(podUpdateChanges(hello(), image).images, ['app']);

  const labels = changed((p) => (p.metadata.labels = { app: 'hello', tier: 'web' }));
  validatePodUpdate(hello(), labels);
  assert.equal(podUpdateKind(hello(), labels), 'metadata');
  assert.equal(
    podUpdateKind(
      hello(),
      changed((p) => (p.metadata.resourceVersion = '9')),
    ),
    'none',
  );
  // Absent and empty are the same to the API server, and a quantity is its value.
  validatePodUpdate(
    hello(),
    changed((p) => {
      p.spec.containers[0].args = [];
      p.spec.containers[0].resources.limits.cpu = '1000m';
      p.spec.nodeSelector = {};
    }),
  );
});

test('a command change is refused with the API server message, its Status details, and a diff of the field', () => {
  const err = refusal(
    hello(),
    changed((p) => (p.spec.containers[0].command = ['sleep', '7200'])),
  );
  const [first, ...rest] = err.message.split('\n');
  assert.equal(first, FORBIDDEN_FIRST_LINE);
  assert.equal(rest[0], '  core.PodSpec{');
  assert.ok(rest.includes('- \tcontainers[0].command: ["sleep","3600"],'), rest.join('\n'));
  assert.ok(rest.includes('+ \tcontainers[0].command: ["sleep","7200"],'), rest.join('\n'));
  assert.equal(rest.at(-1), '  }');
  assert.equal(err.details?.name, 'hello');
  assert.equal(err.details?.kind, 'Pod');
  assert.equal(err.details?.causes?.length, 1);
  const cause = err.details!.causes![0]!;
  assert.equal(cause.reason, 'FieldValueForbidden');
  assert.equal(cause.field, 'spec');
  assert.equal(cause.message, err.message.slice('Pod "hello" is invalid: spec: '.length));
  assert.ok(cause.message!.startsWith('Forbidden: pod updates may not change fields other than `spec.containers[*].image`'));
});

test('tolerations: additions and new tolerationSeconds are allowed, removing or changing one is refused', () => {
  const added = changed((p) => p.spec.tolerations.push({ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' }));
  validatePodUpdate(hello(), added);
  assert.equal(podUpdateKind(hello(), added), 'spec');
  validatePodUpdate(
    hello(),
    changed((p) => (p.spec.tolerations[0].tolerationSeconds = 60)),
  );
  const removed = refusal(
    hello(),
    changed((p) => (p.spec.tolerations = [])),
  );
  assert.equal(
    removed.message,
    'Pod "hello" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds',
  );
  assert.deepEqual(removed.details?.causes, [
    {
      reason: 'FieldValueForbidden',
      message: 'Forbidden: existing toleration can not be modified except its tolerationSeconds',
      field: 'spec.tolerations',
    },
  ]);
  refusal(
    hello(),
    changed((p) => (p.spec.tolerations[0].effect = 'NoSchedule')),
  );
});

test('activeDeadlineSeconds may be set and lowered, not raised, removed or out of range', () => {
  const withDeadline = changed((p) => (p.spec.activeDeadlineSeconds = 100));
  validatePodUpdate(hello(), withDeadline);
  validatePodUpdate(
    withDeadline,
    changed((p) => (p.spec.activeDeadlineSeconds = 50)),
  );
  validatePodUpdate(withDeadline, withDeadline);
  assert.equal(
    refusal(
      withDeadline,
      changed((p) => (p.spec.activeDeadlineSeconds = 200)),
    ).message,
    'Pod "hello" is invalid: spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value',
  );
  const removed = refusal(withDeadline, hello());
  assert.equal(
    removed.message,
    'Pod "hello" is invalid: spec.activeDeadlineSeconds: Invalid value: "null": must not update from a positive integer to nil value',
  );
  assert.equal(removed.details?.causes?.[0]?.reason, 'FieldValueInvalid');
  assert.equal(
    refusal(
      hello(),
      changed((p) => (p.spec.activeDeadlineSeconds = -1)),
    ).message,
    'Pod "hello" is invalid: spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive',
  );
});

test('resources change only as a resize; terminationGracePeriodSeconds only from negative to 1; containers neither added nor renamed', () => {
  const resized = changed((p) => (p.spec.containers[0].resources.limits.memory = '256Mi'));
  assert.ok(refusal(hello(), resized).message.startsWith(FORBIDDEN_FIRST_LINE));
  validatePodUpdate(hello(), resized, { allowResize: true });
  assert.equal(podUpdateKind(hello(), resized), 'resize');
  assert.deepEqual(podUpdateChanges(hello(), resized).resized, ['app']);
  const storage = changed((p) => (p.spec.containers[0].resources.limits['ephemeral-storage'] = '1Gi'));
  refusal(hello(), storage, { allowResize: true });

  const negative = changed((p) => (p.spec.terminationGracePeriodSeconds = -1));
  validatePodUpdate(
    negative,
    changed((p) => (p.spec.terminationGracePeriodSeconds = 1)),
  );
  refusal(
    hello(),
    changed((p) => (p.spec.terminationGracePeriodSeconds = 1)),
  );

  const more = refusal(
    hello(),
    changed((p) => p.spec.containers.push({ name: 'side', image: 'busybox' })),
  );
  assert.equal(more.message, 'Pod "hello" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers');
  const noImage = refusal(
    hello(),
    changed((p) => (p.spec.containers[0].image = '')),
  );
  assert.equal(noImage.message, 'Pod "hello" is invalid: spec.containers[0].image: Required value');
});

test('name and namespace may not change; several errors are listed as the API server aggregates them', () => {
  const err = refusal(
    hello(),
    changed((p) => {
      p.metadata.namespace = 'other';
      p.spec.activeDeadlineSeconds = -5;
    }),
  );
  assert.equal(
    err.message,
    'Pod "hello" is invalid: [metadata.namespace: Invalid value: "other": field is immutable, spec.activeDeadlineSeconds: Invalid value: -5: must be between 0 and 2147483647, inclusive]',
  );
  assert.deepEqual(
    err.details?.causes?.map((c) => c.field),
    ['metadata.namespace', 'spec.activeDeadlineSeconds'],
  );
  // An update without the UID keeps the old one.
  validatePodUpdate(
    hello(),
    changed((p) => delete p.metadata.uid),
  );
  const mirror = refusal(
    changed((p) => (p.metadata.annotations = { 'kubernetes.io/config.mirror': 'abc' })),
    hello(),
  );
  assert.match(
    mirror.message,
    /metadata\.annotations\[kubernetes\.io\/config\.mirror\]: Forbidden: may not remove or update mirror pod annotation/,
  );
});
