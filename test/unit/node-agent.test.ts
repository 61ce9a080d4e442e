import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import yaml from 'js-yaml';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { AgentClient, AgentRequestError } from '../../src/core/node/client.js';
import { StandaloneNode } from '../../src/core/node/node.js';
import { PodStatusReader } from '../../src/core/kuberuntime/pod-status.js';
import { planPods, withKeptUIDs } from '../../src/core/plan.js';
import { loadManifests, ManifestError, parseManifestText, readManifests } from '../../src/core/pod/index.js';
import { manifestRefusal } from '../../src/cli/handover.js';
import { startStatusServer } from '../../src/core/api/server.js';
import { Metrics } from '../../src/core/metrics.js';
import type { NodeInfo } from '../../src/core/admission.js';
import { appliedDir } from '../../src/core/node/paths.js';
import { podProgress } from '../../src/core/node/wait.js';
import { displayStatus } from '../../src/cli/status-line.js';
import { scratchDir } from '../support/e2e.js';

const podText = (name: string, command: string[], ns = 'default') =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: ${JSON.stringify(command)}}\n`;

/** Lets gRPC round trips finish between clock moves. */
async function settle(clock: FakeClock, ms: number, steps = 10): Promise<void> {
  for (let i = 0; i < steps; i++) {
    await new Promise((r) => setTimeout(r, 5));
    clock.advance(ms / steps);
  }
  await new Promise((r) => setTimeout(r, 20));
}

/**
 * Moves the clock a second at a time until cond holds, or fails after 30 s of real time: on a loaded
 * machine the same round trips span more clock moves, so no count of moves bounds the wait. Moving the
 * clock further changes nothing these conditions or the assertions after them read: the fake runtime
 * keeps real time (its containers, sleep 3600, never exit) and each condition is an eventual state.
 */
async function until(clock: FakeClock, what: string, cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`never: ${what}`);
    await settle(clock, 1000);
  }
}

function post(socket: string, path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path, method: 'POST', headers: { 'content-type': 'application/yaml' } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the node agent on the fake runtime', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let dirs: ReturnType<typeof scratchDir>;
  let clock: FakeClock;
  const nodes: StandaloneNode[] = [];

  before(async () => {
    fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  });
  after(async () => {
    for (const n of nodes.splice(0)) await n.stop();
    client.close();
    await fake.stop();
    // The last test's scratch dir: each beforeEach removes only the one before it.
    dirs?.cleanup();
  });
  beforeEach(async () => {
    for (const n of nodes.splice(0)) {
      // Termination waits on the fake clock: move it while the node stops (a count of moves could stop
      // moving it before a loaded machine is done, and the stop would then wait for good).
      let stopped = false;
      const stopping = n.stop({ cleanup: true }).finally(() => (stopped = true));
      const deadline = Date.now() + 30_000;
      while (!stopped && Date.now() < deadline) await settle(clock, 1000);
      assert.ok(stopped, 'the node stopped within 30 s');
      await stopping;
    }
    dirs?.cleanup();
    dirs = scratchDir('node-agent');
    clock = new FakeClock();
  });

  async function startNode(serve = false): Promise<StandaloneNode> {
    const node = new StandaloneNode({
      runtime: client,
      images: client,
      clock,
      rootDir: join(dirs.dir, 'root'),
      logRoot: join(dirs.dir, 'logs'),
      nodeName: 'unit',
      serve,
      relistPeriodMs: 1000,
    });
    nodes.push(node);
    await node.start();
    return node;
  }

  const podOf = (node: StandaloneNode, name: string): IPod | undefined => node.pods().find((p) => p.metadata!.name === name);
  const running = (node: StandaloneNode, name: string) => podOf(node, name)?.status?.containerStatuses?.[0]?.state?.running !== undefined;
  const sandboxesOf = (name: string) => fake.sandboxes().filter((s) => s.metadata.name === name);
  const containersOf = (name: string) => fake.containers().filter((c) => sandboxesOf(name).some((s) => s.id === c.podSandboxId));

  test('hand-over: the pod is written to its applied file and run; the wait sees it running only once synced', async () => {
    const node = await startNode();
    const [ref] = node.apply([{ file: 'a.yaml', text: podText('web', ['sleep', '3600']) }]);
    assert.deepEqual({ ns: ref!.namespace, name: ref!.name, generation: ref!.generation }, { ns: 'default', name: 'web', generation: 1 });
    assert.deepEqual(readdirSync(appliedDir(join(dirs.dir, 'root'))), ['default_web.yaml']);
    await until(clock, 'web running', () => running(node, 'web'));
    assert.ok(podProgress(ref!, podOf(node, 'web'), 'running')?.ok);
    assert.equal(podOf(node, 'web')!.metadata!.annotations!['kubernetes.io/config.source'], 'api');
    assert.equal(sandboxesOf('web').length, 1);
  });

  test("POST /v1/pods/NS/NAME/conditions sets a readiness gate's condition and Ready follows it; the kubelet's own types, bad bodies and unknown pods are refused", async () => {
    const node = await startNode(true);
    const gated = `${podText('gated', ['sleep', '3600'])}  readinessGates:\n  - conditionType: example.com/lb\n`;
    node.apply([{ file: 'g.yaml', text: gated }]);
    await until(clock, 'gated running', () => running(node, 'gated'));
    const ready = () => podOf(node, 'gated')!.status!.conditions!.find((c) => c.type === 'Ready')!;
    assert.deepEqual([ready().status, ready().reason], ['False', 'ReadinessGatesNotReady']);
    const socket = join(dirs.dir, 'root', 'podctl.sock');
    const set = (path: string, body: string) => post(socket, path, body);
    assert.equal((await set('/v1/pods/default/gated/conditions', '{"type": "Ready", "status": "True"}')).status, 400);
    assert.equal((await set('/v1/pods/default/gated/conditions', '{"type": "example.com/lb", "status": "yes"}')).status, 400);
    assert.equal((await set('/v1/pods/default/gated/conditions', 'not json')).status, 400);
    assert.equal((await set('/v1/pods/default/nosuch/conditions', '{"type": "example.com/lb", "status": "True"}')).status, 404);
    assert.equal(ready().status, 'False', 'nothing refused changed the pod');
    const ok = await set('/v1/pods/default/gated/conditions', '{"type": "example.com/lb", "status": "True", "reason": "Attached"}');
    assert.equal(ok.status, 200, ok.body);
    const answered = JSON.parse(ok.body) as IPod;
    assert.equal(answered.status!.conditions!.find((c) => c.type === 'Ready')!.status, 'True', 'the answer carries the new Ready');
    assert.equal(ready().status, 'True');
    assert.equal(podOf(node, 'gated')!.status!.conditions!.find((c) => c.type === 'example.com/lb')!.reason, 'Attached');
  });

  test(
    'the watch publishes every status a waiter needs: the settling one comes as an event, observedGeneration included, not ' +
      'only in a later list',
    async () => {
      const node = await startNode();
      const events: IPod[] = [];
      const stop = node.watchPods((e) => e.type === 'MODIFIED' && events.push(e.object));
      const [ref] = node.apply([{ file: 'a.yaml', text: podText('web', ['sleep', '3600']) }]);
      await until(clock, 'a watch event settles web', () => events.some((p) => podProgress(ref!, p, 'running')?.ok === true));
      const [second] = node.apply([{ file: 'b.yaml', text: podText('web', ['sleep', '4000']) }]);
      await until(clock, 'a watch event settles the second version', () =>
        events.some((p) => podProgress(second!, p, 'running')?.ok === true),
      );
      stop();
    },
  );

  test('update: the same namespace/name from another file is the same pod, its container replaced in the same sandbox', async () => {
    const node = await startNode();
    const [first] = node.apply([{ file: 'a.yaml', text: podText('web', ['sleep', '3600']) }]);
    await until(clock, 'web running', () => running(node, 'web'));
    const sandbox = sandboxesOf('web')[0]!.id;
    const [second] = node.apply([{ file: 'b.yaml', text: podText('web', ['sleep', '4000']) }]);
    assert.equal(second!.uid, first!.uid, 'one UID whatever file it came from');
    assert.equal(second!.generation, 2);
    // The status of the first version does not count for the second.
    assert.equal(podProgress(second!, podOf(node, 'web'), 'running'), undefined);
    await until(clock, 'the second version synced and running', () => podProgress(second!, podOf(node, 'web'), 'running')?.ok === true);
    assert.deepEqual(
      sandboxesOf('web').map((s) => s.id),
      [sandbox],
      'one sandbox, the same',
    );
    const live = containersOf('web').filter((c) => c.state === 'CONTAINER_RUNNING');
    assert.equal(live.length, 1);
    assert.deepEqual(live[0]!.config?.command, ['sleep', '4000']);
    assert.equal(node.pods().filter((p) => p.metadata!.name === 'web').length, 1);
  });

  test('a label-only change is the same generation, as the API server counts it; a spec change after it is the next', async () => {
    const node = await startNode();
    const [first] = node.apply([{ file: 'a.yaml', text: podText('web', ['sleep', '3600']) }]);
    await until(clock, 'web running', () => running(node, 'web'));
    const labelled = podText('web', ['sleep', '3600']).replace('namespace: default}', 'namespace: default, labels: {tier: web}}');
    const [second] = node.apply([{ file: 'a.yaml', text: labelled }]);
    assert.equal(second!.generation, first!.generation, 'labels are metadata: no new generation');
    assert.equal(podOf(node, 'web')!.metadata!.labels?.['tier'], 'web', 'the pod listed carries the new label');
    assert.equal(podOf(node, 'web')!.metadata!.generation, first!.generation);
    // Its wait settles on the status already there: nothing in the spec is left to sync.
    assert.equal(podProgress(second!, podOf(node, 'web'), 'running')?.ok, true);
    const [third] = node.apply([{ file: 'a.yaml', text: labelled.replace('"3600"', '"4000"') }]);
    assert.equal(third!.generation, first!.generation + 1, 'a changed command is a new generation');
    assert.equal(podOf(node, 'web')!.metadata!.generation, third!.generation);
  });

  test('delete: the applied file goes, the pod is terminated and removed, and it never comes back', async () => {
    const node = await startNode();
    node.apply([{ file: 'a.yaml', text: podText('gone', ['sleep', '3600']) }]);
    await until(clock, 'gone running', () => running(node, 'gone'));
    const deletedAt = clock.now();
    await node.delete('default', 'gone');
    // Until it is gone, the pod is listed as the API server would have it: deletionTimestamp is the delete plus its grace (kubectl's
    // Terminating).
    const ending = podOf(node, 'gone')!;
    assert.equal(ending.metadata?.deletionTimestamp, new Date(deletedAt + 2000).toISOString().replace(/\.\d{3}Z$/, 'Z'));
    assert.equal(ending.metadata?.deletionGracePeriodSeconds, 2);
    assert.equal(displayStatus(ending, ending.status), 'Terminating');
    assert.equal(existsSync(join(appliedDir(join(dirs.dir, 'root')), 'default_gone.yaml')), false);
    await until(clock, 'gone removed', () => !podOf(node, 'gone') && sandboxesOf('gone').length === 0);
    // Past the applied source's re-read and several housekeeping passes: still gone.
    await settle(clock, 30_000, 30);
    assert.equal(podOf(node, 'gone'), undefined);
    assert.equal(sandboxesOf('gone').length, 0);
    await assert.rejects(node.delete('default', 'gone'), /pod "gone" not found in namespace default/);
  });

  test('delete, then apply again the moment its termination is over: the pod starts anew (it waited forever)', async () => {
    const node = await startNode();
    node.apply([{ file: 'a.yaml', text: podText('again', ['sleep', '3600']) }]);
    await until(clock, 'again running', () => running(node, 'again'));
    const uid = podOf(node, 'again')!.metadata!.uid!;
    let reapplied = false;
    node.kubelet.observe({
      // After the termination's last step, before housekeeping drops the worker (the clock stands still).
      onTerminated: (pod) =>
        pod.metadata?.uid === uid &&
        setImmediate(() => {
          assert.equal(node.kubelet.workers.state(uid), 'terminated');
          node.apply([{ file: 'a.yaml', text: podText('again', ['sleep', '3600']) }]);
          reapplied = true;
        }),
    });
    await node.delete('default', 'again');
    await until(clock, 'applied again', () => reapplied);
    await until(
      clock,
      'running again, in a new sandbox',
      () => running(node, 'again') && sandboxesOf('again').some((s) => s.state === 'SANDBOX_READY'),
    );
    assert.equal(node.kubelet.workers.state(uid), 'syncing');
  });

  test("apply again while the pod terminates: the answer is the new life's generation, so no status of the ending life satisfies a wait", async () => {
    const node = await startNode();
    const [first] = node.apply([{ file: 'a.yaml', text: podText('twice', ['sleep', '3600']) }]);
    await until(clock, 'twice running', () => running(node, 'twice'));
    await node.delete('default', 'twice');
    assert.equal(node.kubelet.workers.state(first!.uid), 'terminating');
    const [second] = node.apply([{ file: 'a.yaml', text: podText('twice', ['sleep', '3600']) }]);
    assert.equal(second!.uid, first!.uid);
    assert.ok(second!.generation > first!.generation, `generation ${second!.generation} after ${first!.generation}`);
    const ending = podOf(node, 'twice');
    assert.equal(ending && podProgress(second!, ending, 'running'), undefined);
    await until(clock, 'the new life running', () => podProgress(second!, podOf(node, 'twice'), 'running')?.ok === true);
    assert.equal(node.kubelet.workers.state(first!.uid), 'syncing');
  });

  test('restart adoption: a new agent over the same root dir adopts the running pod without restarting it', async () => {
    const first = await startNode();
    first.apply([{ file: 'a.yaml', text: podText('kept', ['sleep', '3600']) }]);
    await until(clock, 'kept running', () => running(first, 'kept'));
    const before = containersOf('kept').map((c) => `${c.id}:${c.state}`);
    nodes.splice(nodes.indexOf(first), 1);
    await first.stop();
    const second = await startNode();
    await until(clock, 'kept adopted', () => running(second, 'kept'));
    await settle(clock, 10_000, 10);
    assert.deepEqual(
      containersOf('kept').map((c) => `${c.id}:${c.state}`),
      before,
      'no container restarted or added',
    );
    assert.equal(sandboxesOf('kept').length, 1);
  });

  test('POST /v1/plan: the agent plans pods against its runtime as the CLI would, as it keeps them, and writes nothing', async () => {
    const node = await startNode(true);
    node.apply([{ file: 'a.yaml', text: podText('web', ['sleep', '3600']) }]);
    await until(clock, 'web running', () => running(node, 'web'));
    const kept = podOf(node, 'web')!;
    // The same pod from another file: the same UID (the namespace/name's), so plan compares with what runs.
    const given = (image: string) =>
      parseManifestText(
        podText('web', ['sleep', '3600']).replace('busybox:1.36', image),
        { kind: 'file', path: '/elsewhere/web.yaml' },
        { nodeName: 'unit' },
      ).pods[0]!.pod;
    assert.equal(given('busybox:1.36').metadata!.uid, kept.metadata!.uid);
    const writes = () =>
      [
        'RunPodSandbox',
        'CreateContainer',
        'StartContainer',
        'StopContainer',
        'RemoveContainer',
        'StopPodSandbox',
        'RemovePodSandbox',
        'PullImage',
      ].reduce((n, m) => n + (fake.calls()[m] ?? 0), 0);
    const before = writes();
    const agent = new AgentClient(join(dirs.dir, 'root'));

    const steady = await agent.plan([given('busybox:1.36')], false);
    assert.equal(steady.runtimeEndpoint, client.endpoint);
    assert.deepEqual(
      steady.plan.pods.map((p) => [p.name, p.uid, p.inDesiredState]),
      [['web', kept.metadata!.uid, true]],
    );
    assert.equal(steady.plan.changes, false);

    const edited = await agent.plan([given('busybox:1.37')], false);
    assert.equal(edited.plan.changes, true);
    assert.deepEqual(
      edited.plan.pods[0]!.actions.map((a) => a.action),
      ['KillContainer', 'PullImage', 'StartContainer'],
    );
    // What the CLI computes itself when no agent answers: the same plan.
    const direct = await planPods(
      { runtime: client, images: client, statusReader: new PodStatusReader({ runtime: client, clock }) },
      withKeptUIDs([given('busybox:1.37')], node.pods()),
      { now: clock.now() },
    );
    assert.deepEqual(edited.plan, direct);

    await assert.rejects(
      agent.plan([{ metadata: { name: 'x' } } as IPod], false),
      (err: AgentRequestError) => err.status === 400 && /metadata\.uid/.test(err.message),
    );
    assert.equal(writes(), before, 'planning wrote nothing to the runtime');
  });

  test('POST /v1/plan validates its pods as apply does: 400 naming the field, and no CRI call', async () => {
    await startNode(true);
    const agent = new AgentClient(join(dirs.dir, 'root'));
    const pod = parseManifestText(podText('web', ['sleep', '3600']), { kind: 'file', path: '/elsewhere/web.yaml' }, { nodeName: 'unit' })
      .pods[0]!.pod;
    const withContainers = (containers: unknown) => ({ ...pod, spec: { ...pod.spec, containers } }) as IPod;
    // What a plan asks the runtime of its pods (the node's own relists list, and it keeps no pod here).
    const planCalls = () => ['ImageStatus', 'PodSandboxStatus', 'ContainerStatus'].reduce((n, m) => n + (fake.calls()[m] ?? 0), 0);
    const before = planCalls();
    const refusal = (body: IPod[]) =>
      agent.plan(body, false).then(
        () => assert.fail('planned'),
        (err: unknown) => err as AgentRequestError,
      );
    const nullContainer = await refusal([withContainers([null])]);
    assert.equal(nullContainer.status, 400);
    assert.match(nullContainer.message, /^pods\[0\]\.spec\.containers\[0\]: expected a mapping/);
    const empty = await refusal([pod, withContainers([{}])]);
    assert.equal(empty.status, 400);
    assert.match(empty.message, /pods\[1\]\.spec\.containers\[0\]\.name: required/);
    assert.match(empty.message, /pods\[1\]\.spec\.containers\[0\]\.image: required/);
    assert.doesNotMatch(empty.message, /pods\[0\]/, 'the valid pod is not named');
    const notAPod = await refusal([null as unknown as IPod]);
    assert.match(notAPod.message, /^pods\[0\]: expected a v1 Pod \(a mapping\), got null/);
    assert.equal(planCalls(), before, 'no CRI call for a refused plan');
    // The same pod, valid, is planned.
    assert.equal((await agent.plan([pod], false)).plan.pods[0]!.name, 'web');
  });

  /** Manifest files in a directory of their own; their paths as a user names them. */
  function manifestFiles(files: Record<string, string>): (name: string) => string {
    const dir = join(dirs.dir, 'manifests');
    mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return (name) => join(dir, name);
  }
  /** What loading the paths here, as a command does without an agent, rejects with. */
  const loadError = (paths: string[]) =>
    loadManifests(paths, { nodeName: 'unit' }).then(
      () => assert.fail('loaded'),
      (err: unknown) => err as ManifestError,
    );

  test(
    'POST /v1/manifests/plan: the agent reads the manifests as the command would (same pods, UIDs, warnings and problems) and ' +
      'plans them',
    async () => {
      await startNode(true);
      const path = manifestFiles({
        'web.yaml': `${podText('web', ['sleep', '3600'])}  schedulerName: other\n`,
        'bad.yaml': `${podText('bad', ['sleep', '1']).replace('image: busybox:1.36', 'image: ""')}---\nkind: Pod\n`,
        'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n',
      });
      const agent = new AgentClient(join(dirs.dir, 'root'));
      const ask = async (paths: string[]) =>
        agent.planManifests({ manifests: await readManifests(paths, {}), nodeName: 'unit', prune: false });

      const answer = (await ask([path('web.yaml')]))!;
      const set = await loadManifests([path('web.yaml')], { nodeName: 'unit' });
      assert.deepEqual(answer.warnings, set.warnings);
      assert.ok(
        answer.warnings.some((w) => w.field === 'spec.schedulerName'),
        'a warning comes back',
      );
      assert.equal(answer.pods, 1);
      const direct = await planPods(
        { runtime: client, images: client, statusReader: new PodStatusReader({ runtime: client, clock }) },
        set.pods.map((p) => p.pod),
        { now: clock.now() },
      );
      assert.deepEqual(answer.plan, direct);
      assert.equal(answer.plan.pods[0]!.uid, set.pods[0]!.pod.metadata!.uid, 'the UID of the file as the command would give it');

      // Problems, a missing file among them: the command's own ManifestError, message, hint and exit code alike.
      const paths = [path('bad.yaml'), join(dirs.dir, 'manifests', 'missing.yaml'), path('web.yaml')];
      const refused = await ask(paths).then(
        () => assert.fail('planned'),
        (err: unknown) => manifestRefusal(err, paths),
      );
      const own = await loadError(paths);
      assert.ok(refused instanceof ManifestError);
      assert.equal(refused.describe(), own.describe());
      // (Over JSON: a field left undefined is not there.)
      assert.deepEqual(
        [refused.problems, refused.warnings, refused.exitCode],
        JSON.parse(JSON.stringify([own.problems, own.warnings, own.exitCode])),
      );

      assert.equal((await ask([path('cm.yaml')]))!.pods, 0, 'no pod: the command says so');
      await assert.rejects(
        agent.planManifests({ manifests: { entries: [{ text: 1 }] }, nodeName: 'unit', prune: false } as never),
        (err: AgentRequestError) => err.status === 400,
      );
    },
  );

  test("POST /v1/manifests/apply: the agent admits the pods with the command's settings (403 naming each pod rejected, nothing handed over), else keeps them", async () => {
    const node = await startNode(true);
    const path = manifestFiles({
      'priv.yaml': podText('priv', ['sleep', '3600']).replace('command:', 'securityContext: {privileged: true}, command:'),
      'web.yaml': podText('web', ['sleep', '3600']),
      'bad.yaml': podText('bad', ['sleep', '1']).replace('image: busybox:1.36', 'image: ""'),
    });
    const agent = new AgentClient(join(dirs.dir, 'root'));
    const roomy: NodeInfo = {
      name: 'unit',
      labels: {},
      allocatable: { cpu: 4000, memory: 8 << 30, 'ephemeral-storage': 100 << 30, pods: 110 },
    };
    const apply = async (paths: string[], allowPrivileged: boolean, node: NodeInfo = roomy) =>
      agent.applyManifests({ manifests: await readManifests(paths, {}), nodeName: 'unit', admission: { allowPrivileged, node } });
    const applied = () => readdirSync(appliedDir(join(dirs.dir, 'root')));

    await assert.rejects(apply([path('priv.yaml'), path('web.yaml')], false), (err: AgentRequestError) => {
      assert.equal(err.status, 403);
      assert.equal(err.message, '1 pod(s) rejected at admission; nothing was handed to the agent');
      assert.deepEqual(err.details.rejected, [
        {
          pod: 'default/priv',
          reason: 'Forbidden',
          message: 'container app is privileged; pass --allow-privileged to run privileged containers',
        },
      ]);
      return true;
    });
    const full: NodeInfo = { ...roomy, allocatable: { ...roomy.allocatable, pods: 0 } };
    await assert.rejects(
      apply([path('web.yaml')], false, full),
      (err: AgentRequestError) =>
        err.status === 403 && /OutOfpods/.test(String((err.details.rejected as { message: string }[])[0]!.message)),
    );
    const bad = [path('bad.yaml')];
    const refused = await apply(bad, false).then(
      () => assert.fail('applied'),
      (err: unknown) => manifestRefusal(err, bad),
    );
    assert.equal((refused as ManifestError).describe(), (await loadError(bad)).describe());
    assert.deepEqual(applied(), [], 'nothing refused was handed over');

    const answer = (await apply([path('priv.yaml'), path('web.yaml')], true))!;
    assert.deepEqual(
      answer.pods.map((p) => p.name),
      ['priv', 'web'],
    );
    assert.deepEqual(answer.warnings, []);
    assert.deepEqual(applied(), ['default_priv.yaml', 'default_web.yaml']);
    assert.match(
      readFileSync(join(appliedDir(join(dirs.dir, 'root')), 'default_web.yaml'), 'utf8'),
      new RegExp(`handed to the podctl agent from ${path('web.yaml')}`),
    );
    await until(clock, 'web running', () => running(node, 'web'));
  });

  test('POST /v1/manifests/apply parses each text handed over once; the applied file it writes is read back', async () => {
    await startNode(true);
    const path = manifestFiles({ 'once.yaml': podText('once', ['sleep', '3600']) });
    const text = readFileSync(path('once.yaml'), 'utf8');
    const agent = new AgentClient(join(dirs.dir, 'root'));
    const node: NodeInfo = {
      name: 'unit',
      labels: {},
      allocatable: { cpu: 4000, memory: 8 << 30, 'ephemeral-storage': 100 << 30, pods: 110 },
    };
    const manifests = await readManifests([path('once.yaml')], {});
    const loads: string[] = [];
    const loadAll = yaml.loadAll;
    yaml.loadAll = ((input: string, ...rest: unknown[]) => (
      loads.push(input),
      (loadAll as (...a: unknown[]) => unknown)(input, ...rest)
    )) as typeof yaml.loadAll;
    try {
      const answer = await agent.applyManifests({ manifests, nodeName: 'unit', admission: { allowPrivileged: false, node } });
      assert.deepEqual(
        answer?.pods.map((p) => p.name),
        ['once'],
      );
    } finally {
      yaml.loadAll = loadAll;
    }
    assert.equal(loads.filter((t) => t === text).length, 1);
    assert.equal(loads.filter((t) => t.startsWith('# handed to the podctl agent from ')).length, 1);
  });

  test(
    'POST /v1/manifests/*: an agent without the routes (an older one) is no answer, and the command reads the ' + 'manifests itself',
    async () => {
      const socket = join(dirs.dir, 'older.sock');
      const server = await startStatusServer(socket, { pods: () => [], health: () => ({ ok: true, checks: [] }), metrics: new Metrics() });
      try {
        const agent = Object.assign(new AgentClient(dirs.dir), { socket });
        const manifests = await readManifests([], {});
        assert.equal(await agent.planManifests({ manifests, nodeName: 'unit', prune: false }), undefined);
        assert.equal(
          await agent.applyManifests({
            manifests,
            nodeName: 'unit',
            admission: {
              allowPrivileged: false,
              node: { name: 'unit', labels: {}, allocatable: { cpu: 1, memory: 1, 'ephemeral-storage': 1, pods: 1 } },
            },
          }),
          undefined,
        );
      } finally {
        server.close();
      }
    },
  );

  test('POST /v1/pods: an invalid manifest is a 400 naming the field, and nothing is handed over', async () => {
    const node = await startNode(true);
    const bad = podText('bad', ['sleep', '1']).replace('image: busybox:1.36', 'image: ""');
    const r = await post(node.socket, '/v1/pods', bad);
    assert.equal(r.status, 400, r.body);
    assert.match(JSON.parse(r.body).message, /spec\.containers\[0\]\.image/);
    assert.deepEqual(readdirSync(appliedDir(join(dirs.dir, 'root'))), []);
    const ok = await post(node.socket, '/v1/pods', podText('good', ['sleep', '1']));
    assert.equal(ok.status, 200, ok.body);
    assert.deepEqual(
      JSON.parse(ok.body).pods.map((p: { name: string }) => p.name),
      ['good'],
    );
  });
});

test("podProgress: a pod that cannot start fails at once naming the reason; an older generation's status counts for nothing", () => {
  const ref = { namespace: 'default', name: 'web', uid: 'u1', generation: 2 };
  const pod = (observedGeneration: number, state: object, conditions: { type: string; status: string }[] = []): IPod =>
    ({
      metadata: { name: 'web', namespace: 'default', uid: 'u1' },
      spec: { containers: [{ name: 'app', image: 'busybox:0.0-missing' }] },
      // The phase as the kubelet computes it: Running once the container runs.
      status: {
        phase: 'running' in state ? 'Running' : 'Pending',
        observedGeneration,
        conditions,
        containerStatuses: [{ name: 'app', image: 'x', imageID: '', ready: false, restartCount: 0, state }],
      },
    }) as unknown as IPod;
  const pull = { waiting: { reason: 'ErrImagePull', message: 'busybox:0.0-missing: not found' } };
  assert.equal(podProgress(ref, pod(1, pull), 'running'), undefined, 'the previous version');
  const failed = podProgress(ref, pod(2, pull), 'running')!;
  assert.equal(failed.ok, false);
  assert.equal(failed.reason, 'ErrImagePull');
  assert.match(failed.message!, /app: ErrImagePull: busybox:0\.0-missing: not found/);
  assert.equal(
    podProgress(ref, pod(2, { waiting: { reason: 'CreateContainerConfigError' } }), 'running')?.reason,
    'CreateContainerConfigError',
  );
  const running = { running: { startedAt: '2026-01-01T00:00:00Z' } };
  assert.equal(podProgress(ref, pod(2, running), 'running')?.ok, true);
  assert.equal(podProgress(ref, pod(2, running), 'ready'), undefined, 'running is not ready');
  assert.equal(podProgress(ref, pod(2, running, [{ type: 'Ready', status: 'True' }]), 'ready')?.ok, true);
});
