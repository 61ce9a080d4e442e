import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { displayStatus } from '../../src/cli/render.js';
import type { CriClient, RuntimeService } from '../../src/core/cri/client.js';
import type * as T from '../../src/core/cri/types.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import type { SyncLoop } from '../../src/core/loop.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { runtimeId } from '../../src/core/prober/index.js';
import {
  containerLogLines,
  E2E_NAMESPACE,
  recordStatuses,
  logFileLines,
  scratchDir,
  startE2ENode,
  waitForStatus,
  type E2ENode,
} from '../support/e2e.js';

let client: CriClient;
let kubelet: Kubelet;
let loop: SyncLoop;
const dirs = scratchDir('e2e-probes');
const logRoot = `${dirs.dir}/logs`;

/** What the kubelet asked of the runtime when stopping and removing containers, observed on the real calls. */
const stops: { id: string; timeout: number; at: number }[] = [];
const removed = new Map<string, T.ContainerStatus | undefined>();
/** Each removed container's log, as it was just before the removal (the pod's log directory goes with the pod). */
const logsAtRemoval = new Map<string, string[]>();

/** The real client, with StopContainer and RemoveContainer observed (the end state of a removed container stays readable). */
function observed(c: CriClient): RuntimeService {
  return new Proxy(c, {
    get(target, prop, receiver) {
      if (prop === 'stopContainer') {
        return async (id: string, timeout: number) => {
          stops.push({ id, timeout, at: Date.now() });
          return target.stopContainer(id, timeout);
        };
      }
      if (prop === 'removeContainer') {
        return async (id: string) => {
          const status = (await target.containerStatus(id).catch(() => undefined))?.status ?? undefined;
          removed.set(id, status);
          if (status?.logPath) logsAtRemoval.set(id, logFileLines(status.logPath));
          return target.removeContainer(id);
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function pod(name: string, spec: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n${spec}`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/e2e/${name}.yaml` }, { nodeName: 'e2e' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

const waitFor = (p: IPod, cond: (s: IPodStatus) => boolean, timeoutMs = 30_000) => waitForStatus(kubelet, p, cond, timeoutMs);
const cs = (s: IPodStatus, name = 'app') =>
  [...(s.containerStatuses ?? []), ...(s.initContainerStatuses ?? [])].find((c) => c.name === name)!;
const ready = (s: IPodStatus, type = 'Ready') => s.conditions?.find((c) => c.type === type)?.status;

let node: E2ENode;
const remove = (...pods: IPod[]) => node.remove(...pods);

before(async () => {
  node = await startE2ENode({ logRoot, rootDir: `${dirs.dir}/root`, agent: 'e2e-probes' }, observed);
  ({ client, kubelet, loop } = node);
});

after(async () => {
  await node.stop();
  dirs.cleanup();
});

test(
  'liveness (exec): once the container marks itself dead the probe fails failureThreshold times, then the container is ' + 'restarted',
  async () => {
    // Healthy until the first instance marks itself dead after 3 s; the instance after the restart
    // finds the emptyDir's marker and stays healthy: exactly three failed probes, however the probes
    // and this test are scheduled.
    const p = pod(
      'liveness-exec',
      `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "if [ -f /data/ran ]; then exec sleep 3600; fi; touch /data/ran; sleep 3; touch /tmp/dead; sleep 3600"]
    livenessProbe: {exec: {command: [sh, -c, "if [ -f /tmp/dead ]; then echo dead; exit 1; fi"]}, periodSeconds: 1, failureThreshold: 3}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
`,
    );
    loop.addPods([p]);
    const first = await waitFor(p, (s) => cs(s).state?.running !== undefined);
    const restarted = await waitFor(p, (s) => cs(s).restartCount === 1 && cs(s).state?.running !== undefined, 40_000);
    assert.notEqual(cs(restarted).containerID, cs(first).containerID);
    const last = cs(restarted).lastState?.terminated;
    assert.ok(last, 'the killed instance is the last state');
    assert.equal(last.message, 'Container app failed liveness probe, will be restarted');
    const events = kubelet.events.eventsFor(p.metadata!.uid!);
    const unhealthy = events.find((e) => e.reason === 'Unhealthy');
    assert.match(unhealthy?.message ?? '', /^Liveness probe failed: dead/);
    assert.equal(unhealthy?.count, 3, 'killed after exactly failureThreshold failed probes');
    assert.ok(events.some((e) => e.reason === 'Killing' && e.message === 'Container app failed liveness probe, will be restarted'));
    // Killed from outside with the pod's grace period, after which the runtime's SIGKILL ends a shell that ignores SIGTERM.
    const stop = stops.find((s) => `containerd://${s.id}` === cs(first).containerID);
    assert.equal(stop?.timeout, 2);
    await remove(p);
  },
);

test('readiness (httpGet): Ready only once busybox httpd answers, False again when it stops, without a restart', async () => {
  const p = pod(
    'readiness-http',
    `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "sleep 2; mkdir -p /www; echo ok > /www/index.html; httpd -f -p 8080 -h /www & h=$!; sleep 6; kill $h; sleep 3600"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {httpGet: {path: /index.html, port: http}, periodSeconds: 1, failureThreshold: 1}
`,
  );
  loop.addPods([p]);
  const notYet = await waitFor(p, (s) => cs(s).state?.running !== undefined);
  assert.equal(cs(notYet).ready, false, 'running is not ready before the server answers');
  assert.equal(ready(notYet), 'False');
  const up = await waitFor(p, (s) => cs(s).ready === true);
  assert.equal(ready(up), 'True');
  assert.equal(ready(up, 'ContainersReady'), 'True');
  const down = await waitFor(p, (s) => cs(s).ready === false);
  assert.equal(ready(down), 'False');
  assert.equal(cs(down).restartCount, 0);
  assert.equal(cs(down).containerID, cs(up).containerID, 'readiness never restarts a container');
  assert.ok(
    kubelet.events
      .eventsFor(p.metadata!.uid!)
      .some((e) => e.reason === 'Unhealthy' && /^Readiness probe failed: Get "http:\/\/[\d.]+:8080\/index.html"/.test(e.message)),
  );
  await remove(p);
});

test('tcpSocket readiness turns ready when the port listens; a failing startup probe restarts; liveness waits for startup', async () => {
  const tcp = pod(
    'readiness-tcp',
    `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "sleep 2; httpd -f -p 9000 -h /; sleep 3600"]
    readinessProbe: {tcpSocket: {port: 9000}, periodSeconds: 1}
`,
  );
  const neverStarts = pod(
    'startup-fails',
    `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    startupProbe: {exec: {command: [test, -f, /never]}, periodSeconds: 1, failureThreshold: 2}
`,
  );
  const gated = pod(
    'startup-gates',
    `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "sleep 4; touch /started; sleep 3600"]
    startupProbe: {exec: {command: [test, -f, /started]}, periodSeconds: 1, failureThreshold: 30}
    livenessProbe: {exec: {command: [sh, -c, "if [ -f /started ]; then echo ok >> /live-ok; else echo early >> /live-early; fi"]}, periodSeconds: 1}
`,
  );
  // The gated pod's statuses from its very first: "not started yet" is a fact of its history, whatever else the test waited for.
  const gatedHistory = recordStatuses(kubelet, gated);
  loop.addPods([tcp, neverStarts, gated]);
  const tcpRunning = await waitFor(tcp, (s) => cs(s).state?.running !== undefined);
  assert.equal(cs(tcpRunning).ready, false);
  await waitFor(tcp, (s) => cs(s).ready === true);

  const restarted = await waitFor(neverStarts, (s) => cs(s).restartCount >= 1);
  assert.equal(cs(restarted).lastState?.terminated?.message, 'Container app failed startup probe, will be restarted');
  assert.equal(cs(restarted).started, false);

  const firstRunning = await gatedHistory.first((s) => cs(s)?.state?.running !== undefined, 30_000);
  assert.equal(cs(firstRunning.status).started, false, 'not started before the startup probe passes');
  const { status: started, before: earlier } = await gatedHistory.first((s) => cs(s)?.started === true, 30_000);
  assert.ok(
    earlier.every((s) => cs(s)?.started !== true),
    'every status before it said not started',
  );
  gatedHistory.stop();
  const id = runtimeId(cs(started).containerID)!;
  // Let liveness run a few times after startup succeeded.
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const ok = await client.execSync(id, ['sh', '-c', 'wc -l < /live-ok'], 5).catch(() => undefined);
    if (ok && Number(Buffer.from(ok.stdout).toString().trim()) >= 2) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const early = await client.execSync(id, ['test', '-f', '/live-early'], 5);
  assert.equal(early.exitCode, 1, 'liveness never ran before startup succeeded');
  const ok = await client.execSync(id, ['sh', '-c', 'wc -l < /live-ok'], 5);
  assert.ok(Number(Buffer.from(ok.stdout).toString().trim()) >= 2, 'liveness runs once the container started');
  assert.equal(cs(kubelet.statusManager.get(gated.metadata!.uid!)!).restartCount, 0);
  await remove(tcp, neverStarts, gated);
});

test(
  'postStart writes a file the container reads; preStop runs before SIGTERM; a container ignoring SIGTERM is killed after its ' +
    'grace period',
  async () => {
    const hooks = pod(
      'hooks',
      `  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "trap 'echo got-sigterm; exit 0' TERM; while [ ! -f /hook ]; do sleep 0.1; done; cat /hook; while true; do sleep 0.2; done"]
    lifecycle:
      postStart: {exec: {command: [sh, -c, "echo written-by-poststart > /hook"]}}
      preStop: {exec: {command: [sh, -c, "echo prestop-ran > /proc/1/fd/1"]}}
`,
    );
    const stubborn = pod(
      'ignores-sigterm',
      `  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "trap '' TERM; echo ignoring; while true; do sleep 1; done"]
`,
    );
    loop.addPods([hooks, stubborn]);
    const hooksRunning = await waitFor(hooks, (s) => cs(s).state?.running !== undefined);
    const stubbornRunning = await waitFor(stubborn, (s) => cs(s).state?.running !== undefined);
    for (
      const deadline = Date.now() + 60_000;
      !containerLogLines(logRoot, hooks, 'app').includes('written-by-poststart') && Date.now() < deadline;
    )
      await new Promise((r) => setTimeout(r, 250));
    assert.deepEqual(containerLogLines(logRoot, hooks, 'app'), ['written-by-poststart'], 'the main process read what postStart wrote');

    await remove(hooks, stubborn);
    assert.deepEqual(
      logsAtRemoval.get(runtimeId(cs(hooksRunning).containerID)!),
      ['written-by-poststart', 'prestop-ran', 'got-sigterm'],
      'preStop before SIGTERM',
    );
    assert.deepEqual(containerLogLines(logRoot, hooks, 'app'), [], 'the log directory went with the pod');

    const id = runtimeId(cs(stubbornRunning).containerID)!;
    const stop = stops.find((s) => s.id === id);
    assert.equal(stop?.timeout, 3, 'StopContainer got the pod grace period');
    const end = removed.get(id);
    assert.equal(end?.exitCode, 137, 'SIGKILL, since SIGTERM was ignored');
    const finishedMs = Number(end!.finishedAt) / 1e6;
    assert.ok(finishedMs - stop!.at >= 2_900, `killed after the 3 s grace period, not before (after ${finishedMs - stop!.at} ms)`);
  },
);

test('init containers run one at a time in order before the app; a failing one keeps the pod Pending with Init: status', async () => {
  const ordered = pod(
    'init-order',
    `  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: first, image: busybox:1.36, command: [sh, -c, "sleep 1"]}
  - {name: second, image: busybox:1.36, command: [sh, -c, "sleep 1"]}
  containers:
  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}
`,
  );
  const failing = pod(
    'init-fails',
    `  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: setup, image: busybox:1.36, command: [sh, -c, "exit 1"]}
  containers:
  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}
`,
  );
  const shown: string[] = [];
  const stop = kubelet.observe({
    onStatus: ({ pod: p, status }) => p.metadata!.uid === ordered.metadata!.uid && shown.push(displayStatus(p, status)),
  });
  loop.addPods([ordered, failing]);
  const running = await waitFor(ordered, (s) => s.phase === 'Running' && cs(s).state?.running !== undefined);
  stop();
  const a = cs(running, 'first').state!.terminated!;
  const b = cs(running, 'second').state!.terminated!;
  assert.equal(a.exitCode, 0);
  assert.equal(b.exitCode, 0);
  const t = (x: unknown) => Date.parse(String(x));
  assert.ok(t(a.finishedAt) <= t(b.startedAt), 'second started after first finished');
  assert.ok(t(b.finishedAt) <= t(cs(running).state!.running!.startedAt), 'app started after second finished');
  assert.ok(shown.indexOf('Init:1/2') > shown.indexOf('Init:0/2') || !shown.includes('Init:0/2'), `Init:N/M in order: ${shown.join(', ')}`);
  assert.ok(shown.includes('Init:1/2'), `shown: ${shown.join(', ')}`);
  assert.equal(shown.at(-1), 'Running');

  const retried = await waitFor(
    failing,
    (s) => cs(s, 'setup').restartCount >= 1 && /^Init:(Error|CrashLoopBackOff)$/.test(displayStatus(failing, s)),
  );
  assert.equal(retried.phase, 'Pending');
  assert.equal(ready(retried, 'Initialized'), 'False');
  assert.equal(cs(retried).state?.waiting?.reason, 'PodInitializing');
  const apps = await client.listContainers({
    labelSelector: { 'io.kubernetes.pod.uid': failing.metadata!.uid!, 'io.kubernetes.container.name': 'app' },
  });
  assert.equal(apps.length, 0, 'the app container is never created while init fails');
  await remove(ordered, failing);
});

test('a sidecar (init container with restartPolicy Always) runs beside the app container and is stopped after it', async () => {
  const p = pod(
    'sidecar',
    `  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: proxy, image: busybox:1.36, restartPolicy: Always, command: [sleep, "3600"]}
  containers:
  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}
`,
  );
  loop.addPods([p]);
  const s = await waitFor(p, (x) => cs(x).state?.running !== undefined && cs(x, 'proxy').state?.running !== undefined);
  assert.equal(s.phase, 'Running');
  assert.equal(displayStatus(p, s), 'Running');
  await waitFor(p, (x) => ready(x) === 'True');
  const appId = runtimeId(cs(s).containerID)!;
  const proxyId = runtimeId(cs(s, 'proxy').containerID)!;
  await remove(p);
  const order = stops.filter((x) => x.id === appId || x.id === proxyId).map((x) => (x.id === appId ? 'app' : 'proxy'));
  assert.deepEqual(order.slice(0, 2), ['app', 'proxy'], 'the sidecar is stopped after the app container');
});
