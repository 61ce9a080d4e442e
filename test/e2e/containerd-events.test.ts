import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { ContainerdEventsClient, type ContainerdEvent } from '../../src/core/cri/containerd-events.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_ENDPOINT, E2E_NAMESPACE, e2eClient, eventually, removeE2EPods, scratchDir, startPodctl } from '../support/e2e.js';
import { getUnix as get } from '../support/http.js';

let client: CriClient;
let onContainerd = false;
const dir = scratchDir('e2e-cd-events');
const manifests = join(dir.dir, 'manifests');
const root = join(dir.dir, 'root');

before(async () => {
  client = e2eClient();
  onContainerd = (await client.version()).runtimeName === 'containerd';
  await removeE2EPods(client);
  mkdirSync(manifests);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test("containerd's event service: a container's create, start, exit (with its status), delete arrive in order on Subscribe", async (t) => {
  if (!onContainerd) return t.skip('needs containerd');
  const events = new ContainerdEventsClient(E2E_ENDPOINT);
  const seen: ContainerdEvent[] = [];
  let streamError: Error | undefined;
  const stream = events.subscribe({ onEvent: (e) => seen.push(e), onError: (err) => (streamError = err) });
  try {
    const name = `cd-events-${Date.now().toString(36)}`;
    const uid = `${name}-uid`;
    const configOf = (attempt: number) => ({
      metadata: { name, uid, namespace: E2E_NAMESPACE, attempt },
      hostname: name,
      labels: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE, 'io.kubernetes.pod.uid': uid },
      linux: {},
    });
    // A server stream has no acknowledgement, and containerd sends only what happens after it has
    // taken the subscription: a sandbox whose task start shows on the stream says it is live. One
    // that started before that (a loaded machine) is removed, and another one started.
    let sandboxId: string | undefined;
    let config = configOf(0);
    for (let attempt = 0; sandboxId === undefined; attempt++) {
      assert.ok(attempt < 6, 'no sandbox task start on the stream in six tries: the subscription never took');
      config = configOf(attempt);
      const id = await client.runPodSandbox(config);
      const live = await eventually(
        "the sandbox task's start on the stream",
        async () => (seen.some((e) => e.topic === '/tasks/start' && e.containerId === id) ? true : undefined),
        10_000,
      ).catch(() => false);
      if (live) sandboxId = id;
      else {
        await client.stopPodSandbox(id);
        await client.removePodSandbox(id);
      }
    }
    const cid = await client.createContainer(
      sandboxId,
      { metadata: { name: 'app', attempt: 0 }, image: { image: 'busybox:1.36' }, command: ['sh', '-c', 'exit 7'], linux: {} },
      config,
    );
    await client.startContainer(cid);
    await eventually(
      'the container to exit',
      async () => ((await client.containerStatus(cid)).status?.state === 'CONTAINER_EXITED' ? true : undefined),
      60_000,
    );
    await client.removeContainer(cid);
    const mine = await eventually(
      'five events for the container',
      async () => {
        const list = seen.filter((e) => e.containerId === cid && !e.execId);
        return list.some((e) => e.topic === '/containers/delete') ? list : undefined;
      },
      60_000,
    );
    assert.deepEqual(
      mine.map((e) => e.topic),
      ['/containers/create', '/tasks/start', '/tasks/exit', '/tasks/delete', '/containers/delete'],
    );
    assert.equal(mine.find((e) => e.topic === '/tasks/exit')?.exitStatus, 7);
    assert.ok(mine.every((e) => e.namespace === 'k8s.io' && e.timestamp > 0));
    await client.stopPodSandbox(sandboxId);
    await eventually(
      "the sandbox task's exit",
      async () => (seen.some((e) => e.topic === '/tasks/exit' && e.containerId === sandboxId) ? true : undefined),
      60_000,
    );
    await client.removePodSandbox(sandboxId);
    assert.equal(streamError, undefined);
  } finally {
    stream.cancel();
    events.close();
  }
});

function podYaml(name: string): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n  - {name: side, image: busybox:1.36, command: [sleep, "3600"]}\n`;
}

interface JsonEvent {
  event: string;
  id: string;
  pod: string;
  container: string | null;
  detail: string;
}
const jsonLines = <T>(out: string): T[] =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as T);

test("--pleg auto on containerd, relists every 60 s: a killed container's ContainerDied comes from containerd's events, once, in pleg-events --follow and watch --trace, and it is restarted", async (t) => {
  if (!onContainerd) return t.skip('needs containerd');
  const watch = startPodctl([
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
  ]);
  const events = startPodctl(['pleg-events', '--follow', '-o', 'json', '--relist-period', '60s']);
  const containers = async () =>
    client.listContainers({ labelSelector: { [POD_NAME_LABEL]: 'victim', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
  try {
    await eventually(
      "pleg-events to say it uses containerd's events",
      async () => (/using containerd's event service/.test(events.stderr()) ? true : undefined),
      60_000,
    );
    await eventually(
      'watch --trace to name the live source',
      async () =>
        jsonLines<{ type: string; source?: string }>(watch.stdout()).some(
          (e) => e.type === 'pleg-source' && e.source === 'containerd-events',
        )
          ? true
          : undefined,
      60_000,
    );
    writeFileSync(join(manifests, 'victim.yaml'), podYaml('victim'));
    const app = await eventually(
      'victim to run',
      async () => (await containers()).find((c) => c.state === 'CONTAINER_RUNNING' && c.metadata?.name === 'app'),
      120_000,
    );
    await eventually(
      'ContainerStarted of app in pleg-events',
      async () => jsonLines<JsonEvent>(events.stdout()).find((e) => e.event === 'ContainerStarted' && e.id === app.id),
      60_000,
    );
    const info = (await client.containerStatus(app.id, true)).info;
    const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
    assert.ok(pid && pid > 1, 'the runtime reports the main process pid');
    // The container's main process: started by this test's pod, ended by its PID.
    process.kill(pid, 'SIGKILL');
    const died = await eventually(
      'ContainerDied in pleg-events',
      async () => jsonLines<JsonEvent>(events.stdout()).find((e) => e.event === 'ContainerDied' && e.id === app.id),
      50_000,
    );
    assert.match(died.detail, /exited with code 137/);
    const restarted = await eventually(
      'app to run again',
      async () => {
        const list = (await containers()).filter((c) => c.state === 'CONTAINER_RUNNING' && c.metadata?.name === 'app');
        return list[0] && list[0].id !== app.id ? list[0] : undefined;
      },
      50_000,
    );
    assert.equal(restarted.annotations['io.kubernetes.container.restartCount'], '1');
    // The new container's start comes after the death on the same stream: by then the death is all printed.
    await eventually(
      "the restarted app's ContainerStarted",
      async () => jsonLines<JsonEvent>(events.stdout()).find((e) => e.event === 'ContainerStarted' && e.id === restarted.id),
      50_000,
    );
    assert.equal(
      jsonLines<JsonEvent>(events.stdout()).filter((e) => e.event === 'ContainerDied' && e.id === app.id).length,
      1,
      events.stdout(),
    );
    const traced = await eventually('ContainerDied of app in watch --trace', async () =>
      jsonLines<{ type: string; event?: string; container?: string; exitCode?: number; pod?: { name: string } }>(watch.stdout()).filter(
        (e) => e.type === 'pleg' && e.event === 'ContainerDied' && e.container === 'app' && e.pod?.name === 'victim',
      ),
    ).then((l) => (l.length ? l : undefined));
    assert.ok(traced);
    const metrics = await get(join(root, 'podctl.sock'), '/metrics');
    assert.match(metrics.body, /^podctl_pleg_source\{source="containerd-events"\} 1$/m);
    assert.match(metrics.body, /^podctl_pleg_source\{source="relist"\} 0$/m);
    // Well before the first 60 s relist after the start, everything above came from the stream.
    await eventually("the restarted app's ContainerStarted in watch --trace", async () =>
      jsonLines<{ type: string; event?: string; container?: string; pod?: { name: string } }>(watch.stdout()).some(
        (e) => e.type === 'pleg' && e.event === 'ContainerStarted' && e.container === 'app' && e.pod?.name === 'victim',
      )
        ? true
        : undefined,
    );
    const deaths = jsonLines<{ type: string; event?: string; container?: string; pod?: { name: string } }>(watch.stdout()).filter(
      (e) => e.type === 'pleg' && e.event === 'ContainerDied' && e.container === 'app' && e.pod?.name === 'victim',
    );
    assert.equal(deaths.length, 1, 'watch saw the death once');
  } finally {
    events.interrupt();
    await events.done;
    rmSync(join(manifests, 'victim.yaml'), { force: true });
    await eventually('victim to be removed', async () => ((await containers()).length === 0 ? true : undefined), 60_000).catch(
      () => undefined,
    );
    watch.interrupt();
    await watch.done;
  }
});
