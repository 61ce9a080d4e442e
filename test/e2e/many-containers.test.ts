import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { readStateLock } from '../../src/core/lock.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, podctlAsync, removeE2EPods, scratchDir } from '../support/e2e.js';

/**
 * How many containers the pod has: the 200 is minutes of starting on a loaded 2-core machine; 80 is five batches of the kill bound.
 */
const CONTAINERS = Number(process.env.PODCTL_E2E_MANY_CONTAINERS ?? 80);

let client: CriClient;
let root = '';

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  // The agent, stopped by the PID in its lock whatever happened in the test.
  const holder = root ? readStateLock(root) : undefined;
  if (holder) {
    try {
      process.kill(holder.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await removeE2EPods(client);
  client.close();
});

async function getPod(name: string): Promise<IPod | undefined> {
  const r = await podctlAsync(['get', 'pods', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', root]);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { items: IPod[] }).items.find((p) => p.metadata?.name === name);
}

test(
  `a pod of ${CONTAINERS} containers that ignore SIGTERM is deleted with --force: get pods shows it Terminating, and the runtime is left with none of it`,
  { timeout: 900_000 },
  async (t) => {
    const dirs = scratchDir('many-containers');
    root = join(dirs.dir, 'root');
    t.after(() => {
      const stop = podctl(['agent', 'stop', '--root-dir', root]);
      assert.equal(stop.code, 0, stop.stderr);
      dirs.cleanup();
    });
    const args = ['--root-dir', root, '--log-root', join(dirs.dir, 'logs')];
    // busybox's sleep as PID 1 has no SIGTERM handler: each container is stopped only by the SIGKILL after its grace.
    const containers = Array.from(
      { length: CONTAINERS },
      (_, i) => `  - {name: c${i}, image: busybox:1.36, command: [sleep, "3600"]}\n`,
    ).join('');
    const file = join(dirs.dir, 'many.yaml');
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Pod\nmetadata: {name: many, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 5\n  containers:\n${containers}`,
    );
    const run = podctl(['run', '--detach', file, ...args], { timeoutMs: 120_000 });
    assert.equal(run.code, 0, run.stderr);
    await eventually(
      `all ${CONTAINERS} containers running`,
      async () => {
        const p = await getPod('many');
        const running = (p?.status?.containerStatuses ?? []).filter((c) => c.state?.running).length;
        return running === CONTAINERS ? p : undefined;
      },
      600_000,
    );

    const deleting = podctlAsync(['delete', 'pod', 'many', '-n', E2E_NAMESPACE, '--force', '--root-dir', root], { timeoutMs: 300_000 });
    // While its containers are stopped, batch after batch, the agent lists the pod as being deleted.
    const terminating = await eventually(
      'get pods shows the pod Terminating',
      async () => {
        const r = await podctlAsync(['get', 'pods', '-n', E2E_NAMESPACE, '--no-headers', '--root-dir', root]);
        assert.equal(r.code, 0, r.stderr);
        const row = r.stdout.split('\n').find((l) => l.startsWith('many '));
        return row?.split(/\s+/)[2] === 'Terminating' ? row : undefined;
      },
      120_000,
    );
    assert.match(terminating, /^many\s+\d+\/\d+\s+Terminating\s/);
    const deleted = await deleting;
    assert.equal(deleted.code, 0, `delete --force: ${deleted.stderr}`);

    // Nothing left that the CRI still calls running (containerd 1.6's wedged shim said Running for containers long gone).
    const selector = { [POD_NAME_LABEL]: 'many', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE };
    assert.deepEqual(await client.listContainers({ labelSelector: selector }), []);
    assert.deepEqual(await client.listPodSandbox({ labelSelector: selector }), []);
    assert.equal(await getPod('many'), undefined);
  },
);
