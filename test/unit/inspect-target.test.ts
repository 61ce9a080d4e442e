import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findContainer } from '../../src/cli/inspect-target.js';
import type * as T from '../../src/core/cri/types.js';
import { CONTAINER_NAME_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';

function container(id: string, pod: string, name: string, createdAt: number, namespace = 'shop'): T.Container {
  return {
    id,
    podSandboxId: `sb-${pod}`,
    labels: { [POD_NAME_LABEL]: pod, [POD_NAMESPACE_LABEL]: namespace, [CONTAINER_NAME_LABEL]: name },
    annotations: {},
    createdAt,
    state: 'CONTAINER_RUNNING',
  } as unknown as T.Container;
}

/** A runtime listing these containers, filtered by label as the CRI filters them. */
function runtime(list: T.Container[]) {
  return {
    listContainers: async (filter?: T.ContainerFilterInput) =>
      list.filter((c) => Object.entries(filter?.labelSelector ?? {}).every(([k, v]) => c.labels[k] === v)),
  };
}

const containers = [
  container('aaaa1111', 'web', 'c', 1),
  container('aaaa2222', 'web', 'c', 2),
  container('bbbb1111', 'web', 'side', 1),
  container('cccc1111', 'db', 'side', 1),
  container('dddd1111', 'web', 'c', 9, 'other'),
];

test("a container's name alone finds the newest instance of it, when one pod of the namespace has a container of that name", async () => {
  assert.equal((await findContainer(runtime(containers), 'c', { namespace: 'shop' })).id, 'aaaa2222');
  assert.equal((await findContainer(runtime(containers), 'c', { namespace: 'other' })).id, 'dddd1111');
});

test("POD/CONTAINER and --pod POD with the name find that pod's container; both at once is a usage error", async () => {
  assert.equal((await findContainer(runtime(containers), 'db/side', { namespace: 'shop' })).id, 'cccc1111');
  assert.equal((await findContainer(runtime(containers), 'side', { namespace: 'shop', pod: 'web' })).id, 'bbbb1111');
  await assert.rejects(
    findContainer(runtime(containers), 'side', { namespace: 'shop', pod: 'cache' }),
    /container "side" of pod "cache" not found in namespace shop/,
  );
  await assert.rejects(
    findContainer(runtime(containers), 'db/side', { namespace: 'shop', pod: 'web' }),
    (err: Error & { exitCode?: number }) => err.exitCode === 2 && /names its pod already/.test(err.message),
  );
});

test('a name two pods have is ambiguous, naming the pods', async () => {
  await assert.rejects(
    findContainer(runtime(containers), 'side', { namespace: 'shop' }),
    /container name "side" is ambiguous in namespace shop: pods db, web each have a container of that name/,
  );
});

test('IDs: in full or as a unique prefix; an ambiguous prefix and a name nowhere are said as such', async () => {
  assert.equal((await findContainer(runtime(containers), 'cccc', { namespace: 'shop' })).id, 'cccc1111');
  assert.equal((await findContainer(runtime(containers), 'aaaa1111', { namespace: 'shop' })).id, 'aaaa1111');
  await assert.rejects(
    findContainer(runtime(containers), 'aaaa', { namespace: 'shop' }),
    /container ID prefix "aaaa" is ambiguous: 2 containers match/,
  );
  await assert.rejects(
    findContainer(runtime(containers), 'ffff', { namespace: 'shop' }),
    /^PodctlError: container "ffff" not found$|container "ffff" not found$/,
  );
  await assert.rejects(
    findContainer(runtime(containers), 'app', { namespace: 'shop' }),
    /container "app" not found: no pod in namespace shop has a container of that name/,
  );
});
