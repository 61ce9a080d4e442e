import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { embeddedEndpoint, embeddedPaths } from '../../src/core/embedded/index.js';
import { livePid } from '../../src/core/embedded/process.js';
import { E2E_ENDPOINT, E2E_NAMESPACE, e2eClient, eventually, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';
import { getUnix as get } from '../support/http.js';

let client: CriClient;
const dir = scratchDir('e2e-watch');
const manifests = join(dir.dir, 'manifests');
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

function podYaml(name: string, command: string[]): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: ${JSON.stringify(command)}\n  - name: side\n    image: busybox:1.36\n    command: ["sleep", "3600"]\n`;
}

/** The namespace as it stands in watch's lines (for a regex). */
const NS = E2E_NAMESPACE.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** watch prints asynchronously: wait until a line matches, never read it once. */
const said = (w: { output: () => string }, what: string, pattern: RegExp) =>
  eventually(what, async () => (pattern.test(w.output()) ? true : undefined));

async function containers(name: string) {
  return client.listContainers({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
}

function startWatch(): { child: ChildProcess; output: () => string; stop: () => Promise<number | null> } {
  const child = spawn(
    process.execPath,
    [
      BIN,
      'watch',
      manifests,
      '--root-dir',
      join(dir.dir, 'root'),
      '--log-root',
      join(dir.dir, 'logs'),
      '--file-check-frequency',
      '1s',
      '--pleg-relist-period',
      '200ms',
    ],
    {
      env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT },
    },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // 'close', not 'exit': the output is whole only once stdout and stderr have ended.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

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

test('watch follows the directory: add starts, edit replaces one container, restart adopts, delete removes', async () => {
  let w = startWatch();
  try {
    const file = join(manifests, 'w1.yaml');
    writeFileSync(file, podYaml('w1', ['sleep', '3600']));
    const running = (list: Awaited<ReturnType<typeof containers>>) => list.filter((c) => c.state === 'CONTAINER_RUNNING');
    const first = await eventually('w1 to run', async () => {
      const list = running(await containers('w1'));
      return list.length === 2 ? list : undefined;
    });
    const idOf = (list: typeof first, name: string) => list.find((c) => c.metadata?.name === name)!.id;

    writeFileSync(file, podYaml('w1', ['sleep', '7200']));
    const edited = await eventually('app to be replaced', async () => {
      const list = running(await containers('w1'));
      return list.length === 2 && idOf(list, 'app') !== idOf(first, 'app') ? list : undefined;
    });
    assert.equal(idOf(edited, 'side'), idOf(first, 'side'), 'the other container is untouched');

    // A watch stopped and started again adopts what runs and restarts nothing.
    assert.equal(await w.stop(), 0, w.output());
    assert.match(w.output(), /pods keep running/);
    w = startWatch();
    await said(w, 'the new watch to report the pod', new RegExp(`${NS}/w1\\s+Running`));
    await new Promise((r) => setTimeout(r, 1500));
    // Beside the containers' IDs, what the new watch asked the runtime: nothing stopped, created or started.
    const settled = (await get(join(dir.dir, 'root', 'podctl.sock'), '/metrics')).body;
    const count = (text: string, series: string) =>
      Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    for (const op of ['StopContainer', 'CreateContainer', 'StartContainer', 'StopPodSandbox', 'RunPodSandbox']) {
      assert.equal(count(settled, `podctl_runtime_operations_total{operation_type="${op}"}`), 0, `the new watch called ${op}`);
    }
    assert.ok(
      count(settled, 'podctl_runtime_operations_total{operation_type="ListContainers"}') > 0,
      'the counters are read from the new watch',
    );
    assert.deepEqual(
      running(await containers('w1'))
        .map((c) => c.id)
        .sort(),
      edited.map((c) => c.id).sort(),
    );

    rmSync(file);
    // Containers go first, then the sandbox: the pod is removed once both are gone.
    await eventually('w1 to be removed, containers and sandbox', async () =>
      (await containers('w1')).length === 0 &&
      (await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: 'w1', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } })).length === 0
        ? true
        : undefined,
    );
    await said(w, 'watch to say w1 was removed', new RegExp(`${NS}/w1\\s+terminated and removed`));
  } finally {
    await w.stop();
  }
});

test('a container killed from outside: ContainerDied in pleg-events --follow and in watch, then restarted', async () => {
  const w = startWatch();
  const events = spawn(process.execPath, [BIN, 'pleg-events', '--follow', '-o', 'json', '--relist-period', '200ms'], {
    env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT },
  });
  let eventsOut = '';
  events.stdout.on('data', (d: Buffer) => (eventsOut += d.toString()));
  const eventsExited = new Promise((resolve) => events.on('close', resolve));
  try {
    writeFileSync(join(manifests, 'victim.yaml'), podYaml('victim', ['sleep', '3600']));
    const app = await eventually('victim to run', async () => {
      const list = (await containers('victim')).filter((c) => c.state === 'CONTAINER_RUNNING' && c.metadata?.name === 'app');
      return list[0];
    });
    const info = (await client.containerStatus(app.id, true)).info;
    const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
    assert.ok(pid && pid > 1, 'the runtime reports the main process pid');
    // How soon it is seen is the detection-latency benchmark's to measure, not a test's.
    process.kill(pid, 'SIGKILL');
    const died = await eventually('ContainerDied in pleg-events', async () =>
      eventsOut
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { event: string; id: string; detail: string })
        .find((e) => e.event === 'ContainerDied' && e.id === app.id),
    );
    assert.match(died.detail, /exited with code 137/);
    const restarted = await eventually('app to run again', async () => {
      const list = (await containers('victim')).filter((c) => c.state === 'CONTAINER_RUNNING' && c.metadata?.name === 'app');
      return list[0] && list[0].id !== app.id ? list[0] : undefined;
    });
    assert.equal(restarted.annotations['io.kubernetes.container.restartCount'], '1');
    await said(w, 'watch to show the restart', new RegExp(`${NS}/victim .*app=running restarts=1`));
    await said(w, 'watch to show the ContainerDied', new RegExp(`${NS}/victim {2}ContainerDied app \\(exit 137\\)`));
  } finally {
    events.kill('SIGTERM');
    await eventsExited;
    rmSync(join(manifests, 'victim.yaml'), { force: true });
    await eventually('victim to be removed', async () => ((await containers('victim')).length === 0 ? true : undefined)).catch(
      () => undefined,
    );
    await w.stop();
  }
});

test('the status socket of a running watch: /healthz, /pods as a v1 PodList with status, /metrics', async () => {
  const w = startWatch();
  const socket = join(dir.dir, 'root', 'podctl.sock');
  try {
    writeFileSync(join(manifests, 'status.yaml'), podYaml('status', ['sleep', '3600']));
    const list = await eventually('the pod to be Running in /pods', async () => {
      try {
        const r = await get(socket, '/pods');
        const body = JSON.parse(r.body) as { kind: string; items: { metadata: { name: string }; status?: { phase?: string } }[] };
        return body.items.find((p) => p.metadata.name === 'status' && p.status?.phase === 'Running') ? body : undefined;
      } catch {
        return undefined;
      }
    });
    assert.equal(list.kind, 'PodList');
    assert.equal(statSync(socket).mode & 0o777, 0o600);
    // podctl get reads the same PodList: the statuses match. Two reads a moment apart can straddle a
    // status change (a container turning ready), so they are read again until they agree.
    type Listed = {
      items: {
        metadata: { name: string };
        status: { phase: string; containerStatuses: { name: string; ready: boolean; containerID: string }[] };
      }[];
    };
    const pick = (items: Listed['items']) =>
      items
        .filter((p) => p.metadata.name === 'status')
        .map((p) => ({ phase: p.status.phase, containers: p.status.containerStatuses.map((c) => [c.name, c.ready, c.containerID]) }));
    const agreed = await eventually('get -o json and /pods to show the same status', async () => {
      const got = podctl(['get', 'pods', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', join(dir.dir, 'root')]);
      assert.equal(got.code, 0, got.stderr);
      const fromGet = JSON.parse(got.stdout) as { kind: string } & Listed;
      assert.equal(fromGet.kind, 'PodList');
      const direct = JSON.parse((await get(socket, '/pods')).body) as Listed;
      return isDeepStrictEqual(pick(fromGet.items), pick(direct.items)) ? pick(direct.items) : undefined;
    });
    assert.equal(agreed.length, 1, 'the pod is in both');
    // The table of the first read that shows both containers ready.
    const table = await eventually('get pods to show status 2/2 Running', async () => {
      const t = podctl(['get', 'pods', '-n', E2E_NAMESPACE, '--root-dir', join(dir.dir, 'root')]);
      return /^status\s+2\/2\s+Running\s+0\s+\d+s\s*$/m.test(t.stdout) ? t : undefined;
    });
    assert.match(table.stdout, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s*$/m);
    const health = await get(socket, '/healthz');
    assert.equal(health.status, 200, health.body);
    const metrics = await get(socket, '/metrics');
    assert.match(metrics.body, /^podctl_runtime_operations_total\{operation_type="RunPodSandbox"\} [1-9]/m);
    assert.match(metrics.body, /^podctl_pleg_relist_duration_seconds_count [1-9]/m);
    assert.match(metrics.body, /^podctl_pod_start_duration_seconds_count [1-9]/m);
  } finally {
    rmSync(join(manifests, 'status.yaml'), { force: true });
    await eventually('status pod removed', async () => ((await containers('status')).length === 0 ? true : undefined)).catch(
      () => undefined,
    );
    await w.stop();
  }
});

test(
  'containerd stopped and started again under watch: reported down, then every pod runs, no duplicate sandbox',
  { skip: E2E_ENDPOINT !== embeddedEndpoint() && 'needs the embedded runtime' },
  async () => {
    const w = startWatch();
    const paths = embeddedPaths();
    try {
      writeFileSync(join(manifests, 'steady.yaml'), podYaml('steady', ['sleep', '3600']));
      const before = await eventually('steady to run', async () => {
        const list = (await containers('steady')).filter((c) => c.state === 'CONTAINER_RUNNING');
        return list.length === 2 ? list : undefined;
      });
      const pid = livePid(paths.pidFile('containerd'), (cmd) => cmd.includes(paths.configFile));
      assert.ok(pid, 'the embedded containerd runs');
      process.kill(pid, 'SIGTERM');
      await eventually('watch to report the runtime down', async () => (/runtime is down/.test(w.output()) ? true : undefined), 30_000);
      assert.equal(w.child.exitCode, null, 'watch keeps running');
      const up = podctl(['runtime', 'up']);
      assert.equal(up.code, 0, up.stderr);
      await eventually('watch to report the runtime back', async () => (/runtime is back/.test(w.output()) ? true : undefined), 30_000);
      const after = await eventually('steady to run again', async () => {
        const list = (await containers('steady')).filter((c) => c.state === 'CONTAINER_RUNNING');
        return list.length === 2 ? list : undefined;
      });
      // The containers outlived containerd (their shims kept them): nothing was restarted.
      assert.deepEqual(after.map((c) => c.id).sort(), before.map((c) => c.id).sort());
      assert.equal((await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: 'steady' } })).length, 1);
    } finally {
      rmSync(join(manifests, 'steady.yaml'), { force: true });
      await eventually('steady removed', async () => ((await containers('steady')).length === 0 ? true : undefined)).catch(() => undefined);
      await w.stop();
    }
  },
);
