import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import {
  E2E_NAMESPACE,
  e2eClient,
  eventually,
  podctl,
  podctlAsync,
  removeE2EPods,
  scratchDir,
  startPodctl,
  type RunningPodctl,
} from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-resize');
const rootDir = join(dir.dir, 'root');
const manifests = join(dir.dir, 'manifests');
let watch: RunningPodctl;

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  mkdirSync(manifests);
  watch = startPodctl([
    'watch',
    manifests,
    '--root-dir',
    rootDir,
    '--log-root',
    join(dir.dir, 'logs'),
    '--file-check-frequency',
    '1s',
    '--trace',
  ]);
});

after(async () => {
  watch.interrupt();
  await watch.done;
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

function podYaml(name: string, cpu: string, memory: string, extra = ''): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    resources: {limits: {cpu: ${cpu}, memory: ${memory}}}\n${extra}`;
}

async function getPod(name: string): Promise<IPod | undefined> {
  const r = await podctlAsync(['get', 'pods', name, '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', rootDir]);
  return r.code === 0 ? (JSON.parse(r.stdout) as IPod) : undefined;
}

const cgroup = (name: string) =>
  podctl([
    'exec',
    '-n',
    E2E_NAMESPACE,
    name,
    '--root-dir',
    rootDir,
    '--',
    'sh',
    '-c',
    'cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat ' +
      '/sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max',
  ])
    .stdout.trim()
    .split('\n');

test(
  'raising cpu 250m → 500m and memory 64Mi → 128Mi in the watched file resizes the container in place: same container, no ' +
    'restart, new cgroup, new status; plan names it',
  async () => {
    const file = join(manifests, 'web.yaml');
    writeFileSync(file, podYaml('web', '250m', '64Mi'));
    const first = await eventually(
      'web running',
      async () => {
        const p = await getPod('web');
        return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
      },
      60_000,
    );
    const id = first.status!.containerStatuses![0]!.containerID;
    assert.deepEqual(cgroup('web'), ['25000', String(64 * 2 ** 20)]);

    const edited = join(dir.dir, 'web-edited.yaml');
    writeFileSync(edited, podYaml('web', '500m', '128Mi'));
    const plan = podctl(['plan', edited, '--root-dir', rootDir]);
    assert.equal(plan.code, 2, plan.stdout + plan.stderr);
    assert.match(plan.stdout, /~ resize container app: cpu limit 250m → 500m, memory limit 64Mi → 128Mi \(no restart\)/);
    const json = JSON.parse(podctl(['plan', edited, '--root-dir', rootDir, '-o', 'json']).stdout) as {
      pods: { actions: { action: string }[] }[];
    };
    assert.deepEqual(
      json.pods[0]!.actions.map((a) => a.action),
      ['Resize'],
    );

    writeFileSync(file, podYaml('web', '500m', '128Mi'));
    const resized = await eventually(
      'the status to show the new resources',
      async () => {
        const p = await getPod('web');
        return p?.status?.containerStatuses?.[0]?.resources?.limits?.memory === '128Mi' ? p : undefined;
      },
      30_000,
    );
    const cs = resized.status!.containerStatuses![0]!;
    assert.equal(cs.containerID, id, 'the same container');
    assert.equal(cs.restartCount, 0);
    assert.deepEqual(cs.resources?.limits, { cpu: '500m', memory: '128Mi' });
    assert.deepEqual(cgroup('web'), ['50000', String(128 * 2 ** 20)]);
    // The trace names the step and its CRI call (waitFor matches the output so far, or waits for it).
    await watch.waitFor(/web[^\n]*ResizeContainer app/, 30_000);
    await watch.waitFor(/UpdateContainerResources/, 30_000);
    const events = podctl(['events', '-n', E2E_NAMESPACE, '--for', 'pod/web', '--root-dir', rootDir]);
    assert.match(events.stdout, /Resized.*Container app resized in place: cpu limit 250m → 500m, memory limit 64Mi → 128Mi/);
    assert.equal(podctl(['plan', file, '--root-dir', rootDir]).code, 0, 'in its desired state after');
  },
);

test('the same edit with resizePolicy RestartContainer for memory restarts the container', async () => {
  const policy = '    resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]\n';
  const file = join(manifests, 'strict.yaml');
  writeFileSync(file, podYaml('strict', '250m', '64Mi', policy));
  const first = await eventually(
    'strict running',
    async () => {
      const p = await getPod('strict');
      return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    },
    60_000,
  );
  const id = first.status!.containerStatuses![0]!.containerID;
  writeFileSync(file, podYaml('strict', '500m', '128Mi', policy));
  const restarted = await eventually(
    'a new container running',
    async () => {
      const p = await getPod('strict');
      const c = p?.status?.containerStatuses?.[0];
      return c?.state?.running && c.containerID !== id ? c : undefined;
    },
    60_000,
  );
  assert.equal(restarted.restartCount, 1);
  assert.deepEqual(cgroup('strict'), ['50000', String(128 * 2 ** 20)]);
});
