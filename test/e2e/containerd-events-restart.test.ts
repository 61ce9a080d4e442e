import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { embeddedEndpoint, embeddedPaths, embeddedUp } from '../../src/core/embedded/index.js';
import { livePid, stopPid } from '../../src/core/embedded/process.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { waitRuntimeReady } from '../../src/cli/runtime-ready.js';
import { E2E_ENDPOINT, E2E_NAMESPACE, e2eClient, eventually, removeE2EPods, scratchDir, startPodctl } from '../support/e2e.js';
import { getUnix as get } from '../support/http.js';

// Restarts the shared embedded containerd: run on its own, never beside other suites.
let client: CriClient;
const dir = scratchDir('e2e-cd-restart');
const manifests = join(dir.dir, 'manifests');
const root = join(dir.dir, 'root');

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  mkdirSync(manifests);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

interface JsonEvent {
  event: string;
  id: string;
  detail: string;
}
const jsonLines = <T>(out: string): T[] =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as T);

test(
  'containerd restarted under --pleg auto (60 s relists): a container killed while it was down shows one ContainerDied, and ' +
    'deaths after it are seen from the stream again (or the PLEG says it fell back)',
  { skip: E2E_ENDPOINT !== embeddedEndpoint() && 'needs the embedded runtime' },
  async () => {
    const watch = startPodctl(
      [
        'watch',
        manifests,
        '--root-dir',
        root,
        '--log-root',
        join(dir.dir, 'logs'),
        '--file-check-frequency',
        '1s',
        '--pleg-relist-period',
        '60s',
        '--trace',
        '-o',
        'json',
      ],
      { timeoutMs: 600_000 },
    );
    const events = startPodctl(['pleg-events', '--follow', '-o', 'json', '--relist-period', '60s'], { timeoutMs: 600_000 });
    const containers = async () =>
      client.listContainers({ labelSelector: { [POD_NAME_LABEL]: 'survivor', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
    const runningApp = async (not?: string) =>
      (await containers()).find((c) => c.state === 'CONTAINER_RUNNING' && c.metadata?.name === 'app' && c.id !== not);
    const pidOf = async (id: string) => (JSON.parse((await client.containerStatus(id, true)).info.info ?? '{}') as { pid?: number }).pid;
    const died = (id: string) => jsonLines<JsonEvent>(events.stdout()).filter((e) => e.event === 'ContainerDied' && e.id === id);
    try {
      await eventually(
        "pleg-events on containerd's events",
        async () => (/using containerd's event service/.test(events.stderr()) ? true : undefined),
        60_000,
      );
      writeFileSync(
        join(manifests, 'survivor.yaml'),
        `apiVersion: v1\nkind: Pod\nmetadata: {name: survivor, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`,
      );
      const first = await eventually('survivor to run', () => runningApp(), 120_000);
      await eventually(
        'its ContainerStarted',
        async () => jsonLines<JsonEvent>(events.stdout()).find((e) => e.event === 'ContainerStarted' && e.id === first.id),
        60_000,
      );
      const pid = await pidOf(first.id);
      assert.ok(pid && pid > 1);

      // containerd stops (by its recorded PID, as the embedded runtime's own functions do); the
      // container's shim and process live on. The container is killed while nothing can say so.
      const paths = embeddedPaths();
      const isOurs = (cmd: string[]) => cmd.join(' ').includes(paths.configFile);
      const containerd = livePid(paths.pidFile('containerd'), isOurs);
      assert.ok(containerd, 'the embedded containerd runs');
      await stopPid(containerd, 10_000, () => livePid(paths.pidFile('containerd'), isOurs) !== undefined);
      process.kill(pid, 'SIGKILL');
      // Back, and fully: RuntimeReady and NetworkReady.
      await embeddedUp({ install: false, waitReady: (endpoint, signal) => waitRuntimeReady(endpoint, signal), timeoutMs: 120_000 });

      await eventually(
        'the ContainerDied of the container killed while containerd was down',
        async () => (died(first.id).length ? true : undefined),
        180_000,
      );
      const second = await eventually('app to run again', () => runningApp(first.id), 180_000);
      await eventually(
        "the restarted app's ContainerStarted",
        async () => jsonLines<JsonEvent>(events.stdout()).find((e) => e.event === 'ContainerStarted' && e.id === second.id),
        120_000,
      );
      assert.equal(died(first.id).length, 1, events.stdout());

      // A death after the restart: from the reopened stream, or from relists if the PLEG said it fell back.
      const pid2 = await pidOf(second.id);
      assert.ok(pid2 && pid2 > 1);
      process.kill(pid2, 'SIGKILL');
      await eventually('the second ContainerDied', async () => (died(second.id).length ? true : undefined), 120_000);
      const fellBack = /using the generic PLEG/.test(events.stderr());
      const metrics = (await get(join(root, 'podctl.sock'), '/metrics')).body;
      const live = /^podctl_pleg_source\{source="([a-z-]+)"\} 1$/m.exec(metrics)?.[1];
      assert.ok(live === 'containerd-events' || live === 'relist', metrics);
      process.stderr.write(
        `after the restart: pleg-events ${fellBack ? 'fell back to relisting' : "kept containerd's events"}; the agent's PLEG source is ${live}\n`,
      );
      // Everything printed so far, once more: each death exactly once.
      await new Promise((r) => setTimeout(r, 2000));
      assert.equal(died(first.id).length, 1);
      assert.equal(died(second.id).length, 1);
      const deathsInWatch = () =>
        jsonLines<{ type: string; event?: string; container?: string; pod?: { name: string } }>(watch.stdout()).filter(
          (e) => e.type === 'pleg' && e.event === 'ContainerDied' && e.container === 'app' && e.pod?.name === 'survivor',
        ).length;
      await eventually('watch --trace to show both deaths', async () => (deathsInWatch() >= 2 ? true : undefined), 120_000);
      assert.equal(deathsInWatch(), 2, 'watch saw each death once');
    } finally {
      events.interrupt();
      await events.done;
      rmSync(join(manifests, 'survivor.yaml'), { force: true });
      await eventually('survivor to be removed', async () => ((await containers()).length === 0 ? true : undefined), 60_000).catch(
        () => undefined,
      );
      watch.interrupt();
      await watch.done;
    }
  },
);
