import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { PodList } from 'kubernetes-models/v1';
import { realClock } from '../../src/core/clock.js';
import type { CriClient } from '../../src/core/cri/client.js';
import { Kubelet } from '../../src/core/kubelet.js';
import { SyncLoop } from '../../src/core/loop.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { E2E_NAMESPACE, e2eClient, podctlAsync, removeE2EPods, scratchDir, startPodctl } from '../support/e2e.js';

/**
 * The debugging commands against pods an in-process kubelet keeps (agent
 * debug-e2e). No watch answers under --root-dir, so the commands read the
 * runtime by podctl's labels, as they do when `watch` does not run.
 */
let client: CriClient;
let kubelet: Kubelet;
let loop: SyncLoop;
const logRoot = scratchDir('e2e-debug-logs');
const rootDir = scratchDir('e2e-debug-root');
const NS = E2E_NAMESPACE;

const cli = (args: string[], timeoutMs?: number) => podctlAsync([...args, '--root-dir', rootDir.dir], { timeoutMs });
const start = (args: string[]) => startPodctl([...args, '--root-dir', rootDir.dir]);

function pod(name: string, yamlContainers: string, restartPolicy = 'Always'): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${NS}, labels: {suite: debug}}\nspec:\n  restartPolicy: ${restartPolicy}\n  terminationGracePeriodSeconds: 2\n  containers:\n${yamlContainers}`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/e2e/${name}.yaml` }, { nodeName: 'e2e' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

const shPod = (name: string, script: string, restartPolicy = 'Always') =>
  pod(name, `  - {name: app, image: busybox:1.36, command: [sh, -c, ${JSON.stringify(script)}]}\n`, restartPolicy);

function waitFor(p: IPod, cond: (s: IPodStatus) => boolean, timeoutMs: number): Promise<IPodStatus> {
  return new Promise((resolve, reject) => {
    const current = kubelet.statuses.get(p.metadata!.uid!);
    if (current && cond(current)) return resolve(current);
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`timed out; last status of ${p.metadata!.name}: ${JSON.stringify(kubelet.statuses.get(p.metadata!.uid!)?.containerStatuses)}`));
    }, timeoutMs);
    const stop = kubelet.observe({
      onStatus: ({ pod: q, status }) => {
        if (q.metadata!.uid !== p.metadata!.uid || !cond(status)) return;
        clearTimeout(timer);
        stop();
        resolve(status);
      },
    });
  });
}

const app = (s: IPodStatus) => s.containerStatuses![0]!;
const running = (s: IPodStatus) => s.phase === 'Running' && s.containerStatuses!.every((c) => c.state?.running);

async function removePod(p: IPod): Promise<void> {
  loop.removePods([p.metadata!.uid!]);
  await kubelet.workers.waitIdle();
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  kubelet = new Kubelet({ runtime: client, images: client, clock: realClock, logRoot: logRoot.dir, nodeName: 'e2e', agent: 'debug-e2e' });
  loop = new SyncLoop({ kubelet, pleg: kubelet.createPleg({ relistPeriodMs: 200 }), clock: realClock });
  loop.start();
});

after(async () => {
  loop.stop();
  await kubelet.workers.waitIdle();
  await removeE2EPods(client);
  client.close();
  logRoot.cleanup();
  rootDir.cleanup();
});

test('get pods without watch: CrashLoopBackOff with restarts "(Xs ago)", --no-headers, -o name, -o wide, -o json as a v1 PodList', async () => {
  const crashy = shPod('crashy', 'echo crashing; exit 1');
  const steady = pod('steady', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n  - {name: side, image: busybox:1.36, command: [sleep, "3600"]}\n');
  loop.addPods([crashy, steady]);
  await waitFor(steady, running, 30_000);
  await waitFor(crashy, (s) => app(s).state?.waiting?.reason === 'CrashLoopBackOff' && app(s).restartCount >= 1, 30_000);

  const table = await cli(['get', 'pods', '-n', NS]);
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
  assert.match(lines[1]!, /^crashy\s+0\/1\s+CrashLoopBackOff\s+[1-9]\d* \(\d+s ago\)\s+\d+s$/);
  assert.match(lines[2]!, /^steady\s+2\/2\s+Running\s+0\s+\d+s$/);
  assert.equal(lines.length, 3);

  const bare = await cli(['get', 'pods', '-n', NS, '--no-headers']);
  assert.deepEqual(
    bare.stdout.trimEnd().split('\n').map((l) => l.split(/\s+/)[0]),
    ['crashy', 'steady'],
  );

  const names = await cli(['get', 'pods', '-n', NS, '-o', 'name']);
  assert.equal(names.stdout, 'pod/crashy\npod/steady\n');

  const wide = await cli(['get', 'pods', 'steady', '-n', NS, '-o', 'wide']);
  assert.match(wide.stdout, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+CONTAINERS\n/);
  assert.match(wide.stdout, /\nsteady\s+2\/2\s+Running\s+0\s+\S+\s+\d+\.\d+\.\d+\.\d+\s+e2e\s+app,side\n/);

  const json = await cli(['get', 'pods', '-n', NS, '-o', 'json']);
  assert.equal(json.code, 0, json.stderr);
  const list = JSON.parse(json.stdout);
  assert.equal(list.kind, 'PodList');
  assert.equal(list.apiVersion, 'v1');
  new PodList(list).validate();
  const c = list.items.find((p: IPod) => p.metadata!.name === 'crashy');
  assert.equal(c.metadata.uid, crashy.metadata!.uid);
  assert.equal(c.spec.restartPolicy, 'Always');
  assert.equal(c.status.containerStatuses[0].lastState.terminated.exitCode, 1);
  assert.deepEqual(c.metadata.labels, { suite: 'debug' });

  const one = JSON.parse((await cli(['get', 'pods', 'steady', '-n', NS, '-o', 'json'])).stdout);
  assert.equal(one.kind, 'Pod');
  assert.equal(one.status.phase, 'Running');

  await removePod(crashy);
  await removePod(steady);
});

test('get pods NAME that does not exist: one line, exit 1; an empty namespace says so', async () => {
  const r = await cli(['get', 'pods', 'no-such-pod', '-n', NS]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `Error: pod "no-such-pod" not found in namespace ${NS}\n`);
  const empty = await cli(['get', 'pods', '-n', `${NS}-empty`]);
  assert.equal(empty.code, 0);
  assert.equal(empty.stdout, '');
  assert.equal(empty.stderr, `No resources found in ${NS}-empty namespace.\n`);
});

test('get pods -w prints the pod again when its container restarts', async () => {
  const p = shPod('watched', 'sleep 3600');
  loop.addPods([p]);
  await waitFor(p, running, 30_000);
  const w = start(['get', 'pods', 'watched', '-n', NS, '-w', '--no-headers']);
  try {
    await w.waitFor(/^watched\s+1\/1\s+Running\s+0\s/m, 20_000);
    const id = app(kubelet.statuses.get(p.metadata!.uid!)!).containerID!.replace(/^.*:\/\//, '');
    await client.stopContainer(id, 0);
    await w.waitFor(/^watched\s+1\/1\s+Running\s+1 \(\d+s ago\)\s/m, 30_000);
  } finally {
    w.interrupt();
    await w.done;
  }
  await removePod(p);
});
