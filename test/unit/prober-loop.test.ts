import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import type { IContainerStatus, IPod, IPodStatus } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import { newKubelet, createPleg } from '../../src/core/node/compose.js';
import { SyncLoop } from '../../src/core/loop.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';

function pod(name: string, containerYaml: string, extra = ''): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 30\n${extra}  containers:\n${containerYaml}`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/probe/${name}.yaml` }, { nodeName: 'unit' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

describe('probes, hooks and termination through the sync loop (fake runtime, injected clock)', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let clock: FakeClock;
  let kubelet: Kubelet;
  let loop: SyncLoop;
  const dirs = scratchDir('prober-loop');
  /** Every ExecSync the runtime saw: container name and command. */
  let execs: { name: string; cmd: string; stopsBefore: number }[];
  let answers: Map<string, number>;

  before(async () => {
    // One clock for the runtime and the loop: start times and probe periods agree.
    clock = new FakeClock();
    fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
  });
  after(async () => {
    client.close();
    await fake.stop();
    dirs.cleanup();
  });
  beforeEach(() => {
    execs = [];
    answers = new Map();
    fake.setExecHandler(({ containerName, cmd }) => {
      const key = cmd.join(' ');
      execs.push({ name: containerName, cmd: key, stopsBefore: fake.calls().StopContainer ?? 0 });
      const code = answers.get(key);
      return code === undefined ? undefined : { exitCode: code, stdout: code ? `${key}: failed\n` : '' };
    });
    kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: `${dirs.dir}/logs`,
      rootDir: `${dirs.dir}/root`,
      nodeName: 'unit',
      agent: 'prober-unit',
    });
    loop = new SyncLoop({ kubelet, pleg: createPleg(kubelet, { relistPeriodMs: 1000 }), clock, housekeepingPeriodMs: 3_600_000 });
    loop.start();
  });
  afterEach(async () => {
    const uids = [...kubelet.pods.keys()];
    loop.removePods(uids);
    await until(() => kubelet.pods.size === 0, 'pods removed');
    await loop.stop();
    await kubelet.workers.waitIdle();
    fake.setExecHandler(undefined);
  });

  /**
   * Moves the injected clock in small steps, letting gRPC round trips finish, until cond holds; gives up
   * after 30 s of real time (a loaded machine needs more steps for the same round trips, so no step count).
   * Moving the clock further cannot change what the tests assert: cond is checked before every move, the
   * containers (sleep 3600) never exit on the fake clock, and a probe worker only probes an instance once
   * the status shows it, which is when the conditions on restarts hold.
   */
  async function until(cond: () => boolean, what: string, stepMs = 100): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      clock.advance(stepMs);
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  const status = (p: IPod): IPodStatus | undefined => kubelet.statusManager.get(p.metadata!.uid!);
  const app = (p: IPod, name = 'app'): IContainerStatus | undefined => status(p)?.containerStatuses?.find((c) => c.name === name);
  const condition = (p: IPod, type: string) => status(p)?.conditions?.find((c) => c.type === type)?.status;
  const events = (p: IPod) => kubelet.events.eventsFor(p.metadata!.uid!);

  test(
    'liveness: failureThreshold consecutive failures kill and restart the container, with the kubelet events and ' + 'last state',
    async () => {
      const p = pod(
        'live',
        '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    livenessProbe: {exec: {command: [cat, /tmp/healthy]}, periodSeconds: 2, failureThreshold: 3}\n',
      );
      loop.addPods([p]);
      await until(() => app(p)?.state?.running !== undefined, 'app running');
      const firstId = app(p)!.containerID;
      await until(() => execs.length >= 2, 'two passing probes');
      assert.equal(app(p)!.restartCount, 0);
      answers.set('cat /tmp/healthy', 1);
      const failedAt = execs.length;
      await until(() => app(p)?.restartCount === 1 && app(p)?.state?.running !== undefined, 'the liveness restart');
      const failing = execs.slice(failedAt).filter((e) => e.stopsBefore === execs[failedAt]!.stopsBefore);
      assert.equal(failing.length, 3, 'killed after exactly failureThreshold failures, and not probed while dying');
      assert.notEqual(app(p)!.containerID, firstId);
      const last = app(p)!.lastState?.terminated;
      assert.ok(last, 'the killed instance is the last state');
      assert.equal(last.message, 'Container app failed liveness probe, will be restarted');
      const unhealthy = events(p).find((e) => e.reason === 'Unhealthy');
      assert.equal(unhealthy?.message, 'Liveness probe failed: cat /tmp/healthy: failed');
      assert.equal(unhealthy?.count, 3);
      assert.ok(events(p).some((e) => e.reason === 'Killing' && e.message === 'Container app failed liveness probe, will be restarted'));
      // The new instance starts live and is probed again.
      answers.delete('cat /tmp/healthy');
      const before = execs.length;
      await until(() => execs.length > before + 1, 'probes of the new instance');
      assert.equal(app(p)!.restartCount, 1);
    },
  );

  test('readiness: Ready only once the probe passes, False again when it fails, never a restart', async () => {
    const p = pod(
      'ready',
      '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    readinessProbe: {exec: {command: [test, -f, /ready]}, periodSeconds: 1, failureThreshold: 2}\n',
    );
    answers.set('test -f /ready', 1);
    loop.addPods([p]);
    await until(() => app(p)?.state?.running !== undefined, 'app running');
    await until(() => execs.length >= 3, 'three failing readiness probes');
    assert.equal(app(p)!.ready, false);
    assert.equal(condition(p, 'Ready'), 'False');
    assert.equal(condition(p, 'ContainersReady'), 'False');
    assert.equal(status(p)!.phase, 'Running');
    answers.set('test -f /ready', 0);
    await until(() => app(p)?.ready === true, 'ready');
    assert.equal(condition(p, 'Ready'), 'True');
    const id = app(p)!.containerID;
    answers.set('test -f /ready', 1);
    await until(() => app(p)?.ready === false, 'unready again');
    assert.equal(condition(p, 'Ready'), 'False');
    assert.equal(app(p)!.containerID, id, 'readiness never restarts');
    assert.equal(app(p)!.restartCount, 0);
    assert.ok(events(p).some((e) => e.reason === 'Unhealthy' && e.message.startsWith('Readiness probe failed:')));
  });

  test('startup: liveness does not run before startup succeeds; a startup failure restarts the container', async () => {
    const p = pod(
      'startup',
      '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    startupProbe: {exec: {command: [started]}, periodSeconds: 1, failureThreshold: 3}\n    livenessProbe: {exec: {command: [alive]}, periodSeconds: 1}\n',
    );
    answers.set('started', 1);
    loop.addPods([p]);
    await until(() => app(p)?.restartCount === 1, 'the startup restart');
    assert.equal(execs.filter((e) => e.cmd === 'alive').length, 0, 'liveness never ran before startup succeeded');
    assert.equal(app(p)!.started, false);
    assert.equal(app(p)!.lastState?.terminated?.message, 'Container app failed startup probe, will be restarted');
    answers.set('started', 0);
    await until(() => app(p)?.started === true, 'started');
    await until(() => execs.some((e) => e.cmd === 'alive'), 'liveness after startup');
    const startupRunsAfter = execs.filter((e) => e.cmd === 'started').length;
    await until(() => execs.filter((e) => e.cmd === 'alive').length >= 3, 'more liveness probes');
    assert.equal(execs.filter((e) => e.cmd === 'started').length, startupRunsAfter, 'no startup probe once started');
  });

  test('postStart runs after the start; when it fails the container is killed with FailedPostStartHook and waits to restart', async () => {
    const good = pod(
      'hook-ok',
      '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    lifecycle: {postStart: {exec: {command: [touch, /started]}}}\n',
    );
    loop.addPods([good]);
    await until(() => app(good)?.state?.running !== undefined, 'running');
    assert.deepEqual(
      execs.map((e) => e.cmd),
      ['touch /started'],
    );

    const bad = pod(
      'hook-bad',
      '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    lifecycle: {postStart: {exec: {command: [boom]}}}\n',
    );
    answers.set('boom', 7);
    loop.addPods([bad]);
    await until(() => events(bad).some((e) => e.reason === 'FailedPostStartHook'), 'the hook failure');
    const ev = events(bad).find((e) => e.reason === 'FailedPostStartHook')!;
    assert.match(
      ev.message,
      /^Exec lifecycle hook \(\["boom"\]\) for Container "app" in Pod "hook-bad_default\(.+\)" failed - error: boom: failed$/,
    );
    await until(() => app(bad)?.state?.waiting?.reason === 'PostStartHookError', 'waiting with PostStartHookError');
    assert.equal(app(bad)!.lastState?.terminated?.message, ev.message);
    await until(() => (app(bad)?.restartCount ?? 0) >= 1, 'a restart attempt');
  });

  test('preStop runs before the container is stopped, on removal', async () => {
    const p = pod(
      'stop',
      '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    lifecycle: {preStop: {exec: {command: [drain]}}}\n',
    );
    loop.addPods([p]);
    await until(() => app(p)?.state?.running !== undefined, 'running');
    const stopsBefore = fake.calls().StopContainer ?? 0;
    loop.removePods([p.metadata!.uid!]);
    await until(() => kubelet.pods.size === 0, 'removed');
    const drain = execs.find((e) => e.cmd === 'drain');
    assert.ok(drain, 'preStop ran');
    assert.equal(drain.stopsBefore, stopsBefore, 'before any StopContainer');
    assert.ok((fake.calls().StopContainer ?? 0) > stopsBefore);
  });

  test(
    'terminationMessagePath: what the container wrote there is the terminated message; FallbackToLogsOnError uses ' + 'the log tail',
    async () => {
      const file = pod('msg-file', '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n', '  restartPolicy: Never\n');
      const logs = pod(
        'msg-logs',
        '  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    terminationMessagePolicy: FallbackToLogsOnError\n',
        '  restartPolicy: Never\n',
      );
      loop.addPods([file, logs]);
      await until(() => app(file)?.state?.running !== undefined && app(logs)?.state?.running !== undefined, 'both running');
      const byPod = (name: string) => fake.containers().find((c) => c.labels['io.kubernetes.pod.name'] === name)!;
      const mount = byPod('msg-file').mounts.find((m) => m.containerPath === '/dev/termination-log');
      assert.ok(mount, 'a host file is mounted at terminationMessagePath');
      assert.equal(statSync(`${dirs.dir}/root`).mode & 0o777, 0o700, 'the state dir is private to its user');
      assert.equal(statSync(`${dirs.dir}/root/pods/${file.metadata!.uid}`).mode & 0o777, 0o750);
      writeFileSync(mount.hostPath!, 'bye: disk full');
      fake.exitContainer(byPod('msg-file').id, 3);
      fake.exitContainer(byPod('msg-logs').id, 1);
      await until(() => app(file)?.state?.terminated !== undefined && app(logs)?.state?.terminated !== undefined, 'both terminated');
      assert.equal(app(file)!.state!.terminated!.message, 'bye: disk full');
      assert.equal(app(logs)!.state!.terminated!.message, 'started', 'the fake writes one log line, "started"');
    },
  );
});
