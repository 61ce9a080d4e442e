import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { realClock } from '../../src/core/clock.js';
import type { CriClient } from '../../src/core/cri/client.js';
import { newKubelet, createPleg } from '../../src/core/node/compose.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { SyncLoop } from '../../src/core/loop.js';
import type { Plan } from '../../src/core/plan.js';
import { loadManifests } from '../../src/core/pod/index.js';
import type { TraceEvent } from '../../src/core/trace.js';
import { E2E_ENDPOINT, E2E_NAMESPACE, e2eClient, eventually, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-plan');
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');
// Plan computes static pod UIDs from the node name: the in-process kubelet must use the same.
const NODE = 'plan-e2e-node';

function podYaml(name: string, opts: { image?: string; command?: string[]; restartPolicy?: string } = {}): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  restartPolicy: ${opts.restartPolicy ?? 'Always'}\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: app\n    image: ${opts.image ?? 'busybox:1.36'}\n    command: ${JSON.stringify(opts.command ?? ['sleep', '3600'])}\n`;
}

async function load(file: string): Promise<IPod> {
  const set = await loadManifests([file], { nodeName: NODE });
  return set.pods[0]!.pod;
}

/** What plan must not change: every container and sandbox of the e2e namespace, with its state. */
async function snapshot(): Promise<string[]> {
  const selector = { [POD_NAMESPACE_LABEL]: E2E_NAMESPACE };
  const [sandboxes, containers] = await Promise.all([
    client.listPodSandbox({ labelSelector: selector }),
    client.listContainers({ labelSelector: selector }),
  ]);
  return [...sandboxes.map((s) => `sandbox ${s.id} ${s.state}`), ...containers.map((c) => `container ${c.id} ${c.state}`)].sort();
}

const plan = (args: string[]) => podctl(['plan', '--node-name', NODE, ...args]);

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test(
  'plan: nothing to do for a pod that runs as its file says (exit 0); an image change is named (exit 2); the runtime is ' + 'untouched',
  async () => {
    const file = join(dir.dir, 'steady.yaml');
    writeFileSync(file, podYaml('steady'));
    // With a state directory of its own: plan (another process, another --root-dir) reads the spec copies from its pod directories.
    const kubelet = newKubelet({
      runtime: client,
      images: client,
      clock: realClock,
      logRoot: join(dir.dir, 'logs'),
      rootDir: join(dir.dir, 'kubelet-root'),
      nodeName: NODE,
      agent: 'plan-e2e',
    });
    const pod = await load(file);
    await kubelet.syncPod(pod, 'create');
    assert.equal(kubelet.statusManager.get(pod.metadata!.uid!)?.phase, 'Running');
    try {
      const [listed] = await client.listContainers({
        labelSelector: { [POD_NAMESPACE_LABEL]: E2E_NAMESPACE, 'io.kubernetes.pod.name': 'steady' },
      });
      assert.equal(listed!.annotations['io.podctl.container.spec'], undefined, 'the spec copy is not on the container');
      const before = await snapshot();
      const steady = plan([file]);
      assert.equal(steady.code, 0, steady.stderr);
      assert.equal(
        steady.stdout.trim(),
        `${E2E_NAMESPACE}/steady: in desired state, nothing to do\n\nNo changes: 1 pod(s) in desired state.`,
      );

      writeFileSync(file, podYaml('steady', { image: 'busybox:1.37' }));
      const changed = plan([file]);
      assert.equal(changed.code, 2, changed.stderr);
      assert.match(
        changed.stdout,
        /- kill container app \(SpecChanged\): Container app definition changed, will be restarted\n {6}containers\[app\]\.image: busybox:1\.36 → busybox:1\.37\n/,
      );
      assert.match(
        changed.stdout,
        /\+ pull image busybox:1\.37 for app: not present \(pull policy IfNotPresent\)\n {2}\+ start container app: Container app definition changed/,
      );

      const json = plan([file, '-o', 'json']);
      assert.equal(json.code, 2);
      const p = JSON.parse(json.stdout) as Plan;
      assert.equal(p.changes, true);
      assert.deepEqual(
        p.pods[0]!.actions.map((a) => a.action),
        ['KillContainer', 'PullImage', 'StartContainer'],
      );
      assert.deepEqual(p.pods[0]!.actions[0]!.changes, [{ field: 'containers[app].image', from: 'busybox:1.36', to: 'busybox:1.37' }]);

      // The same plan from run and sync-once, which then start nothing.
      const run = podctl(['run', '--dry-run', '--node-name', NODE, file]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stdout, /containers\[app\]\.image: busybox:1\.36 → busybox:1\.37/);
      const once = podctl(['sync-once', '--dry-run', '--node-name', NODE, file, '-o', 'json']);
      assert.equal(once.code, 2, once.stderr);
      assert.deepEqual(
        (JSON.parse(once.stdout) as Plan).pods[0]!.actions.map((a) => a.action),
        ['KillContainer', 'PullImage', 'StartContainer'],
      );

      assert.deepEqual(await snapshot(), before, 'nothing in the runtime changed');
      const bad = plan([join(dir.dir, 'missing.yaml')]);
      assert.equal(bad.code, 1, 'an error exits 1, not 2');
    } finally {
      await kubelet.syncTerminatingPod(pod, 0);
      await kubelet.syncTerminatedPod(pod);
    }
  },
);

test('plan on a container that crashed under restartPolicy Always: the restart and the backoff left', async () => {
  const file = join(dir.dir, 'crashy.yaml');
  writeFileSync(file, podYaml('crashy', { command: ['sh', '-c', 'exit 1'] }));
  const pod = await load(file);
  const kubelet = newKubelet({
    runtime: client,
    images: client,
    clock: realClock,
    logRoot: join(dir.dir, 'logs'),
    nodeName: NODE,
    agent: 'plan-e2e',
  });
  const loop = new SyncLoop({ kubelet, pleg: createPleg(kubelet, { relistPeriodMs: 200 }), clock: realClock });
  loop.start();
  try {
    const backingOff = new Promise<IPodStatus>((resolve) => {
      const stop = kubelet.observe({
        onStatus: ({ status }) => {
          const app = status.containerStatuses?.[0];
          if (app?.restartCount !== 1 || app.state?.waiting?.reason !== 'CrashLoopBackOff') return;
          stop();
          resolve(status);
        },
      });
    });
    loop.addPods([pod]);
    await Promise.race([
      backingOff,
      new Promise((_, reject) => setTimeout(() => reject(new Error('no CrashLoopBackOff after the first restart')), 30_000)),
    ]);
    // Freeze the runtime as it is: no agent restarts the container or collects one while plan looks.
    await loop.stop();
    await kubelet.workers.waitIdle();
    const before = await snapshot();

    const json = plan([file, '-o', 'json']);
    assert.equal(json.code, 2, json.stderr);
    const start = (JSON.parse(json.stdout) as Plan).pods[0]!.actions.find((a) => a.action === 'StartContainer')!;
    assert.equal(start.container, 'app');
    assert.equal(start.backoff?.delaySeconds, 10, 'the second restart waits 10 s, as the running loop said');
    assert.ok(start.backoff.remainingSeconds >= 0 && start.backoff.remainingSeconds <= 10);
    const text = plan([file]);
    assert.match(
      text.stdout,
      /\+ start container app: exited with code 1 and restartPolicy is Always; back-off 10s (expires in \d+s|has expired)/,
    );
    assert.deepEqual(await snapshot(), before, 'nothing in the runtime changed');
  } finally {
    await loop.stop();
    await kubelet.syncTerminatingPod(pod, 0);
    await kubelet.syncTerminatedPod(pod);
  }
});

test(
  'watch --trace -o json: config ADD, PLEG ContainerDied, the restart, config REMOVE and the cleanup, in order, each with its ' +
    'CRI calls',
  async () => {
    const manifests = join(dir.dir, 'manifests');
    mkdirSync(manifests, { recursive: true });
    const child = spawn(
      process.execPath,
      [
        BIN,
        'watch',
        manifests,
        '--trace',
        '-o',
        'json',
        '--root-dir',
        join(dir.dir, 'root'),
        '--log-root',
        join(dir.dir, 'watch-logs'),
        '--file-check-frequency',
        '1s',
        '--pleg-relist-period',
        '200ms',
      ],
      { env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT } },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const containers = () => client.listContainers({ labelSelector: { [POD_NAME_LABEL]: 'traced', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
    try {
      await eventually('watch to start', async () => (err.includes('watching') ? true : undefined));
      const file = join(manifests, 'traced.yaml');
      writeFileSync(file, podYaml('traced'));
      const app = await eventually('app to run', async () => (await containers()).find((c) => c.state === 'CONTAINER_RUNNING'));
      // Kill only once the sync that PLEG's ContainerStarted triggers has run: a kill before it
      // lets that sync restart the container ahead of the ContainerDied event (a CI run saw this).
      await eventually('the sync after ContainerStarted', async () => {
        const lines = out
          .slice(0, out.lastIndexOf('\n') + 1)
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as TraceEvent);
        const started = lines.findIndex(
          (e) => e.type === 'pleg' && e.event === 'ContainerStarted' && e.container === 'app' && e.pod.name === 'traced',
        );
        return started >= 0 && lines.slice(started + 1).some((e) => e.type === 'worker' && e.pod.name === 'traced') ? true : undefined;
      });
      const pid = (JSON.parse((await client.containerStatus(app.id, true)).info.info ?? '{}') as { pid?: number }).pid;
      assert.ok(pid && pid > 1);
      process.kill(pid, 'SIGKILL');
      await eventually('app to run again', async () =>
        (await containers()).find((c) => c.state === 'CONTAINER_RUNNING' && c.id !== app.id),
      );
      rmSync(file);
      await eventually('the pod to be removed', async () => ((await containers()).length === 0 ? true : undefined));
      await eventually('the cleanup to be traced', async () => (out.includes('"work":"terminated"') ? true : undefined));
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0, err);
    }

    const events = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as TraceEvent);
    const mine = events.filter((e) =>
      'pod' in e ? e.pod.name === 'traced' : e.type === 'config' ? e.pods.some((p) => p.name === 'traced') : false,
    );
    const writes = (e: TraceEvent) =>
      e.type === 'worker' ? e.calls.map((c) => c.method).filter((m) => !/^(List|.*Status$|Version)/.test(m)) : [];
    let at = 0;
    const next = (what: string, match: (e: TraceEvent) => boolean): TraceEvent => {
      const i = mine.findIndex((e, j) => j >= at && match(e));
      assert.ok(i >= 0, `${what} after event ${at} in:\n${mine.map((e) => JSON.stringify(e)).join('\n')}`);
      at = i + 1;
      return mine[i]!;
    };
    next('config ADD', (e) => e.type === 'config' && e.op === 'ADD');
    const created = next('the first sync', (e) => e.type === 'worker' && e.update === 'create');
    assert.ok(created.type === 'worker' && created.outcome === 'ok');
    assert.deepEqual(writes(created), ['RunPodSandbox', 'CreateContainer', 'StartContainer']);
    const died = next('PLEG ContainerDied', (e) => e.type === 'pleg' && e.event === 'ContainerDied' && e.container === 'app');
    assert.ok(died.type === 'pleg' && died.exitCode === 137 && died.dispatched);
    const restart = next('the restart', (e) => e.type === 'worker' && e.steps.some((s) => s.action === 'StartContainer'));
    assert.ok(restart.type === 'worker' && restart.outcome === 'ok');
    assert.deepEqual(writes(restart), ['CreateContainer', 'StartContainer']);
    for (const c of restart.calls) assert.ok(c.durationMs >= 0, `${c.method} has a latency`);
    next('config REMOVE', (e) => e.type === 'config' && e.op === 'REMOVE');
    const terminating = next('terminating', (e) => e.type === 'worker' && e.work === 'terminating');
    assert.ok(writes(terminating).includes('StopContainer') && writes(terminating).includes('StopPodSandbox'));
    const terminated = next('terminated', (e) => e.type === 'worker' && e.work === 'terminated');
    assert.ok(writes(terminated).includes('RemovePodSandbox'));
  },
);
