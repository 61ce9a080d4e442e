import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { status as Code } from '@grpc/grpc-js';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet, createPleg } from '../../src/core/node/compose.js';
import { SyncLoop } from '../../src/core/loop.js';
import { Metrics } from '../../src/core/metrics.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { startStatusServer } from '../../src/core/api/server.js';
import { DEFAULT_ROOT_DIR, watchAgent } from '../../src/cli/node.js';
import { scratchDir } from '../support/e2e.js';
import { getUnix as get } from '../support/http.js';

function pod(name: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;
  return parseManifestText(text, { kind: 'file', path: `/loop/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
}

/** Lets gRPC round trips finish between clock moves. */
async function settle(clock: FakeClock, ms: number, steps = 10): Promise<void> {
  for (let i = 0; i < steps; i++) {
    await new Promise((r) => setTimeout(r, 5));
    clock.advance(ms / steps);
  }
  await new Promise((r) => setTimeout(r, 20));
}

describe('syncLoop on the fake runtime', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  const logs = scratchDir('loop-logs');
  before(async () => {
    fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  });
  after(async () => {
    client.close();
    await fake.stop();
    logs.cleanup();
  });

  test("housekeeping removes pods of its own agent that no source wants, never a run's pods", async () => {
    const clock = new FakeClock();
    const run = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'run' });
    const watch = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'watch' });
    await run.syncPod(pod('from-run'), 'create');
    await watch.syncPod(pod('stale-watch'), 'create');
    await watch.syncPod(pod('wanted'), 'create');
    watch.addOrUpdatePod(pod('wanted'));
    await watch.workers.waitIdle();
    const r = await watch.housekeeping();
    assert.deepEqual(r.removedPods, ['default/stale-watch']);
    assert.deepEqual(
      fake
        .sandboxes()
        .map((s) => s.metadata.name)
        .sort(),
      ['from-run', 'wanted'],
    );
    for (const k of [run, watch])
      for (const name of ['from-run', 'wanted']) {
        await k.syncTerminatingPod(pod(name), 0);
        await k.syncTerminatedPod(pod(name));
      }
    assert.equal(fake.sandboxes().length, 0);
  });

  test("two watches on different root dirs: neither takes the other's pods for orphans", async () => {
    const clock = new FakeClock();
    assert.equal(watchAgent(DEFAULT_ROOT_DIR), 'watch');
    assert.equal(watchAgent(`${DEFAULT_ROOT_DIR}/`), 'watch', 'the same directory spelled differently');
    assert.notEqual(watchAgent('/srv/a'), watchAgent('/srv/b'));
    assert.match(watchAgent('/srv/a'), /^watch-[0-9a-f]{10}$/, 'a valid label value');
    const a = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: logs.dir,
      nodeName: 'unit',
      agent: watchAgent('/srv/a'),
      removeOrphans: true,
    });
    const b = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: logs.dir,
      nodeName: 'unit',
      agent: watchAgent('/srv/b'),
      removeOrphans: true,
    });
    a.addOrUpdatePod(pod('of-a'));
    b.addOrUpdatePod(pod('of-b'));
    await a.workers.waitIdle();
    await b.workers.waitIdle();
    assert.deepEqual((await a.housekeeping()).removedPods, []);
    assert.deepEqual((await b.housekeeping()).removedPods, []);
    assert.deepEqual(
      fake
        .sandboxes()
        .map((s) => s.metadata.name)
        .sort(),
      ['of-a', 'of-b'],
    );
    // A pod of its own that no source wants is still an orphan to each.
    await b.syncPod(pod('stale-b'), 'create');
    assert.deepEqual((await b.housekeeping()).removedPods, ['default/stale-b']);
    assert.deepEqual(
      fake
        .sandboxes()
        .map((s) => s.metadata.name)
        .sort(),
      ['of-a', 'of-b'],
    );
    for (const [k, name] of [
      [a, 'of-a'],
      [b, 'of-b'],
    ] as const) {
      await k.syncTerminatingPod(pod(name), 0);
      await k.syncTerminatedPod(pod(name));
    }
    assert.equal(fake.sandboxes().length, 0);
  });

  test('an orphan the runtime will not remove does not stop the others, and is retried with backoff', async () => {
    const clock = new FakeClock();
    const watch = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'watch' });
    await watch.syncPod(pod('stuck-a'), 'create');
    await watch.syncPod(pod('stuck-b'), 'create');
    // What containerd 1.6 answers for a sandbox whose netns sits under podman's shared bind mount.
    fake.failNext('RemovePodSandbox', Code.UNKNOWN, 'remove netns: unlinkat /var/run/netns/cni-x: device or resource busy');
    const first = await watch.housekeeping();
    assert.equal(first.removedPods.length, 1, 'the other orphan is removed in the same pass');
    assert.equal(first.failedPods?.length, 1);
    const failed = first.failedPods![0]!;
    assert.match(failed.error, /device or resource busy/);
    assert.equal(failed.retryInMs, 10_000);
    assert.deepEqual(
      fake.sandboxes().map((s) => `default/${s.metadata.name}`),
      [failed.pod],
    );

    const soon = await watch.housekeeping();
    assert.deepEqual([soon.removedPods, soon.failedPods], [[], undefined], 'not retried within its backoff');
    clock.advance(10_000);
    const later = await watch.housekeeping();
    assert.deepEqual(later.removedPods, [failed.pod]);
    assert.equal(fake.sandboxes().length, 0);
  });

  test('container GC keeps --maximum-dead-containers-per-container per container and --maximum-dead-containers in all', async () => {
    const clock = new FakeClock(Date.now()); // the fake runtime's exit times are real: backoff is measured from them
    const kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: logs.dir,
      nodeName: 'unit',
      agent: 'watch',
      containerGC: { maxPerPodContainer: 2, maxContainers: 3 },
    });
    const pods = [pod('gc-a'), pod('gc-b')];
    const dead = (name: string) =>
      fake
        .containers()
        .filter(
          (c) =>
            c.metadata.name === 'app' &&
            c.state === 'CONTAINER_EXITED' &&
            fake.sandboxes().find((s) => s.id === c.podSandboxId)?.metadata.name === name,
        );
    for (const p of pods) {
      kubelet.addOrUpdatePod(p);
      await kubelet.workers.waitIdle();
      // Four crashes, each restarted once its backoff has passed.
      for (let i = 0; i < 4; i++) {
        const running = fake
          .containers()
          .find(
            (c) =>
              c.state === 'CONTAINER_RUNNING' && fake.sandboxes().find((s) => s.id === c.podSandboxId)?.metadata.name === p.metadata!.name,
          )!;
        fake.exitContainer(running.id, 1);
        clock.advance(301_000);
        await kubelet.syncPod(p, 'sync');
      }
    }
    // Each start already keeps only the newest 2 dead instances of its container.
    assert.deepEqual([dead('gc-a').length, dead('gc-b').length], [2, 2]);
    const r = await kubelet.housekeeping();
    const left = [...dead('gc-a'), ...dead('gc-b')];
    assert.equal(left.length, 3, 'at most 3 dead containers in all');
    assert.ok(dead('gc-a').length <= 2 && dead('gc-b').length <= 2, 'at most 2 per container');
    assert.equal(r.removedContainers, 1);
    // The node-wide bound takes the oldest: gc-a's first dead instance.
    assert.deepEqual([dead('gc-a').length, dead('gc-b').length], [1, 2]);
    for (const p of pods) {
      await kubelet.syncTerminatingPod(p, 0);
      await kubelet.syncTerminatedPod(p);
    }
  });

  test("a run's housekeeping never removes pods another run started", async () => {
    const clock = new FakeClock();
    const detached = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'run' });
    const foreground = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'run' });
    await detached.syncPod(pod('detached'), 'create');
    foreground.addOrUpdatePod(pod('mine'));
    await foreground.workers.waitIdle();
    const r = await foreground.housekeeping();
    assert.deepEqual(r.removedPods, []);
    assert.deepEqual(
      fake
        .sandboxes()
        .map((s) => s.metadata.name)
        .sort(),
      ['detached', 'mine'],
    );
    for (const [k, name] of [
      [detached, 'detached'],
      [foreground, 'mine'],
    ] as const) {
      await k.syncTerminatingPod(pod(name), 0);
      await k.syncTerminatedPod(pod(name));
    }
    assert.equal(fake.sandboxes().length, 0);
  });

  test("the PLEG's events of another agent's pods on the same runtime reach the trace, undispatched, and nothing else", async () => {
    const clock = new FakeClock();
    const other = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'watch-other' });
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'watch-mine' });
    const theirs = pod('theirs');
    const mine = pod('mine-pleg');
    await other.syncPod(theirs, 'create');
    const told: string[] = [];
    const traced: string[] = [];
    const pleg = createPleg(kubelet);
    const loop = new SyncLoop({
      kubelet,
      pleg,
      clock,
      onPlegEvent: (e) => told.push(`${e.name} ${e.type}`),
      trace: { plegEvent: (e, dispatched) => traced.push(`${e.name} ${e.type}${dispatched ? ' dispatched' : ''}`) },
    });
    loop.start();
    loop.addPods([mine]);
    await kubelet.workers.waitIdle();
    await pleg.relist();
    const running = (name: string) =>
      fake.containers().find((c) => c.state === 'CONTAINER_RUNNING' && c.labels['io.kubernetes.pod.name'] === name)!;
    fake.exitContainer(running('theirs').id, 1);
    fake.exitContainer(running('mine-pleg').id, 1);
    told.length = 0;
    traced.length = 0;
    await pleg.relist();
    assert.deepEqual(told, ['mine-pleg ContainerDied']);
    assert.deepEqual(traced.sort(), ['mine-pleg ContainerDied dispatched', 'theirs ContainerDied']);
    await loop.stop();
    // The dispatched sync restarts mine-pleg's container: it ends before the pod is removed.
    await kubelet.workers.waitIdle();
    await kubelet.syncTerminatingPod(mine, 0);
    await kubelet.syncTerminatedPod(mine);
    await other.syncTerminatingPod(theirs, 0);
    await other.syncTerminatedPod(theirs);
  });

  test('while the runtime is down nothing is dispatched; when it recovers every pod is synced again', async () => {
    const clock = new FakeClock();
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'watch' });
    let down = false;
    const states: string[] = [];
    const loop = new SyncLoop({
      kubelet,
      pleg: createPleg(kubelet),
      clock,
      checkRuntime: async () => {
        if (down) throw new Error('runtime is down');
      },
      onRuntimeState: (up, detail) => states.push(up ? 'up' : `down: ${detail}`),
    });
    loop.start();
    const p = pod('survivor');
    loop.addPods([p]);
    await kubelet.workers.waitIdle();
    await settle(clock, 1500);
    const running = () =>
      fake.containers().filter((c) => c.state === 'CONTAINER_RUNNING' && c.labels['io.kubernetes.pod.name'] === 'survivor');
    assert.equal(running().length, 1);

    down = true;
    await settle(clock, 6000);
    assert.deepEqual(states, ['down: runtime is down']);
    fake.exitContainer(running()[0]!.id, 1);
    const starts = fake.calls().StartContainer ?? 0;
    await settle(clock, 3000);
    assert.equal(fake.calls().StartContainer ?? 0, starts, 'no restart while the runtime is reported down');
    assert.equal(loop.isRuntimeUp, false);

    down = false;
    // Eventual state: under load the relist that sees the death spans more clock moves.
    for (let i = 0; i < 150 && !(states.includes('up') && running().length === 1); i++) await settle(clock, 200, 1);
    await kubelet.workers.waitIdle();
    assert.deepEqual(states, ['down: runtime is down', 'up']);
    assert.equal(running().length, 1, 'the container was restarted after the runtime came back');
    assert.equal(fake.sandboxes().filter((s) => s.metadata.name === 'survivor').length, 1, 'no duplicate sandbox');
    await loop.stop();
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
  });

  test('stop() resolves only once a housekeeping pass under way has ended: nothing of the loop touches the runtime after', async () => {
    const clock = new FakeClock();
    const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'watch-stop' });
    let finish!: () => void;
    let started = 0;
    kubelet.housekeeping = async () => {
      started++;
      await new Promise<void>((r) => (finish = r));
      return { removedPods: [], removedContainers: 0, durationMs: 0 };
    };
    const loop = new SyncLoop({ kubelet, pleg: createPleg(kubelet, { relistPeriodMs: 1000 }), clock, housekeepingPeriodMs: 100 });
    loop.start();
    await settle(clock, 1000);
    assert.equal(started, 1, 'one housekeeping pass under way');
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(stopped, false, 'stop waits for the pass');
    finish();
    await stopping;
    assert.equal(stopped, true);
    await settle(clock, 1000);
    assert.equal(started, 1, 'no pass after stop');
  });
});

test('status server: /healthz, /pods as a v1 PodList, /metrics as Prometheus text, socket 0600', async () => {
  const dir = scratchDir('status');
  const socket = join(dir.dir, 'podctl.sock');
  const metrics = new Metrics();
  metrics.observeCall({ method: 'ListContainers', durationMs: 3 });
  metrics.observeCall({ method: 'StartContainer', durationMs: 80, error: new Error('x') });
  let healthy = true;
  const server = await startStatusServer(socket, {
    pods: () => [{ ...pod('web'), status: { phase: 'Running' } }],
    health: () => ({ ok: healthy, checks: [{ name: 'pleg', ok: healthy, message: 'PLEG is not healthy: last relist 200 s ago' }] }),
    metrics,
  });
  try {
    assert.equal(statSync(socket).mode & 0o777, 0o600);
    assert.deepEqual(await get(socket, '/healthz'), { status: 200, body: '[+]pleg ok\nhealthz check passed\n' });
    healthy = false;
    const bad = await get(socket, '/healthz');
    assert.equal(bad.status, 500);
    assert.match(bad.body, /\[-\]pleg failed: PLEG is not healthy/);
    const list = JSON.parse((await get(socket, '/pods')).body);
    assert.equal(list.kind, 'PodList');
    assert.equal(list.items[0].metadata.name, 'web');
    assert.equal(list.items[0].status.phase, 'Running');
    const text = (await get(socket, '/metrics')).body;
    assert.match(text, /^podctl_runtime_operations_total\{operation_type="ListContainers"\} 1$/m);
    assert.match(text, /^podctl_runtime_operations_errors_total\{operation_type="StartContainer"\} 1$/m);
    // Every sample line parses as name{labels} value.
    for (const line of text.split('\n').filter((l) => l && !l.startsWith('#')))
      assert.match(line, /^[a-zA-Z_:][\w:]*(\{[^}]*\})? -?[\d.e+-]+|NaN|[+-]Inf$/);
    assert.equal((await get(socket, '/nope')).status, 404);
  } finally {
    server.close();
    dir.cleanup();
  }
});

test("a container's last termination is kept on disk: Last State survives container GC and a new agent", async () => {
  const fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  const dirs = scratchDir('unit-termination-records');
  try {
    const clock = new FakeClock(Date.now());
    const opts = {
      runtime: client,
      images: client,
      clock,
      logRoot: join(dirs.dir, 'logs'),
      rootDir: join(dirs.dir, 'root'),
      nodeName: 'unit',
      containerGC: { maxPerPodContainer: 0 },
    };
    const first = newKubelet(opts);
    const p = pod('recorded');
    first.addOrUpdatePod(p);
    await first.workers.waitIdle();
    const c = fake.containers().find((x) => x.state === 'CONTAINER_RUNNING')!;
    fake.exitContainer(c.id, 7, { message: 'bye' });
    await first.syncPod(p, 'sync'); // restarted at once; GC keeps no dead instance
    await first.housekeeping();
    assert.equal(fake.containers().filter((x) => x.state === 'CONTAINER_EXITED').length, 0, 'the dead instance is gone');
    const last = first.statusManager.get(p.metadata!.uid!)!.containerStatuses![0]!.lastState?.terminated;
    assert.equal(last?.exitCode, 7);
    assert.ok(last?.containerID?.endsWith(`://${c.id}`), 'the record names the instance that exited');

    const second = newKubelet(opts);
    second.addOrUpdatePod(p);
    await second.workers.waitIdle();
    const again = second.statusManager.get(p.metadata!.uid!)!.containerStatuses![0]!;
    assert.equal(again.restartCount, 1);
    assert.equal(again.lastState?.terminated?.exitCode, 7, 'a new agent shows the Last State from the record');
    assert.equal(again.lastState?.terminated?.message, 'bye');
    await second.syncTerminatingPod(p, 0);
    await second.syncTerminatedPod(p);
  } finally {
    client.close();
    await fake.stop();
    dirs.cleanup();
  }
});
