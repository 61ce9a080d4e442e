import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, Watch, type V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';
import { startKubeAgent, type KubeAgentHandle } from '../support/kubectl.js';

/**
 * A second client of the node's Kubernetes API: @kubernetes/client-node, as a controller or a script
 * would use it, from the kubeconfig `podctl kubeconfig` prints (client certificate, CA, the agent's port).
 */

const NS = E2E_NAMESPACE;
let client: CriClient;
let dirs: ReturnType<typeof scratchDir>;
let root: string;
let agent: KubeAgentHandle | undefined;
let kc: KubeConfig;
let core: CoreV1Api;

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  dirs = scratchDir('kube-client-node');
  root = join(dirs.dir, 'root');
  agent = await startKubeAgent({ root, logs: join(dirs.dir, 'logs'), timeoutMs: 600_000 });
  const cfg = podctl(['kubeconfig', '--root-dir', root]);
  assert.equal(cfg.code, 0, cfg.stderr);
  const file = join(dirs.dir, 'kubeconfig');
  writeFileSync(file, cfg.stdout, { mode: 0o600 });
  kc = new KubeConfig();
  kc.loadFromFile(file);
  core = kc.makeApiClient(CoreV1Api);
});

after(async () => {
  await agent?.stop();
  await removeE2EPods(client);
  client.close();
  dirs?.cleanup();
});

type Event = { type: string; pod: V1Pod };

/** A watch through client-node's Watch, every event kept from the first, so a test asserts on the first that matched. */
async function startWatch(path: string, query: Record<string, string> = {}) {
  const events: Event[] = [];
  const waiters = new Set<() => void>();
  let ended: unknown;
  const abort = await new Watch(kc).watch(
    path,
    query,
    (type, obj: V1Pod) => {
      events.push({ type, pod: obj });
      for (const w of waiters) w();
    },
    (err) => {
      ended = err ?? 'the watch ended';
      for (const w of waiters) w();
    },
  );
  return {
    first: (what: string, match: (e: Event) => boolean, timeoutMs: number): Promise<Event> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`timed out waiting for ${what}; events: ${summary()}`)), timeoutMs);
        const summary = () => JSON.stringify(events.map((e) => [e.type, e.pod.status?.phase]));
        const done = (err?: Error, e?: Event) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (err) reject(err);
          else resolve(e!);
        };
        const check = () => {
          const e = events.find(match);
          if (e) done(undefined, e);
          else if (ended !== undefined) done(new Error(`the watch ended (${String(ended)}) before ${what}; events: ${summary()}`));
        };
        waiters.add(check);
        check();
      }),
    stop: () => abort.abort(),
  };
}

test('client-node: list pods, watch a new pod go Running, delete it and see DELETED', { timeout: 300_000 }, async () => {
  const all = await core.listPodForAllNamespaces();
  assert.deepEqual(all.items, [], 'a new root dir has no pods');
  const listed = await core.listNamespacedPod({ namespace: NS });
  assert.equal(listed.items.length, 0);
  assert.match(listed.metadata?.resourceVersion ?? '', /^\d+$/);

  const watch = await startWatch(`/api/v1/namespaces/${NS}/pods`, { resourceVersion: listed.metadata!.resourceVersion! });
  try {
    const name = 'client-node';
    const made = await core.createNamespacedPod({
      namespace: NS,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }],
        },
      },
    });
    assert.equal(made.metadata?.name, name);
    assert.equal(made.metadata?.namespace, NS);
    assert.ok(made.metadata?.uid, 'a UID');
    assert.ok(made.metadata?.creationTimestamp instanceof Date, 'creationTimestamp read as a date');

    const added = await watch.first('ADDED', (e) => e.pod.metadata?.name === name, 30_000);
    assert.equal(added.type, 'ADDED');
    assert.equal(added.pod.metadata?.uid, made.metadata!.uid);
    const running = await watch.first('Running', (e) => e.pod.metadata?.name === name && e.pod.status?.phase === 'Running', 120_000);
    assert.equal(running.type, 'MODIFIED');
    assert.equal(running.pod.metadata?.uid, made.metadata!.uid);
    assert.ok(running.pod.status?.containerStatuses?.[0]?.state?.running, 'the container running');

    const got = await core.readNamespacedPod({ name, namespace: NS });
    assert.equal(got.metadata?.uid, made.metadata!.uid);
    assert.equal(got.spec?.containers[0]?.image, 'busybox:1.36');
    const byLabel = await core.listNamespacedPod({ namespace: NS, labelSelector: `app=${name}` });
    assert.deepEqual(
      byLabel.items.map((p) => p.metadata?.name),
      [name],
    );

    const deleting = await core.deleteNamespacedPod({ name, namespace: NS });
    assert.equal(deleting.metadata?.name, name);
    assert.ok(deleting.metadata?.deletionTimestamp, 'a deletionTimestamp');
    const deleted = await watch.first('DELETED', (e) => e.pod.metadata?.name === name && e.type === 'DELETED', 120_000);
    assert.equal(deleted.pod.metadata?.uid, made.metadata!.uid);
    const after = await core.listNamespacedPod({ namespace: NS });
    assert.deepEqual(after.items, []);
    await assert.rejects(core.readNamespacedPod({ name, namespace: NS }), (err: { code?: number; body?: unknown }) => {
      assert.equal(err.code, 404);
      const status = (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as { reason?: string; message?: string };
      assert.equal(status.reason, 'NotFound');
      assert.equal(status.message, `pods "${name}" not found`);
      return true;
    });
  } finally {
    watch.stop();
  }
});

test(
  'client-node: deleteCollectionNamespacedPod deletes the pods its label selector matches; the other stays',
  { timeout: 300_000 },
  async () => {
    const pod = (name: string, batch: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { batch } },
      spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
    });
    for (const [name, batch] of [
      ['batch-1', 'one'],
      ['batch-2', 'one'],
      ['batch-3', 'two'],
    ] as const)
      await core.createNamespacedPod({ namespace: NS, body: pod(name, batch) });
    const listed = await core.listNamespacedPod({ namespace: NS });
    const watch = await startWatch(`/api/v1/namespaces/${NS}/pods`, { resourceVersion: listed.metadata!.resourceVersion! });
    try {
      await core.deleteCollectionNamespacedPod({ namespace: NS, labelSelector: 'batch=one', gracePeriodSeconds: 1 });
      for (const name of ['batch-1', 'batch-2'])
        await watch.first(`${name} DELETED`, (e) => e.pod.metadata?.name === name && e.type === 'DELETED', 120_000);
      const left = await core.listNamespacedPod({ namespace: NS });
      assert.deepEqual(
        left.items.map((p) => p.metadata?.name),
        ['batch-3'],
      );
      assert.equal(left.items[0]!.metadata?.deletionTimestamp, undefined, 'batch-3 is not being deleted');
      await core.deleteNamespacedPod({ name: 'batch-3', namespace: NS, gracePeriodSeconds: 1 });
      await watch.first('batch-3 DELETED', (e) => e.pod.metadata?.name === 'batch-3' && e.type === 'DELETED', 120_000);
    } finally {
      watch.stop();
    }
  },
);
