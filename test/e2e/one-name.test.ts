import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { podSandboxConfig } from '../../src/core/kuberuntime/config.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { nodeAgentLabel } from '../../src/core/node/paths.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import {
  E2E_NAMESPACE,
  e2eClient,
  eventually,
  podctl,
  removeE2EPods,
  scratchDir,
  startPodctl,
  stopAgentsUnder,
  type RunningPodctl,
} from '../support/e2e.js';

// One pod per namespace/name on the node, whatever command starts it (and one pod per UID).
let client: CriClient;
const dir = scratchDir('e2e-one-name');
const rootDir = join(dir.dir, 'root');
const common = ['--log-root', join(dir.dir, 'logs'), '--root-dir', rootDir];
const started: RunningPodctl[] = [];
const ns = E2E_NAMESPACE.replaceAll('-', '\\-');

function podYaml(name: string, sleep: string, uid?: string): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n  namespace: ${E2E_NAMESPACE}\n${uid ? `  uid: ${uid}\n` : ''}spec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sleep, "${sleep}"]\n`;
}
function file(name: string, text: string): string {
  const path = join(dir.dir, name);
  writeFileSync(path, text);
  return path;
}

/** The ready sandboxes of a pod name and the commands of its running containers. */
async function view(name: string): Promise<{ ready: string[]; running: string[][] }> {
  const selector = { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE };
  const [sandboxes, containers] = await Promise.all([
    client.listPodSandbox({ labelSelector: selector }),
    client.listContainers({ labelSelector: selector }),
  ]);
  const args = async (id: string): Promise<string[]> => {
    const info = JSON.parse((await client.containerStatus(id, true)).info?.info ?? '{}') as {
      runtimeSpec?: { process?: { args?: string[] } };
    };
    return info.runtimeSpec?.process?.args ?? [];
  };
  const running = await Promise.all(containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => args(c.id)));
  return { ready: sandboxes.filter((s) => s.state === 'SANDBOX_READY').map((s) => s.id), running };
}
/** Once exactly one sandbox of the name is ready and one container runs `sleep <arg>` in it. */
const settledOn = (name: string, arg: string) =>
  eventually(
    `one ready sandbox of ${name}, running sleep ${arg}`,
    async () => {
      const v = await view(name);
      return v.ready.length === 1 && v.running.length === 1 && v.running[0]!.includes(arg) ? v.ready[0] : undefined;
    },
    90_000,
  );

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  for (const p of started) p.kill('SIGTERM');
  await Promise.all(started.map((p) => p.done));
  podctl(['agent', 'stop', '--root-dir', rootDir]);
  stopAgentsUnder(dir.dir);
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test(
  'sync-once a, sync-once b (same namespace/name), run --detach a: one ready sandbox each time, the last spec running; ' +
    'sync-once of a pod the agent keeps is refused, naming it',
  async () => {
    const a = file('a.yaml', podYaml('same', '3600'));
    const b = file('b.yaml', podYaml('same', '3601'));
    const first = podctl(['sync-once', a, ...common]);
    assert.equal(first.code, 0, first.stderr);
    const sandbox = await settledOn('same', '3600');

    const second = podctl(['sync-once', b, ...common]);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(await settledOn('same', '3601'), sandbox, 'the same sandbox, its container replaced');

    const detached = podctl(['run', '--detach', a, ...common]);
    assert.equal(detached.code, 0, detached.stderr);
    assert.equal(await settledOn('same', '3600'), sandbox);

    const kept = podctl(['sync-once', b, ...common]);
    assert.equal(kept.code, 1, kept.stdout);
    assert.match(
      kept.stderr,
      /same: refused: handed to the agent by run --detach on .*, which keeps it; change it with podctl run --detach/,
    );

    // The agent stopped, its applied file would bring the pod back at its next start: refused too.
    assert.equal(podctl(['agent', 'stop', '--root-dir', rootDir]).code, 0);
    const stopped = podctl(['sync-once', b, ...common]);
    assert.equal(stopped.code, 1, stopped.stdout);
    assert.match(
      stopped.stderr,
      /same: refused: handed to the agent by run --detach on .*: the agent, stopped now, starts it again at its next start/,
    );
    assert.equal(await settledOn('same', '3600'), sandbox);
    assert.equal(podctl(['delete', 'pod', 'same', '-n', E2E_NAMESPACE, '--root-dir', rootDir]).code, 0);
  },
);

test('sync-once x, then run --detach y of the same namespace/name: one pod, updated', async () => {
  const x = file('x.yaml', podYaml('xy', '3600'));
  const y = file('y.yaml', podYaml('xy', '3602'));
  const once = podctl(['sync-once', x, ...common]);
  assert.equal(once.code, 0, once.stderr);
  const sandbox = await settledOn('xy', '3600');
  const detached = podctl(['run', '--detach', y, ...common]);
  assert.equal(detached.code, 0, detached.stderr);
  assert.equal(await settledOn('xy', '3602'), sandbox);
  assert.equal(podctl(['delete', 'pod', 'xy', '-n', E2E_NAMESPACE, '--root-dir', rootDir]).code, 0);
});

test(
  'two pods with one metadata.uid: validate, run --detach and sync-once refuse the second, naming the first, which keeps its ' +
    'container',
  async () => {
    const uid = '3f2b9c1e-7d4a-4b8e-9f0a-12c34d56e78f';
    const u1 = file('u1.yaml', podYaml('u1', '3600', uid));
    const u2 = file('u2.yaml', podYaml('u2', '3603', uid));
    const validate = podctl(['validate', u1, u2]);
    assert.equal(validate.code, 1, validate.stdout);
    assert.match(validate.stderr + validate.stdout, new RegExp(`metadata\\.uid: ${uid} is already the UID of pod ${ns}/u1`));

    const first = podctl(['run', '--detach', u1, ...common]);
    assert.equal(first.code, 0, first.stderr);
    const sandbox = await settledOn('u1', '3600');
    const detached = podctl(['run', '--detach', u2, ...common]);
    assert.equal(detached.code, 1, detached.stdout);
    assert.match(detached.stderr, new RegExp(`${ns}/u2: rejected at admission: metadata\\.uid ${uid} is already the UID of pod ${ns}/u1`));
    const again = podctl(['sync-once', u2, ...common]);
    assert.equal(again.code, 1, again.stdout);
    assert.match(again.stderr, new RegExp(`${ns}/u2: refused: metadata\\.uid ${uid} is already the UID of pod ${ns}/u1`));
    assert.equal(await settledOn('u1', '3600'), sandbox, 'u1 keeps its sandbox and container');
    assert.deepEqual((await view('u2')).ready, []);
    assert.equal(podctl(['delete', 'pod', 'u1', '-n', E2E_NAMESPACE, '--root-dir', rootDir]).code, 0);
  },
);

test('watch DIR with two files of one namespace/name: one pod, the second file said to be a duplicate', async () => {
  const manifests = join(dir.dir, 'watched');
  mkdirSync(manifests);
  writeFileSync(join(manifests, 'a.yaml'), podYaml('twice', '3600'));
  writeFileSync(join(manifests, 'b.yaml'), podYaml('twice', '3604'));
  const w = startPodctl([
    'watch',
    manifests,
    '--cleanup-on-exit',
    '--root-dir',
    join(dir.dir, 'watch-root'),
    '--log-root',
    join(dir.dir, 'logs'),
  ]);
  started.push(w);
  await settledOn('twice', '3600');
  await eventually(
    'the duplicate reported',
    () => Promise.resolve(/pod .*\/twice is defined twice \(also in .*a\.yaml\); the first is kept/.test(w.stderr()) || undefined),
    30_000,
  );
  w.kill('SIGTERM');
  assert.equal((await w.done).code, 0);
  started.splice(started.indexOf(w), 1);
});

test(
  'two sandboxes of one namespace/name made straight through the CRI (as an older podctl left them): one after ' + 'housekeeping',
  async () => {
    const text = podYaml('dup', '3600');
    const loaded = parseManifestText(text, { kind: 'file', path: '/old/dup.yaml' }, { nodeName: 'x' }).pods[0]!.pod;
    const make = (uid: string, agent: string) =>
      client.runPodSandbox(podSandboxConfig({ ...loaded, metadata: { ...loaded.metadata, uid } }, 0, join(dir.dir, 'logs'), agent));
    // The agent's own, under a path-hashed UID, and one of an older sync-once.
    const mine = await make('0123456789abcdef0123456789abcd01', nodeAgentLabel(rootDir));
    await make('0123456789abcdef0123456789abcd02', 'run');
    const detached = podctl(['run', '--detach', file('dup.yaml', text), ...common]);
    assert.equal(detached.code, 0, detached.stderr);
    assert.equal(await settledOn('dup', '3600'), mine, "the agent's own sandbox is kept, its UID adopted");
    assert.equal(podctl(['delete', 'pod', 'dup', '-n', E2E_NAMESPACE, '--root-dir', rootDir]).code, 0);
  },
);
