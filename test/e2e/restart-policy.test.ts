import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import type { Kubelet } from '../../src/core/kubelet.js';
import type { SyncLoop } from '../../src/core/loop.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { E2E_NAMESPACE, scratchDir, startE2ENode, waitForStatus, type E2ENode } from '../support/e2e.js';

let kubelet: Kubelet;
let loop: SyncLoop;
const logRoot = scratchDir('e2e-restart-logs');

function pod(name: string, restartPolicy: string, script: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  restartPolicy: ${restartPolicy}\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: [sh, -c, ${JSON.stringify(script)}]}\n`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/e2e/${name}.yaml` }, { nodeName: 'e2e' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

/** Resolves with the first status of the pod that satisfies cond. */
const waitFor = (p: IPod, cond: (s: IPodStatus) => boolean, timeoutMs: number) => waitForStatus(kubelet, p, cond, timeoutMs);

const app = (s: IPodStatus) => s.containerStatuses![0]!;

let node: E2ENode;

before(async () => {
  node = await startE2ENode({ logRoot: logRoot.dir, agent: 'e2e-restart' });
  ({ kubelet, loop } = node);
});

after(async () => {
  await node.stop();
  logRoot.cleanup();
});

for (const policy of ['Always', 'OnFailure']) {
  test(`exit 1 under ${policy}: restarted with growing delays, CrashLoopBackOff between restarts`, async () => {
    const p = pod(`crash-${policy.toLowerCase()}`, policy, 'exit 1');
    loop.addPods([p]);
    const first = await waitFor(p, (s) => app(s).restartCount === 1, 20_000);
    assert.equal(first.phase, 'Running');
    const backoff = await waitFor(p, (s) => app(s).state?.waiting?.reason === 'CrashLoopBackOff', 20_000);
    assert.match(app(backoff).state!.waiting!.message!, /back-off 10s restarting failed container=app/);
    assert.equal(app(backoff).lastState?.terminated?.exitCode, 1);
    // The backoff in the runtime's own record, not in when this test saw it: the third run started at
    // least 10 s after the second ended (the timestamps have whole seconds, so 9 s apart at the least).
    const ended = app(backoff).lastState!.terminated!.finishedAt!;
    const third = app(await waitFor(p, (s) => app(s).restartCount === 2, 30_000));
    const thirdStarted = third.state?.running?.startedAt ?? third.state?.terminated?.startedAt ?? third.lastState?.terminated?.startedAt;
    assert.ok(thirdStarted, JSON.stringify(third));
    const gap = Date.parse(thirdStarted) - Date.parse(ended);
    assert.ok(gap >= 9_000, `the second restart waited out the 10 s backoff (${ended} to ${thirdStarted})`);
    const second = await waitFor(p, (s) => app(s).state?.waiting?.reason === 'CrashLoopBackOff' && app(s).restartCount === 2, 20_000);
    assert.match(app(second).state!.waiting!.message!, /back-off 20s/);
    loop.removePods([p.metadata!.uid!]);
  });
}

test('exit 1 under Never: the pod ends Failed and is not restarted', async () => {
  const p = pod('fail-never', 'Never', 'exit 1');
  loop.addPods([p]);
  const s = await waitFor(p, (st) => st.phase === 'Failed', 20_000);
  assert.equal(app(s).state?.terminated?.exitCode, 1);
  assert.equal(app(s).state?.terminated?.reason, 'Error');
  assert.equal(app(s).restartCount, 0);
  loop.removePods([p.metadata!.uid!]);
});

for (const policy of ['Never', 'OnFailure']) {
  test(`exit 0 under ${policy}: the pod ends Succeeded`, async () => {
    const p = pod(`done-${policy.toLowerCase()}`, policy, 'exit 0');
    loop.addPods([p]);
    const s = await waitFor(p, (st) => st.phase === 'Succeeded', 20_000);
    assert.equal(app(s).state?.terminated?.reason, 'Completed');
    assert.equal(app(s).restartCount, 0);
    loop.removePods([p.metadata!.uid!]);
  });
}
