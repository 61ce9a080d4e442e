import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { crashLoopBackOff } from '../../src/core/kuberuntime/crash-backoff.js';
import { findContainerStatus } from '../../src/core/container/types.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';
import { startFake, stopFake } from '../support/fake-runtime.js';

let fake: FakeRuntime;
let client: CriClient;
const clock = new FakeClock();
const logs = scratchDir('crash-backoff-logs');

before(async () => ({ fake, client } = await startFake({ clock })));
after(async () => {
  await stopFake({ fake, client });
  logs.cleanup();
});

function pod(name: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`;
  return parseManifestText(text, { kind: 'file', path: `/unit/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
}

/**
 * The estimate from the runtime's records agrees with the RuntimeManager's
 * in-memory CrashLoopBackOff at every crash: same delay, same moment of restart.
 */
test("crashLoopBackOff (from the runtime) agrees with the RuntimeManager's backoff, crash after crash", async () => {
  const kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, nodeName: 'unit', agent: 'backoff-unit' });
  const manager = kubelet.runtimeManager;
  const p = pod('crashy');
  const m = p.metadata!;
  const status = () => manager.getPodStatus(m.uid!, m.name!, m.namespace!);
  await kubelet.syncPod(p, 'create');
  // Run times between crashes, the last one longer than 10 minutes (the backoff resets).
  const runs = [5_000, 1_000, 3_000, 1_000, 1_000, 1_000, 1_000, 2_000, 700_000];
  const delays: number[] = [];
  for (const runMs of runs) {
    clock.advance(runMs);
    const running = findContainerStatus(await status(), 'app')!;
    assert.equal(running.state, 'running');
    fake.exitContainer(running.id, 1);
    const exited = findContainerStatus(await status(), 'app')!;
    const estimate = crashLoopBackOff(exited, clock.now());
    delays.push(estimate.delayMs);
    assert.equal(estimate.remainingMs, estimate.delayMs, 'nothing has elapsed since the exit');

    const result = await manager.syncPod(p, await status());
    if (estimate.delayMs === 0) {
      assert.equal(result.waiting.get('app'), null, `restart ${exited.restartCount + 1} goes at once, as estimated`);
      continue;
    }
    assert.equal(result.waiting.get('app')?.reason, 'CrashLoopBackOff');
    assert.match(result.waiting.get('app')!.message, new RegExp(`^back-off ${estimate.delayMs / 1000}s `));
    assert.equal(result.retryAfterMs, estimate.remainingMs);
    clock.advance(estimate.delayMs - 1);
    assert.equal(crashLoopBackOff(exited, clock.now()).remainingMs, 1);
    assert.equal((await manager.syncPod(p, await status())).waiting.get('app')?.reason, 'CrashLoopBackOff', '1 ms before the estimate');
    clock.advance(1);
    assert.equal(crashLoopBackOff(exited, clock.now()).remainingMs, 0);
    assert.equal((await manager.syncPod(p, await status())).waiting.get('app'), null, 'starts when the estimate reaches 0');
  }
  assert.deepEqual(delays, [0, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 0]);
  await kubelet.syncTerminatingPod(p, 0);
  await kubelet.syncTerminatedPod(p);
});
