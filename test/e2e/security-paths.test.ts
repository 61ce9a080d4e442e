import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL } from '../../src/core/kuberuntime/labels.js';
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

/**
 * Manifest data never leads podctl outside its roots (issue: a traversing
 * metadata.uid let `delete` remove any host directory), validate refuses what
 * the API server refuses before anything exists, and delete leaves no mount
 * and no directory of the pod, whichever root dir started it.
 */
let client: CriClient;
const NS = E2E_NAMESPACE;
const scratch = scratchDir('e2e-secpaths');
const dir = realpathSync(scratch.dir);
const rootDir = join(dir, 'root');
const logRoot = join(dir, 'logs');
const canary = join(dir, 'canary');
const watches: RunningPodctl[] = [];

async function sandboxesOf(name: string) {
  return client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: NS } });
}

/** Lines of this process's mount table that name the pod's UID (its tmpfs volumes and subPath binds). */
function mountsOf(uid: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.includes(uid));
}

function canaryListing(): string {
  return `${readdirSync(canary).sort().join(',')}:${readFileSync(join(canary, 'keep'), 'utf8')}`;
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  mkdirSync(canary);
  writeFileSync(join(canary, 'keep'), 'precious');
});

after(async () => {
  for (const w of watches) {
    w.kill('SIGTERM');
    await w.done;
  }
  // The agent the good pod's run --detach started.
  const stop = podctl(['agent', 'stop', '--root-dir', rootDir]);
  assert.equal(stop.code, 0, stop.stderr);
  await removeE2EPods(client);
  client.close();
  assert.equal(readFileSync(join(canary, 'keep'), 'utf8'), 'precious', 'the canary outside the roots survived the whole suite');
  scratch.cleanup();
});

test(
  'a manifest with a traversing metadata.uid is refused by validate, run, sync-once and watch; the canary outside the roots is ' +
    'untouched',
  async () => {
    // From <log-root>/<ns>_<name>_<uid> or <root-dir>/pods/<uid>, enough ../ reach /, then the canary.
    const uid = `${'../'.repeat(12)}${canary.slice(1)}`;
    const file = join(dir, 'traversal.yaml');
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Pod\nmetadata: {name: traversal, namespace: ${NS}, uid: "${uid}"}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`,
    );
    const before = canaryListing();
    const common = ['--root-dir', rootDir, '--log-root', logRoot];
    const v = podctl(['validate', file]);
    assert.equal(v.code, 1, v.stdout + v.stderr);
    assert.match(v.stdout + v.stderr, /metadata\.uid: ".*" is invalid; expected a UID such as .* \(RFC 4122\) or 32 hex digits/);
    for (const cmd of [['run', '--detach'], ['sync-once']]) {
      const r = podctl([...cmd, file, ...common]);
      assert.equal(r.code, 2, `${cmd[0]}: ${r.stderr}`);
      assert.match(r.stderr, /traversal\.yaml: document 1 \(Pod "traversal"\): metadata\.uid: .* is invalid/, cmd[0]);
    }
    const w = startPodctl([
      'watch',
      file,
      '--root-dir',
      join(dir, 'watch-root'),
      '--log-root',
      join(dir, 'watch-logs'),
      '--file-check-frequency',
      '1s',
    ]);
    watches.push(w);
    await eventually(
      'the watch to report metadata.uid',
      async () => (/metadata\.uid: .* is invalid/.test(w.stdout() + w.stderr()) ? true : undefined),
      60_000,
    );
    // The watch answers on its socket once it has loaded: by then it decided, and it created nothing.
    await eventually('the watch to answer get pods', async () => {
      const r = await podctlAsync(['get', 'pods', '-n', NS, '--root-dir', join(dir, 'watch-root')]);
      return r.code === 0 ? r : undefined;
    });
    assert.deepEqual(await sandboxesOf('traversal'), [], 'no sandbox for the refused pod');
    w.kill('SIGTERM');
    await w.done;

    // A full run and delete cycle of a good pod next to it leaves the canary as it was.
    const good = join(dir, 'good.yaml');
    writeFileSync(
      good,
      `apiVersion: v1\nkind: Pod\nmetadata: {name: good, namespace: ${NS}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`,
    );
    const run = podctl(['run', '--detach', good, ...common]);
    assert.equal(run.code, 0, run.stderr);
    const del = podctl(['delete', 'pod', 'good', '-n', NS, '--grace-period', '0', '--root-dir', rootDir]);
    assert.equal(del.code, 0, del.stderr);
    assert.deepEqual(await sandboxesOf('good'), []);
    assert.equal(canaryListing(), before);
    assert.equal(existsSync(join(canary, 'etc-hosts')), false);
    assert.equal(existsSync(join(canary, 'containers')), false);
  },
);

test('what the API server refuses is a validate error naming the field, and sync-once of it creates no sandbox', async () => {
  const docs: [string, string, string][] = [
    [
      'subpath',
      'spec.containers[0].volumeMounts[0].subPath',
      `  volumes: [{name: v, emptyDir: {}}]\n  containers:\n  - {name: app, image: busybox:1.36, volumeMounts: [{name: v, mountPath: /v, subPath: ../../etc}]}`,
    ],
    [
      'subpath-abs',
      'spec.containers[0].volumeMounts[0].subPath',
      `  volumes: [{name: v, emptyDir: {}}]\n  containers:\n  - {name: app, image: busybox:1.36, volumeMounts: [{name: v, mountPath: /v, subPath: /etc}]}`,
    ],
    [
      'items',
      'spec.volumes[0].configMap.items[0].path',
      `  volumes: [{name: v, configMap: {name: c, items: [{key: k, path: ../x}]}}]\n  containers:\n  - {name: app, image: busybox:1.36}`,
    ],
    [
      'items-abs',
      'spec.volumes[0].secret.items[0].path',
      `  volumes: [{name: v, secret: {secretName: s, items: [{key: k, path: /etc/x}]}}]\n  containers:\n  - {name: app, image: busybox:1.36}`,
    ],
    ['deadline', 'spec.activeDeadlineSeconds', `  activeDeadlineSeconds: -5\n  containers:\n  - {name: app, image: busybox:1.36}`],
    [
      'cpu',
      'spec.containers[0].resources.limits["cpu"]',
      `  containers:\n  - {name: app, image: busybox:1.36, resources: {limits: {cpu: "-1"}}}`,
    ],
    [
      'request',
      'spec.containers[0].resources.requests["memory"]',
      `  containers:\n  - {name: app, image: busybox:1.36, resources: {requests: {memory: 64Mi}, limits: {memory: 32Mi}}}`,
    ],
    ['nul', 'spec.containers[0].env[0].value', `  containers:\n  - {name: app, image: busybox:1.36, env: [{name: A, value: "a\\0b"}]}`],
    [
      'bigenv',
      'spec.containers[0].env[0].value',
      `  containers:\n  - {name: app, image: busybox:1.36, env: [{name: A, value: "${'x'.repeat(200_000)}"}]}`,
    ],
    ['envname', 'spec.containers[0].env[0].name', `  containers:\n  - {name: app, image: busybox:1.36, env: [{name: "A=B", value: v}]}`],
  ];
  const annotations = `{a: "${'y'.repeat(150_000)}", b: "${'y'.repeat(150_000)}"}`;
  const text = [
    ...docs.map(([name, , spec]) => `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${NS}}\nspec:\n${spec}\n`),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: annotations, namespace: ${NS}, annotations: ${annotations}}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n`,
  ].join('---\n');
  const file = join(dir, 'api-rules.yaml');
  writeFileSync(file, text);
  const v = podctl(['validate', file, '-o', 'json']);
  assert.equal(v.code, 1, v.stderr);
  const { findings } = JSON.parse(v.stdout) as { findings: { name?: string; field: string; severity: string }[] };
  const errors = new Set(findings.filter((f) => f.severity === 'error').map((f) => `${f.name}|${f.field}`));
  for (const [name, field] of [...docs, ['annotations', 'metadata.annotations']]) {
    assert.ok(errors.has(`${name}|${field}`), `${name}: expected an error on ${field}; got ${[...errors].join(', ')}`);
  }

  const r = podctl(['sync-once', file, '--root-dir', rootDir, '--log-root', logRoot]);
  assert.equal(r.code, 2, r.stderr);
  for (const [name] of [...docs, ['annotations']]) assert.deepEqual(await sandboxesOf(name!), [], `${name}: no sandbox`);
});

/** A pod with every volume type podctl supports, and a subPath mount. */
function everyVolumePod(name: string, hostDir: string): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-cm, namespace: ${NS}}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: ${name}-secret, namespace: ${NS}}
stringData: {password: pw}
---
apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${NS}, labels: {app: vols}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    volumeMounts:
    - {name: disk, mountPath: /disk}
    - {name: mem, mountPath: /mem}
    - {name: host, mountPath: /host}
    - {name: cm, mountPath: /cm}
    - {name: secret, mountPath: /secret}
    - {name: downward, mountPath: /downward}
    - {name: projected, mountPath: /projected}
    - {name: disk, mountPath: /sub, subPath: nested/dir}
  volumes:
  - {name: disk, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory}}
  - {name: host, hostPath: {path: ${hostDir}, type: DirectoryOrCreate}}
  - {name: cm, configMap: {name: ${name}-cm}}
  - {name: secret, secret: {secretName: ${name}-secret}}
  - {name: downward, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}
  - name: projected
    projected:
      sources:
      - configMap: {name: ${name}-cm}
      - secret: {name: ${name}-secret}
`;
}

/** Deletes the pod with --root-dir deleteRoot and checks that no mount and no directory of it remains. */
async function deleteAndCheck(name: string, podRoot: string, podLogs: string, deleteRoot: string): Promise<void> {
  const sandbox = (await sandboxesOf(name))[0];
  assert.ok(sandbox, `${name} has a sandbox`);
  const uid = sandbox.labels[POD_UID_LABEL]!;
  const podDir = join(podRoot, 'pods', uid);
  const logDir = join(podLogs, `${NS}_${name}_${uid}`);
  assert.ok(
    mountsOf(uid).length >= 4,
    `tmpfs for the Memory emptyDir, secret, downwardAPI and projected volumes, and the subPath bind: ${mountsOf(uid).join('\n')}`,
  );
  assert.equal(existsSync(podDir), true);
  assert.equal(existsSync(logDir), true);
  const del = podctl(['delete', 'pod', name, '-n', NS, '--grace-period', '0', '--root-dir', deleteRoot]);
  assert.equal(del.code, 0, del.stderr);
  assert.deepEqual(await sandboxesOf(name), []);
  assert.deepEqual(mountsOf(uid), [], 'no mount of the pod remains');
  assert.equal(existsSync(podDir), false, 'no pod directory under the root dir');
  assert.equal(existsSync(logDir), false, 'no log directory');
  assert.deepEqual(readdirSync(join(podRoot, 'pods')), [], 'nothing else of the pod under the root dir');
}

test('delete --grace-period 0 of a pod with every volume type leaves no mount and no directory of it', async () => {
  const root = join(dir, 'vol-root');
  const logs = join(dir, 'vol-logs');
  const file = join(dir, 'volumes.yaml');
  writeFileSync(file, everyVolumePod('allvols', join(dir, 'host-a')));
  const r = podctl(['sync-once', file, '--root-dir', root, '--log-root', logs]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  await deleteAndCheck('allvols', root, logs, root);
  assert.equal(existsSync(join(dir, 'host-a')), true, "a hostPath is the host's and stays");
});

test('delete with another --root-dir than the watch that started the pod still removes every mount and directory', async () => {
  const root = join(dir, 'watch2-root');
  const logs = join(dir, 'watch2-logs');
  const file = join(dir, 'watched.yaml');
  writeFileSync(file, everyVolumePod('watched', join(dir, 'host-b')));
  const w = startPodctl([
    'watch',
    file,
    '--root-dir',
    root,
    '--log-root',
    logs,
    '--file-check-frequency',
    '1s',
    '--pleg-relist-period',
    '200ms',
  ]);
  watches.push(w);
  await eventually(
    'the watched pod to run',
    async () => {
      const cs = await client.listContainers({ labelSelector: { [POD_NAME_LABEL]: 'watched', [POD_NAMESPACE_LABEL]: NS } });
      return cs.some((c) => c.state === 'CONTAINER_RUNNING') ? true : undefined;
    },
    120_000,
  );
  // SIGTERM stops the watch and leaves its pods running, as the kubelet does.
  w.kill('SIGTERM');
  const done = await w.done;
  assert.equal(done.code, 0, done.stderr);
  await deleteAndCheck('watched', root, logs, join(dir, 'another-root'));
});
