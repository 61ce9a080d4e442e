import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { StandaloneNode } from '../../src/core/node/node.js';
import { PodView, type PodViewAnswer } from '../../src/core/podview/index.js';
import { getFromStatusSocket } from '../../src/core/status/client.js';
import { renderDescribe } from '../../src/cli/describe.js';
import { podMeta } from '../../src/core/util/pod-key.js';
import { scratchDir } from '../support/e2e.js';

let fake: FakeRuntime;
let client: CriClient;
const dirs = scratchDir('status-views');
const clock = new FakeClock();
let node: StandaloneNode;

before(async () => {
  fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
  client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
});
after(async () => {
  // Termination waits on the fake clock: move it while the node stops.
  let stopped = false;
  const stopping = node?.stop({ cleanup: true }).finally(() => (stopped = true));
  const deadline = Date.now() + 30_000;
  while (node && !stopped && Date.now() < deadline) await settle(1000);
  await stopping;
  client.close();
  await fake.stop();
  dirs.cleanup();
});

/** Lets gRPC round trips finish between clock moves. */
async function settle(ms: number, steps = 10): Promise<void> {
  for (let i = 0; i < steps; i++) {
    await new Promise((r) => setTimeout(r, 5));
    clock.advance(ms / steps);
  }
  await new Promise((r) => setTimeout(r, 20));
}

/** Moves the clock a second at a time until cond holds (an eventual state), or fails after 30 s of real time. */
async function until(what: string, cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`never: ${what}`);
    await settle(1000);
  }
}

const podText = (name: string, spec: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 1\n${spec}`;
const app = '  - {name: app, image: busybox:1.36, command: [sleep, "3600"], volumeMounts: [{name: scratch, mountPath: /scratch}]}\n';
const scratch = '  volumes:\n  - {name: scratch, emptyDir: {sizeLimit: 64Ki}}\n';

test('a pod DeadlineExceeded, one Evicted and one rejected at admission: get pods -o json, describe and GET /v1/pods serve one status, byte for byte', async () => {
  node = new StandaloneNode({
    runtime: client,
    images: client,
    clock,
    rootDir: join(dirs.dir, 'root'),
    logRoot: join(dirs.dir, 'logs'),
    nodeName: 'unit',
    serve: true,
    relistPeriodMs: 1000,
    housekeepingPeriodMs: 1000,
    admission: { name: 'unit', labels: {}, allocatable: { cpu: 8000, memory: 64 * 1024 ** 3, 'ephemeral-storage': 1024 ** 4, pods: 110 } },
  });
  await node.start();
  node.apply([
    { file: 'deadline.yaml', text: podText('deadline', `  activeDeadlineSeconds: 30\n  containers:\n${app}${scratch}`) },
    { file: 'evicted.yaml', text: podText('evicted', `  containers:\n${app}${scratch}`) },
    { file: 'rejected.yaml', text: podText('rejected', `  nodeSelector: {disktype: ssd}\n  containers:\n${app}${scratch}`) },
  ]);
  const statusOf = (name: string) => node.pods().find((p) => p.metadata!.name === name)?.status;
  await until('evicted running', () => statusOf('evicted')?.containerStatuses?.[0]?.state?.running !== undefined);
  const uid = podMeta(node.pods().find((p) => p.metadata!.name === 'evicted')!).uid;
  writeFileSync(join(dirs.dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch', 'fill'), Buffer.alloc(256 * 1024, 1));
  await until('each pod failed for its reason', () =>
    (['deadline', 'evicted', 'rejected'] as const).every((n) => statusOf(n)?.phase === 'Failed'),
  );
  assert.deepEqual(
    ['deadline', 'evicted', 'rejected'].map((n) => statusOf(n)?.reason),
    ['DeadlineExceeded', 'Evicted', 'NodeAffinity'],
  );
  // Each pod's status is final now (Failed stays Failed): the three views are read with no sync in between that could move it.
  await settle(2000);

  const agentPods = (await getFromStatusSocket<{ items: IPod[] }>(node.socket, '/v1/pods')).items;
  const view = new PodView({ runtime: client, images: client, clock, statusSocket: node.socket });
  for (const name of ['deadline', 'evicted', 'rejected']) {
    const fromAgent = agentPods.find((p) => p.metadata!.name === name)!;
    // get pods -o json reads the agent's GET /v1/podview (as openPodLister does).
    const listed = (await getFromStatusSocket<PodViewAnswer>(node.socket, `/v1/podview?namespace=default&name=${name}`)).items[0]!;
    // describe reads a PodView on the agent's socket.
    const described = (await view.get('default', name))!;
    const agentJSON = JSON.stringify(fromAgent.status);
    assert.equal(JSON.stringify(listed.pod.status), agentJSON, `${name}: get pods -o json serves the agent's status`);
    assert.equal(JSON.stringify(described.pod.status), agentJSON, `${name}: describe serves the agent's status`);
    const text = renderDescribe(described.pod, described.source, described.readinessUnknown, [], undefined, undefined, clock.now());
    // Its status fields, as describe prints them, are those of that object.
    assert.match(text, /^Status:\s+Failed\b/m, `${name}: describe says Failed`);
  }
});
