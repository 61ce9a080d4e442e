import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { CONTAINER_NAME_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_NAMESPACE, e2eClient, eventually, removeE2EPods, scratchDir, startPodctl, type RunningPodctl } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-container-gc');
const manifests = join(dir.dir, 'manifests');
let watch: RunningPodctl | undefined;

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  mkdirSync(manifests, { recursive: true });
});

after(async () => {
  if (watch) {
    watch.kill('SIGKILL');
    await watch.done;
  }
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test('a crash-looping pod keeps at most one dead container per container name (the default GC policy)', async () => {
  writeFileSync(
    join(manifests, 'crashy.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: gc-crashy, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: [sh, -c, "exit 1"]}\n  - {name: side, image: busybox:1.36, command: [sleep, "3600"]}\n`,
  );
  watch = startPodctl(['watch', manifests, '--root-dir', join(dir.dir, 'root'), '--log-root', join(dir.dir, 'logs')]);
  const selector = { [POD_NAME_LABEL]: 'gc-crashy', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE, [CONTAINER_NAME_LABEL]: 'app' };
  let most = 0;
  // Three instances of app have run (10 s and 20 s of CrashLoopBackOff between them).
  await eventually(
    'the third instance of app',
    async () => {
      const all = await client.listContainers({ labelSelector: selector });
      most = Math.max(most, all.filter((c) => c.state === 'CONTAINER_EXITED').length);
      return all.some((c) => c.metadata?.attempt !== undefined && c.metadata.attempt >= 2) ? true : undefined;
    },
    120_000,
  );
  // Between an exit and the sync it triggers there are briefly two; then one stays.
  assert.ok(most <= 2, `never more than the kept one plus the one that just exited (saw ${most})`);
  await eventually(
    'one dead instance of app',
    async () => {
      const dead = (await client.listContainers({ labelSelector: selector })).filter((c) => c.state === 'CONTAINER_EXITED');
      return dead.length === 1 ? true : undefined;
    },
    60_000,
  );
  watch.kill('SIGTERM');
  await watch.done;
  watch = undefined;
});
