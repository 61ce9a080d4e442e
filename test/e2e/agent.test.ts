import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { CONTAINER_SPEC_ANNOTATION, POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { recordedContainerSpec } from '../../src/core/kuberuntime/spec-copy.js';
import { readStateLock } from '../../src/core/lock.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, podctlAsync, removeE2EPods, scratchDir, startPodctl } from '../support/e2e.js';

let client: CriClient;
const roots: string[] = [];

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  // Every agent a test started is stopped by the PID in its lock, whatever happened in the test.
  for (const root of roots) {
    const holder = readStateLock(root);
    if (holder) {
      try {
        process.kill(holder.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  await removeE2EPods(client);
  client.close();
});

/** A state dir, logs and manifests of the test's own; its agent is stopped at the end of the test. */
function setup(t: { after(fn: () => unknown): void }, name: string): { root: string; dir: string; args: string[] } {
  const dirs = scratchDir(`agent-${name}`);
  const root = join(dirs.dir, 'root');
  roots.push(root);
  t.after(async () => {
    const stop = podctl(['agent', 'stop', '--root-dir', root]);
    assert.equal(stop.code, 0, stop.stderr);
    dirs.cleanup();
  });
  return { root, dir: dirs.dir, args: ['--root-dir', root, '--log-root', join(dirs.dir, 'logs')] };
}

function manifest(name: string, containers: string, extra = ''): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n${extra}  containers:\n${containers}`;
}

async function getPod(root: string, name: string): Promise<IPod | undefined> {
  const r = await podctlAsync(['get', 'pods', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', root]);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { items: IPod[] }).items.find((p) => p.metadata?.name === name);
}

const isReady = (p: IPod | undefined) => (p?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

async function runtimeView(name: string) {
  const selector = { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE };
  return {
    sandboxes: await client.listPodSandbox({ labelSelector: selector }),
    containers: await client.listContainers({ labelSelector: selector }),
  };
}

test('run --detach returns, and the agent restarts a crashing container with backoff (restartCount >= 2 within 40 s)', async (t) => {
  const { dir, root, args } = setup(t, 'crash');
  const file = join(dir, 'crash.yaml');
  writeFileSync(
    file,
    manifest('crasher', '  - {name: app, image: busybox:1.36, command: [sh, -c, "sleep 2; exit 1"]}\n', '  restartPolicy: Always\n'),
  );
  const r = podctl(['run', '--detach', file, ...args]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`agent pid \\d+, log ${join(root, 'agent.log').replaceAll('/', '\\/')}`));
  const restarted = await eventually(
    'restartCount >= 2',
    async () => {
      const p = await getPod(root, 'crasher');
      const c = p?.status?.containerStatuses?.[0];
      return c && c.restartCount >= 2 ? c : undefined;
    },
    40_000,
  );
  assert.ok(restarted.restartCount >= 2);
  const { containers } = await runtimeView('crasher');
  assert.ok(Math.max(...containers.map((c) => c.metadata?.attempt ?? 0)) >= 2, 'the runtime holds the third instance');
});

test("run --detach --wait=ready returns once the httpGet readiness probe passes; get pods shows Ready, events lists the pod's", async (t) => {
  const { dir, root, args } = setup(t, 'ready');
  const file = join(dir, 'web.yaml');
  writeFileSync(
    file,
    manifest(
      'web',
      '  - name: app\n    image: busybox:1.36\n    command: [sh, -c, "sleep 4; mkdir -p /www; echo ok > /www/index.html; httpd -f -p 8080 -h /www"]\n    readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}\n',
    ),
  );
  const r = podctl(['run', '--detach', '--wait=ready', file, ...args]);
  assert.equal(r.code, 0, r.stderr);
  // The first read after the command returned.
  assert.ok(isReady(await getPod(root, 'web')), 'Ready True once run --wait=ready returned');
  const events = podctl(['events', '-n', E2E_NAMESPACE, '--for', 'pod/web', '--root-dir', root]);
  assert.equal(events.code, 0, events.stderr);
  assert.match(events.stdout, /Started\s+pod\/web/);
  assert.doesNotMatch(events.stderr, /no watch answers/);
});

test(
  'SIGKILL the agent: pods keep running; get pods falls back to the runtime; run --detach brings it back, adopting the pods ' +
    'without a restart, probes resumed',
  async (t) => {
    const { dir, root, args } = setup(t, 'kill');
    const file = join(dir, 'kept.yaml');
    writeFileSync(
      file,
      manifest(
        'kept',
        '  - name: app\n    image: busybox:1.36\n    command: [sh, -c, "touch /tmp/ready; sleep 3600"]\n    readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1}\n',
      ),
    );
    assert.equal(podctl(['run', '--detach', '--wait=ready', file, ...args]).code, 0);
    const before = (await runtimeView('kept')).containers.map((c) => c.id).sort();
    const holder = readStateLock(root)!;
    process.kill(holder.pid, 'SIGKILL');
    await eventually('the agent gone', async () => (readStateLock(root) ? undefined : true));
    const running = (await runtimeView('kept')).containers.filter((c) => c.state === 'CONTAINER_RUNNING');
    assert.equal(running.length, 1, 'the pod keeps running without its agent');
    const fallback = podctl(['get', 'pods', '-n', E2E_NAMESPACE, '--root-dir', root]);
    assert.equal(fallback.code, 0, fallback.stderr);
    assert.match(fallback.stdout, /kept\s+0\/1\s+Running/);
    assert.match(fallback.stderr, /no running watch knows the readiness probes of kept/);

    const again = podctl(['run', '--detach', '--wait=ready', file, ...args]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /started the agent \(pid \d+\)/);
    assert.notEqual(readStateLock(root)?.pid, holder.pid);
    assert.ok(isReady(await getPod(root, 'kept')), 'readiness probes run again');
    assert.deepEqual((await runtimeView('kept')).containers.map((c) => c.id).sort(), before, 'no container restarted');
  },
);

test('run --detach of a 4 MB manifest (four ConfigMaps of 1 MB and a pod that mounts one): handed over whole and run', async (t) => {
  const { dir, root, args } = setup(t, 'big');
  const file = join(dir, 'big.yaml');
  const blob = 'x'.repeat(1_000_000);
  const maps = [0, 1, 2, 3].map(
    (i) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big-${i}, namespace: ${E2E_NAMESPACE}}\ndata:\n  blob: ${blob}\n`,
  );
  const pod = manifest(
    'big',
    '  - {name: app, image: busybox:1.36, command: [sleep, "3600"], volumeMounts: [{name: cfg, mountPath: /cfg}]}\n',
    '  volumes: [{name: cfg, configMap: {name: big-3}}]\n',
  );
  writeFileSync(file, [...maps, pod].join('---\n'));
  const run = podctl(['run', '--detach', file, ...args]);
  assert.equal(run.code, 0, run.stderr);
  const wc = podctl(['exec', '-n', E2E_NAMESPACE, 'big', '--root-dir', root, '--', 'wc', '-c', '/cfg/blob']);
  assert.equal(wc.code, 0, wc.stderr);
  assert.equal(wc.stdout.trim(), '1000000 /cfg/blob');
  assert.equal(podctl(['delete', 'pod', '-n', E2E_NAMESPACE, 'big', '--root-dir', root]).code, 0);
});

test("run --detach of two files with the same namespace/name: one sandbox, running the second file's spec", async (t) => {
  const { dir, root, args } = setup(t, 'same');
  const a = join(dir, 'a.yaml');
  const b = join(dir, 'b.yaml');
  writeFileSync(a, manifest('same', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n'));
  writeFileSync(b, manifest('same', '  - {name: app, image: busybox:1.36, command: [sleep, "4000"]}\n'));
  assert.equal(podctl(['run', '--detach', a, ...args]).code, 0);
  const second = podctl(['run', '--detach', b, ...args]);
  assert.equal(second.code, 0, second.stderr);
  const view = await runtimeView('same');
  assert.equal(view.sandboxes.length, 1, 'exactly one sandbox');
  const live = view.containers.filter((c) => c.state === 'CONTAINER_RUNNING');
  assert.equal(live.length, 1);
  // The agent has a --root-dir: the spec copy is in the pod directory, not on the container.
  assert.equal(live[0]!.annotations[CONTAINER_SPEC_ANNOTATION], undefined);
  const recorded = await recordedContainerSpec(client, live[0]!);
  assert.ok(recorded.specJSON, `the spec copy at ${recorded.path}`);
  const spec = JSON.parse(recorded.specJSON) as { command: string[] };
  assert.deepEqual(spec.command, ['sleep', '4000']);
  const pods = JSON.parse(podctl(['get', 'pods', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', root]).stdout) as { items: IPod[] };
  assert.equal(pods.items.filter((p) => p.metadata?.name === 'same').length, 1, 'get pods lists it once');
});

test(
  'get pods -o yaml is a manifest: its PodList runs again; with the agent stopped, delete forgets the pod, and the agent ' +
    'started again leaves it gone',
  async (t) => {
    const { dir, root, args } = setup(t, 'roundtrip');
    const file = join(dir, 'rt.yaml');
    writeFileSync(file, manifest('rt', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n'));
    assert.equal(podctl(['run', '--detach', file, ...args]).code, 0);
    const listed = podctl(['get', 'pods', '-n', E2E_NAMESPACE, '-o', 'yaml', '--root-dir', root]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^apiVersion: v1\nkind: PodList\n/);
    const dumped = join(dir, 'listed.yaml');
    writeFileSync(dumped, listed.stdout);
    assert.equal(podctl(['delete', 'pod', 'rt', '-n', E2E_NAMESPACE, '--root-dir', root]).code, 0);
    assert.equal((await runtimeView('rt')).sandboxes.length, 0, 'deleted');
    const again = podctl(['run', '--detach', dumped, ...args]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(
      (await runtimeView('rt')).containers.filter((c) => c.state === 'CONTAINER_RUNNING').length,
      1,
      'running again from the listing',
    );

    const stopped = podctl(['agent', 'stop', '--root-dir', root]);
    assert.equal(stopped.code, 0, stopped.stderr);
    const del = podctl(['delete', 'pod', 'rt', '-n', E2E_NAMESPACE, '--root-dir', root]);
    assert.equal(del.code, 0, del.stderr);
    assert.equal(existsSync(join(root, 'applied', `${E2E_NAMESPACE}_rt.yaml`)), false, 'the agent no longer keeps it');
    // Another pod starts the agent again, which reads what it keeps before it answers: rt is not among its pods.
    const other = join(dir, 'other.yaml');
    writeFileSync(other, manifest('rt-other', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n'));
    assert.equal(podctl(['run', '--detach', other, ...args]).code, 0);
    assert.equal(await getPod(root, 'rt'), undefined);
    assert.equal((await runtimeView('rt')).sandboxes.length, 0);
  },
);

test('delete pod: gone within its grace period, and it stays gone for 30 s', async (t) => {
  const { dir, root, args } = setup(t, 'delete');
  const file = join(dir, 'doomed.yaml');
  writeFileSync(file, manifest('doomed', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n'));
  assert.equal(podctl(['run', '--detach', file, ...args]).code, 0);
  const del = podctl(['delete', 'pod', 'doomed', '-n', E2E_NAMESPACE, '--root-dir', root]);
  assert.equal(del.code, 0, del.stderr);
  assert.match(del.stdout, /pod "doomed" deleted/);
  assert.equal((await runtimeView('doomed')).sandboxes.length, 0, 'gone once delete returned');
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    assert.equal((await runtimeView('doomed')).sandboxes.length, 0, 'the deleted pod came back');
    assert.equal(await getPod(root, 'doomed'), undefined);
    await new Promise((r) => setTimeout(r, 1000));
  }
});

test(
  'a foreground run with an agent on the root dir hands its pods over, and takes them back at Ctrl-C: terminated and removed ' +
    'before it exits, the agent still running',
  async (t) => {
    const { dir, root, args } = setup(t, 'handover');
    const sleeper = (name: string) => manifest(name, '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
    const keeper = join(dir, 'keeper.yaml');
    writeFileSync(keeper, sleeper('keeper'));
    const detached = podctl(['run', '--detach', keeper, ...args]);
    assert.equal(detached.code, 0, detached.stderr);
    const file = join(dir, 'handed.yaml');
    writeFileSync(file, sleeper('handed'));
    const run = startPodctl(['run', '--quiet', file, ...args]);
    t.after(async () => {
      run.interrupt();
      await run.done;
    });
    // The agent keeps it: get pods answers from the agent.
    await eventually(
      'the handed pod to run on the agent',
      async () => ((await getPod(root, 'handed'))?.status?.phase === 'Running' ? true : undefined),
      60_000,
    );
    run.interrupt();
    const done = await run.done;
    assert.equal(done.code, 0, done.stderr);
    // The run ends only once the agent has terminated and removed the pod.
    assert.equal(await getPod(root, 'handed'), undefined);
    assert.deepEqual(await runtimeView('handed'), { sandboxes: [], containers: [] });
    assert.equal((await getPod(root, 'keeper'))?.status?.phase, 'Running', 'the agent and its own pod are untouched');
  },
);

test(
  'under a foreground run, get pods sees the tcpSocket readiness probe pass (Ready True), and the output streams as ' +
    'pod/container | line',
  async (t) => {
    const { dir, root, args } = setup(t, 'fg');
    const file = join(dir, 'tcp.yaml');
    writeFileSync(
      file,
      manifest(
        'tcp',
        '  - name: app\n    image: busybox:1.36\n    command: [sh, -c, "echo serving; mkdir -p /www; httpd -f -p 8080 -h /www"]\n    readinessProbe: {tcpSocket: {port: 8080}, initialDelaySeconds: 15, periodSeconds: 10}\n',
      ),
    );
    const run = startPodctl(['run', file, ...args]);
    t.after(async () => {
      run.interrupt();
      await run.done;
    });
    await eventually('the container output, prefixed', async () => (/tcp\/app \| serving/.test(run.stdout()) ? true : undefined), 40_000);
    const ready = await eventually(
      'Ready True in get pods',
      async () => ((await isReady(await getPod(root, 'tcp'))) ? true : undefined),
      40_000,
    );
    assert.ok(ready);
    run.interrupt();
    const done = await run.done;
    assert.equal(done.code, 0, done.stderr);
    assert.equal((await runtimeView('tcp')).sandboxes.length, 0, 'removed at exit');
  },
);
