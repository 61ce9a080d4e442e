import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { CONTAINER_NAME_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import {
  E2E_ENDPOINT,
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

/** What the suite did not run before: watch --table on a terminal, --cleanup-on-exit, plan --prune, delete --grace-period N. */
let client: CriClient;
const dir = scratchDir('e2e-cli-gaps');
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');
const started: RunningPodctl[] = [];

const pod = (name: string, command: string[], grace = 2) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: ${grace}\n  containers:\n  - {name: app, image: busybox:1.36, command: ${JSON.stringify(command)}}\n`;

const sandboxes = (name: string) =>
  client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
const runningApp = async (name: string) =>
  (
    await client.listContainers({
      labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE, [CONTAINER_NAME_LABEL]: 'app' },
    })
  ).find((c) => c.state === 'CONTAINER_RUNNING');

function manifestsDir(name: string, text: string): string {
  const d = join(dir.dir, `${name}-manifests`);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, `${name}.yaml`), text);
  return d;
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  for (const p of started) {
    p.kill('SIGKILL');
    await p.done;
  }
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test('watch --table on a terminal draws the pods as kubectl get pods shows them', async () => {
  const manifests = manifestsDir('tabled', pod('tabled', ['sleep', '3600']));
  const cmd = [
    process.execPath,
    BIN,
    'watch',
    manifests,
    '--table',
    '--root-dir',
    join(dir.dir, 'table-root'),
    '--log-root',
    join(dir.dir, 'logs'),
  ]
    .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
    .join(' ');
  // script(1) gives the watch a pseudo-terminal; its output is the screen.
  const term = spawn('script', ['-qfec', cmd, '/dev/null'], {
    env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT, TERM: 'xterm' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  term.stdout.on('data', (d: Buffer) => (screen += d.toString()));
  const closed = new Promise<void>((r) => term.on('close', () => r()));
  try {
    await eventually(
      'the table with the pod running',
      async () =>
        /NAMESPACE\s+NAME\s+READY\s+STATUS/.test(screen) && new RegExp(`${E2E_NAMESPACE}\\s+tabled\\s+1/1\\s+Running`).test(screen)
          ? true
          : undefined,
      90_000,
    );
    assert.ok(screen.includes(`${String.fromCharCode(27)}[2J`), 'the table is redrawn in place (screen cleared), not printed line by line');
  } finally {
    // Ending script(1) by its PID hangs up the terminal, and the watch with it; the pod keeps running.
    term.kill('SIGTERM');
    await closed;
  }
});

test('watch --cleanup-on-exit terminates and removes its pods when stopped', async () => {
  const manifests = manifestsDir('cleaned', pod('cleaned', ['sleep', '3600']));
  const w = startPodctl([
    'watch',
    manifests,
    '--cleanup-on-exit',
    '--root-dir',
    join(dir.dir, 'cleanup-root'),
    '--log-root',
    join(dir.dir, 'logs'),
  ]);
  started.push(w);
  await eventually('cleaned running', () => runningApp('cleaned'), 90_000);
  w.kill('SIGTERM');
  const done = await w.done;
  assert.equal(done.code, 0, done.stderr);
  assert.deepEqual(await sandboxes('cleaned'), [], 'its sandbox is gone once the watch has exited');
});

test('plan --prune names a podctl pod no file describes (RemovePod, exit 2); without --prune it says nothing of it', async () => {
  const orphanFile = join(dir.dir, 'orphan.yaml');
  writeFileSync(orphanFile, pod('orphan', ['sleep', '3600']));
  const once = podctl(['sync-once', orphanFile, '--root-dir', join(dir.dir, 'once-root'), '--log-root', join(dir.dir, 'logs')]);
  assert.equal(once.code, 0, once.stderr);
  const other = join(dir.dir, 'other.yaml');
  writeFileSync(other, pod('other', ['sleep', '3600']));

  const plain = podctl(['plan', other, '-o', 'json']);
  const pods = (JSON.parse(plain.stdout) as { pods: { name: string; actions: { action: string }[] }[] }).pods;
  assert.ok(!pods.some((p) => p.name === 'orphan'), 'plan of one file does not threaten other pods');

  const pruned = podctl(['plan', other, '--prune']);
  assert.equal(pruned.code, 2, pruned.stderr);
  assert.match(pruned.stdout, new RegExp(`${E2E_NAMESPACE}/orphan:\\n\\s+- remove pod`));
  const json = podctl(['plan', other, '--prune', '-o', 'json']);
  const orphan = (JSON.parse(json.stdout) as { pods: { name: string; actions: { action: string }[] }[] }).pods.find(
    (p) => p.name === 'orphan',
  );
  assert.deepEqual(
    orphan?.actions.map((a) => a.action),
    ['RemovePod'],
  );
  assert.equal((await sandboxes('orphan')).length, 1, 'plan changed nothing');
});

test("delete --grace-period 3: a container ignoring SIGTERM is killed at the flag's grace, not its own 30 s", async () => {
  // The container says what it lived through in a host directory: SIGTERM (trapped, then ignored), and
  // "survived" once 20 s have passed. With the spec's 30 s it would reach "survived" and exit by itself;
  // killed at the flag's 3 s, it never does. Its own record, not the time the delete took.
  const record = join(dir.dir, 'stubborn-record');
  mkdirSync(record, { recursive: true });
  const file = join(dir.dir, 'stubborn.yaml');
  const script =
    'trap "echo term >> /record/out" TERM; echo started >> /record/out; i=0; while [ $i -lt 20 ]; do sleep 1; i=$((i+1)); done; echo survived >> /record/out';
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Pod\nmetadata: {name: stubborn, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 30\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: ${JSON.stringify(['sh', '-c', script])}\n    volumeMounts: [{name: record, mountPath: /record}]\n  volumes:\n  - {name: record, hostPath: {path: ${record}, type: Directory}}\n`,
  );
  const once = podctl(['sync-once', file, '--root-dir', join(dir.dir, 'stubborn-root'), '--log-root', join(dir.dir, 'logs')]);
  assert.equal(once.code, 0, once.stderr);
  assert.ok(await runningApp('stubborn'));
  await eventually('the container to start its count', async () =>
    existsSync(join(record, 'out')) && readFileSync(join(record, 'out'), 'utf8') === 'started\n' ? true : undefined,
  );
  const del = await podctlAsync([
    'delete',
    'pod',
    'stubborn',
    '-n',
    E2E_NAMESPACE,
    '--grace-period',
    '3',
    '--root-dir',
    join(dir.dir, 'stubborn-root'),
  ]);
  assert.equal(del.code, 0, del.stderr);
  assert.deepEqual(await sandboxes('stubborn'), []);
  // SIGTERM first (the trap ran), then SIGKILL before the count could end.
  assert.equal(readFileSync(join(record, 'out'), 'utf8'), 'started\nterm\n');
});
