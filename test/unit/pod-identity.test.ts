import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { PodConfigMerger } from '../../src/core/config/index.js';
import { CriClient } from '../../src/core/cri/client.js';
import { duplicateSandboxes } from '../../src/core/duplicate-sandboxes.js';
import { podSandboxConfig } from '../../src/core/kuberuntime/config.js';
import { AGENT_LABEL } from '../../src/core/kuberuntime/labels.js';
import { keptByMessage, KEPT_BY_ANNOTATION } from '../../src/core/node/keeper.js';
import { StandaloneNode } from '../../src/core/node/node.js';
import { nodeAgentLabel } from '../../src/core/node/paths.js';
import { PodStatusReader } from '../../src/core/kuberuntime/pod-status.js';
import { planPods } from '../../src/core/plan.js';
import { ApiError } from '../../src/core/api/server.js';
import { settleIdentities, type HeldPod } from '../../src/core/pod-identity.js';
import { ManifestError, manifestSetFromTexts, parseManifestText, staticPodUID } from '../../src/core/pod/index.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { scratchDir } from '../support/e2e.js';

const UID_A = '3f2b9c1e-7d4a-4b8e-9f0a-12c34d56e78f';
const UID_OLD = '0123456789abcdef0123456789abcdef';

const text = (name: string, opts: { ns?: string; uid?: string; cmd?: string } = {}) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${opts.ns ?? 'demo'}${opts.uid ? `, uid: ${opts.uid}` : ''}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "${opts.cmd ?? '3600'}"]}\n`;
const load = (name: string, file: string, opts: Parameters<typeof text>[1] = {}): IPod =>
  parseManifestText(text(name, opts), { kind: 'file', path: file }, { nodeName: 'n' }).pods[0]!.pod;
const held = (name: string, uid: string, ready = true, createdAt = 1): HeldPod => ({
  namespace: 'demo',
  name,
  uid,
  ready,
  createdAt,
  agent: 'watch',
});

test('the same namespace/name from two files is one UID; metadata.uid, when given, is kept', () => {
  assert.equal(load('same', '/a.yaml').metadata!.uid, load('same', '/b.yaml').metadata!.uid);
  assert.equal(load('same', '/a.yaml').metadata!.uid, staticPodUID('n', 'demo', 'same'));
  assert.equal(load('same', '/a.yaml', { uid: UID_A }).metadata!.uid, UID_A);
});

test("settleIdentities: a derived UID takes the running sandbox's; an explicit one is refused there; a UID another name holds is refused, naming it", () => {
  const derived = load('same', '/a.yaml');
  const adopted = settleIdentities([derived], [held('same', UID_OLD, false, 3), held('same', UID_OLD.replace('0', 'f'), true, 2)], 'n');
  assert.deepEqual(adopted.refused, []);
  assert.equal(adopted.pods[0]!.metadata!.uid, UID_OLD.replace('0', 'f'), 'the ready one');
  assert.equal(
    settleIdentities([derived], [held('same', UID_OLD, false)], 'n').pods[0]!.metadata!.uid,
    derived.metadata!.uid,
    'a sandbox not ready is not adopted',
  );

  const explicit = load('same', '/a.yaml', { uid: UID_A });
  const refused = settleIdentities([explicit], [held('same', UID_OLD)], 'n');
  assert.equal(refused.pods.length, 0);
  assert.match(refused.refused[0]!.message, new RegExp(`pod demo/same already runs on this node with UID ${UID_OLD}; delete it first`));

  const u2 = load('u2', '/u2.yaml', { uid: UID_A });
  const taken = settleIdentities([u2], [held('u1', UID_A)], 'n');
  assert.equal(taken.pods.length, 0);
  assert.match(taken.refused[0]!.message, new RegExp(`metadata.uid ${UID_A} is already the UID of pod demo/u1 on this node`));
  assert.deepEqual(settleIdentities([explicit], [held('same', UID_A)], 'n').pods, [explicit], 'its own sandbox is no conflict');
});

test('validate: two pods of one set with one metadata.uid are an error on the second, naming the first', () => {
  const read = {
    entries: [
      { kind: 'file' as const, path: '/m/u1.yaml', display: 'u1.yaml', text: text('u1', { uid: UID_A }) },
      { kind: 'file' as const, path: '/m/u2.yaml', display: 'u2.yaml', text: text('u2', { uid: UID_A }) },
    ],
  };
  assert.throws(
    () => manifestSetFromTexts(read, { nodeName: 'n' }),
    (err: unknown) => {
      assert.ok(err instanceof ManifestError);
      assert.equal(err.problems.length, 1);
      assert.equal(err.problems[0]!.field, 'metadata.uid');
      assert.match(err.problems[0]!.message, /already the UID of pod demo\/u1 \(\/m\/u1\.yaml, document 1\)/);
      return true;
    },
  );
});

test(
  'the merger: two files of one source with one namespace/name give one pod (filterInvalidPods), the second named as refused; ' +
    'so does a UID two names share',
  () => {
    const ops: string[] = [];
    const conflicts: string[] = [];
    const m = new PodConfigMerger(
      (u) => ops.push(`${u.op} ${u.pods.map((p) => p.metadata!.name).join(',')}`),
      (source, pod, _owner, why) => conflicts.push(`${source} ${pod.metadata!.name} ${why}`),
    );
    m.merge('file', [load('same', '/w/a.yaml'), load('same', '/w/b.yaml', { cmd: '1' })]);
    assert.deepEqual(ops, ['ADD same']);
    assert.deepEqual(conflicts, ['file same is defined twice (also in /w/a.yaml); the first is kept']);
    assert.equal(m.pods().length, 1);
    m.merge('file', [load('same', '/w/a.yaml'), load('u1', '/w/u1.yaml', { uid: UID_A }), load('u2', '/w/u2.yaml', { uid: UID_A })]);
    assert.deepEqual(
      m.pods().map((p) => p.metadata!.name),
      ['same', 'u1'],
    );
    assert.match(conflicts.at(-1)!, new RegExp(`file u2 has metadata.uid ${UID_A}, which pod demo/u1 already holds \\(/w/u1.yaml\\)`));
    m.merge('applied', [load('u3', '/applied/u3.yaml', { uid: UID_A })]);
    assert.match(conflicts.at(-1)!, /applied u3 has metadata.uid .* which pod demo\/u1 of the file source already holds/);
    assert.equal(m.pods().length, 2);
  },
);

test('keptByMessage names what keeps a pod and how to change it', () => {
  const pod = (keeper: string, file?: string): IPod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'same',
      namespace: 'demo',
      annotations: { [KEPT_BY_ANNOTATION]: keeper, ...(file ? { 'podctl.io/config.file': file } : {}) },
    },
  });
  assert.match(
    keptByMessage(pod('applied'), '/r'),
    /^handed to the agent by run --detach on \/r, which keeps it; change it with podctl run --detach, or delete it with podctl delete pod same -n demo$/,
  );
  assert.match(
    keptByMessage(pod('file', '/w/a.yaml'), '/r'),
    /^the watch on \/r keeps this pod from \/w\/a.yaml; change its manifest there/,
  );
  assert.match(keptByMessage(pod('run', '/x.yaml'), '/r'), /^the foreground podctl run on \/r keeps this pod \(from \/x.yaml\)/);
});

test("duplicateSandboxes: another UID of a namespace/name the node keeps, this node's or sync-once's only", () => {
  const kept = [load('same', '/a.yaml')];
  const uid = kept[0]!.metadata!.uid!;
  const s = (name: string, u: string, agent: string) => ({
    labels: {
      'io.podctl.managed-by': 'podctl',
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': 'demo',
      'io.kubernetes.pod.uid': u,
      [AGENT_LABEL]: agent,
    },
  });
  const dups = duplicateSandboxes(
    [s('same', uid, 'watch'), s('same', UID_OLD, 'run'), s('same', UID_A, 'watch-other'), s('other', UID_A, 'watch')],
    kept,
    'watch',
  );
  assert.deepEqual([...dups.keys()], [UID_OLD]);
});

describe('the node and what the runtime already holds', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let dirs: ReturnType<typeof scratchDir>;
  const nodes: StandaloneNode[] = [];
  let clock: FakeClock;

  before(async () => {
    fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  });
  after(async () => {
    for (const n of nodes.splice(0)) await n.stop();
    client.close();
    await fake.stop();
    dirs?.cleanup();
  });
  beforeEach(async () => {
    for (const n of nodes.splice(0)) await n.stop();
    dirs?.cleanup();
    dirs = scratchDir('pod-identity');
    clock = new FakeClock();
  });

  async function startNode(): Promise<StandaloneNode> {
    const node = new StandaloneNode({
      runtime: client,
      images: client,
      clock,
      rootDir: join(dirs.dir, 'root'),
      logRoot: join(dirs.dir, 'logs'),
      nodeName: 'n',
      serve: false,
      relistPeriodMs: 1000,
    });
    nodes.push(node);
    await node.start();
    return node;
  }
  /** A sandbox made straight through the CRI, as an older podctl left it. */
  const sandboxAs = (name: string, uid: string, agent: string) =>
    client.runPodSandbox(
      podSandboxConfig(
        { ...load(name, '/old.yaml'), metadata: { ...load(name, '/old.yaml').metadata, uid } },
        0,
        join(dirs.dir, 'logs'),
        agent,
      ),
    );
  const sandboxesOf = (name: string) => fake.sandboxes().filter((s) => s.metadata.name === name && s.state === 'SANDBOX_READY');

  test("an older podctl's pod keeps its sandbox (its UID adopted), and housekeeping removes a second sandbox of its namespace/name", async () => {
    const agent = nodeAgentLabel(join(dirs.dir, 'root'));
    const mine = await sandboxAs('same', UID_OLD, agent);
    await sandboxAs('same', UID_A.replace(/-/g, ''), 'run');
    const node = await startNode();
    const [ref] = node.apply([{ file: 'a.yaml', text: text('same') }]);
    assert.equal(ref!.uid, UID_OLD, "the running sandbox's UID, not a new one");
    await node.kubelet.housekeeping();
    assert.deepEqual(
      sandboxesOf('same').map((s) => s.id),
      [mine],
    );
    assert.equal(node.pods().filter((p) => p.metadata!.name === 'same').length, 1);
  });

  test("plan: a pod of an older podctl's sandbox (a path-hashed UID) is planned as an update of it, not a new sandbox", async () => {
    const old = 'fedcba9876543210fedcba9876543210';
    await sandboxAs('planned', old, 'run');
    const reader = new PodStatusReader({ runtime: client, clock });
    const plan = await planPods({ runtime: client, images: client, statusReader: reader }, [load('planned', '/new.yaml')], {
      now: clock.now(),
      nodeName: 'n',
    });
    assert.equal(plan.pods[0]!.uid, old);
    assert.deepEqual(
      plan.pods[0]!.actions.map((a) => a.action),
      ['StartContainer'],
      'its container started in the sandbox there',
    );
    const unaware = await planPods({ runtime: client, images: client, statusReader: reader }, [load('planned', '/new.yaml')], {
      now: clock.now(),
    });
    assert.equal(unaware.pods[0]!.actions[0]!.action, 'CreatePodSandbox', 'without the node name, as before');
  });

  test('a UID another pod holds is refused (409), naming that pod; the first keeps its UID', async () => {
    const node = await startNode();
    const [u1] = node.apply([{ file: 'u1.yaml', text: text('u1', { uid: UID_A }) }]);
    assert.equal(u1!.uid, UID_A);
    assert.throws(
      () => node.apply([{ file: 'u2.yaml', text: text('u2', { uid: UID_A }) }]),
      (err: unknown) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.status, 409);
        assert.match(
          err.message,
          new RegExp(
            `demo/u2: rejected at admission: metadata.uid ${UID_A} is already the UID of pod demo/u1 \\(handed to the agent by run --detach`,
          ),
        );
        return true;
      },
    );
    assert.deepEqual(
      node.pods().map((p) => `${p.metadata!.name} ${p.metadata!.uid}`),
      [`u1 ${UID_A}`],
    );
  });
});
