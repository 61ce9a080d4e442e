import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { CONTAINER_NAME_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_ENDPOINT, E2E_NAMESPACE, e2eClient, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-run');
const logRoot = scratchDir('e2e-run-logs');
// A state dir of its own: run --detach starts an agent there, stopped (by the PID in its lock) at the end.
const rootDir = join(dir.dir, 'root');
const common = ['--log-root', logRoot.dir, '--root-dir', rootDir];
const ns = E2E_NAMESPACE.replaceAll('-', '\\-');

function podYaml(name: string, containers: { name: string; command: string[]; image?: string }[], restartPolicy = 'Always'): string {
  const cs = containers
    .map((c) => `  - name: ${c.name}\n    image: ${c.image ?? 'busybox:1.36'}\n    command: ${JSON.stringify(c.command)}`)
    .join('\n');
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n  namespace: ${E2E_NAMESPACE}\nspec:\n  restartPolicy: ${restartPolicy}\n  terminationGracePeriodSeconds: 2\n  containers:\n${cs}\n`;
}

async function runtimeView(name: string) {
  const selector = { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE };
  const sandboxes = await client.listPodSandbox({ labelSelector: selector });
  const containers = await client.listContainers({ labelSelector: selector });
  return { sandboxes, containers };
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  assert.equal(podctl(['agent', 'stop', '--root-dir', rootDir]).code, 0);
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
  logRoot.cleanup();
});

test('run --detach: the pod reaches Running; running the same file again changes nothing', async () => {
  const file = join(dir.dir, 'one.yaml');
  writeFileSync(file, podYaml('one', [{ name: 'app', command: ['sleep', '3600'] }]));
  const first = podctl(['run', '--detach', file, ...common]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, new RegExp(`${ns}/one\\s+Running\\s+1/1`));
  const before = await runtimeView('one');
  assert.equal(before.sandboxes.length, 1);
  assert.equal(before.containers.length, 1);
  assert.equal(before.containers[0]!.state, 'CONTAINER_RUNNING');

  const second = podctl(['run', '--detach', file, ...common]);
  assert.equal(second.code, 0, second.stderr);
  const afterRun = await runtimeView('one');
  assert.deepEqual(
    afterRun.sandboxes.map((s) => s.id),
    before.sandboxes.map((s) => s.id),
  );
  assert.deepEqual(
    afterRun.containers.map((c) => c.id),
    before.containers.map((c) => c.id),
  );
});

test('changing one container command replaces just that container', async () => {
  const file = join(dir.dir, 'two.yaml');
  writeFileSync(
    file,
    podYaml('two', [
      { name: 'a', command: ['sleep', '3600'] },
      { name: 'b', command: ['sleep', '3601'] },
    ]),
  );
  assert.equal(podctl(['run', '--detach', file, ...common]).code, 0);
  const before = await runtimeView('two');
  const idOf = (view: typeof before, name: string) =>
    view.containers.find((c) => c.labels[CONTAINER_NAME_LABEL] === name && c.state === 'CONTAINER_RUNNING')?.id;

  writeFileSync(
    file,
    podYaml('two', [
      { name: 'a', command: ['sleep', '3600'] },
      { name: 'b', command: ['sleep', '4000'] },
    ]),
  );
  const r = podctl(['run', '--detach', file, ...common]);
  assert.equal(r.code, 0, r.stderr);
  const afterEdit = await runtimeView('two');
  assert.deepEqual(
    afterEdit.sandboxes.map((s) => s.id),
    before.sandboxes.map((s) => s.id),
    'same sandbox',
  );
  assert.equal(idOf(afterEdit, 'a'), idOf(before, 'a'), 'container a untouched');
  assert.notEqual(idOf(afterEdit, 'b'), idOf(before, 'b'), 'container b replaced');
  assert.ok(idOf(afterEdit, 'b'));
});

test('sync-once: an image the registry lacks fails at once, saying so, with a non-zero exit; a status line for each change', async () => {
  const file = join(dir.dir, 'noimage.yaml');
  writeFileSync(file, podYaml('noimage', [{ name: 'app', command: ['true'], image: 'busybox:0.0-missing' }]));
  // Retries enough for minutes of waiting: a pull the runtime answers NOT_FOUND ends the pod's run after the first sync.
  const r = podctl(['sync-once', file, '--max-retries', '10', '--retry-delay', '1s', '-o', 'json', ...common]);
  assert.equal(r.code, 1, r.stderr);
  const pod = JSON.parse(r.stdout);
  const waiting = pod.status.containerStatuses[0].state.waiting;
  assert.equal(waiting.reason, 'ErrImagePull');
  assert.match(waiting.message, /busybox:0\.0-missing.*not found/);
  assert.match(r.stderr, new RegExp(`^\\d\\d:\\d\\d:\\d\\d ${ns}/noimage  ErrImagePull  0/1  app=ErrImagePull$`, 'm'));
  assert.match(r.stderr, new RegExp(`1 of 1 pod\\(s\\) failed: ${ns}/noimage`));
  const table = podctl(['sync-once', file, '--max-retries', '10', '-o', 'table', ...common]);
  assert.equal(table.code, 1);
  assert.match(table.stdout.replace(/[│\s]+/g, ' '), /FAILED: can never start: app: failed to pull image "busybox:0\.0-missing"/);
});

test('sync-once on a directory of three pods, one of which cannot start: two run, table printed, exit non-zero', async () => {
  const sub = join(dir.dir, 'three');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(sub);
  writeFileSync(join(sub, 'a.yaml'), podYaml('three-a', [{ name: 'app', command: ['sleep', '3600'] }]));
  writeFileSync(join(sub, 'b.yaml'), podYaml('three-b', [{ name: 'app', command: ['sleep', '3600'] }]));
  writeFileSync(join(sub, 'c.yaml'), podYaml('three-c', [{ name: 'app', command: ['sh', '-c', 'exit 3'] }]));
  const r = podctl(['sync-once', sub, '--max-retries', '2', '--retry-delay', '300ms', ...common]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`${ns}/three-a.*Running.*ok`));
  assert.match(r.stdout, new RegExp(`${ns}/three-b.*Running.*ok`));
  assert.match(r.stdout, new RegExp(`${ns}/three-c.*FAILED`));
  for (const name of ['three-a', 'three-b']) {
    const view = await runtimeView(name);
    assert.equal(view.containers.filter((c) => c.state === 'CONTAINER_RUNNING').length, 1, name);
  }
});

test('sync-once: a pod that runs to completion under Never counts as done (Succeeded)', async () => {
  const file = join(dir.dir, 'job.yaml');
  writeFileSync(file, podYaml('job', [{ name: 'app', command: ['sh', '-c', 'echo done'] }], 'Never'));
  const r = podctl(['sync-once', file, '--retry-delay', '300ms', '-o', 'json', ...common]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const pod = JSON.parse(r.stdout);
  assert.equal(pod.status.phase, 'Succeeded');
  assert.equal(pod.status.containerStatuses[0].state.terminated.reason, 'Completed');
});

test('an invalid manifest is rejected with file, document and field, and nothing is created', async () => {
  const cases: [string, string, RegExp][] = [
    [
      'bad-yaml.yaml',
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: indent\n',
      /bad-yaml\.yaml: document 1: invalid YAML at line \d+, column \d+/,
    ],
    [
      'no-containers.yaml',
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: nocont\n  namespace: ${E2E_NAMESPACE}\nspec: {}\n`,
      /no-containers\.yaml: document 1 \(Pod "nocont"\): spec\.containers: required/,
    ],
    [
      'dup.yaml',
      `---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n---\n${podYaml('dup', [
        { name: 'app', command: ['true'] },
        { name: 'app', command: ['true'] },
      ])}`,
      /dup\.yaml: document 2 \(Pod "dup"\): spec\.containers\[1\]\.name: duplicate container name "app"/,
    ],
    [
      'badname.yaml',
      podYaml('Bad_Name', [{ name: 'app', command: ['true'] }]),
      /badname\.yaml: document 1 \(Pod "Bad_Name"\): metadata\.name: "Bad_Name" is invalid; expected a DNS-1123 subdomain/,
    ],
    [
      'misplaced.yaml',
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: misplaced\n  namespace: ${E2E_NAMESPACE}\n  restartPolicy: Never\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n`,
      /misplaced\.yaml: document 1 \(Pod "misplaced"\): metadata\.restartPolicy: unknown field; restartPolicy belongs in spec/,
    ],
  ];
  // A good pod next to each bad one must not start either.
  const good = join(dir.dir, 'good-neighbour.yaml');
  writeFileSync(good, podYaml('neighbour', [{ name: 'app', command: ['sleep', '3600'] }]));
  for (const [name, text, expected] of cases) {
    const file = join(dir.dir, name);
    writeFileSync(file, text);
    for (const cmd of ['run', 'sync-once']) {
      const r = podctl([cmd, ...(cmd === 'run' ? ['--detach'] : []), good, file, ...common]);
      assert.equal(r.code, 2, `${cmd} ${name}: ${r.stderr}`);
      assert.match(r.stderr, expected, `${cmd} ${name}`);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    }
  }
  assert.equal((await runtimeView('neighbour')).sandboxes.length, 0);
  assert.equal((await runtimeView('nocont')).sandboxes.length, 0);
  assert.equal((await runtimeView('dup')).sandboxes.length, 0);
});

test('run in the foreground: SIGTERM terminates its pods gracefully, removes them and exits 0', async () => {
  const { spawn } = await import('node:child_process');
  const file = join(dir.dir, 'fg.yaml');
  // A shell that traps TERM proves the container got SIGTERM before any SIGKILL. It says so in a host
  // directory too, since the pod's log directory goes with the pod.
  const hostOut = join(dir.dir, 'fg-out');
  writeFileSync(
    file,
    podYaml('fg', [
      { name: 'app', command: ['sh', '-c', "trap 'echo got-sigterm | tee /out/said; exit 0' TERM; while true; do sleep 0.2; done"] },
    ]) +
      `    volumeMounts: [{name: out, mountPath: /out}]\n  volumes: [{name: out, hostPath: {path: ${hostOut}, type: DirectoryOrCreate}}]\n`,
  );
  const child = spawn(process.execPath, [join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js'), 'run', file, ...common], {
    env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT },
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  for (let i = 0; i < 600 && !new RegExp(`${ns}/fg\\s+Running`).test(out); i++) await new Promise((r) => setTimeout(r, 100));
  assert.match(out, new RegExp(`${ns}/fg\\s+Running`));
  assert.equal((await runtimeView('fg')).containers.length, 1);
  child.kill('SIGTERM');
  assert.equal(await exited, 0, out);
  assert.match(out, /stopping: terminating 1 pod\(s\) gracefully/);
  const view = await runtimeView('fg');
  assert.equal(view.sandboxes.length, 0, 'sandbox removed');
  assert.equal(view.containers.length, 0, 'containers removed');
  const { readdirSync, readFileSync } = await import('node:fs');
  assert.equal(readFileSync(join(hostOut, 'said'), 'utf8'), 'got-sigterm\n');
  assert.deepEqual(
    readdirSync(logRoot.dir).filter((d) => d.startsWith(`${E2E_NAMESPACE}_fg_`)),
    [],
    'the log directory went with the pod',
  );
});
