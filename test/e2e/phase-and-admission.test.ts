import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_NAMESPACE, e2eClient, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-phase');
// A state dir of its own: run --detach starts an agent there, stopped at the end.
const rootDir = join(dir.dir, 'root');
const common = ['--root-dir', rootDir, '--log-root', join(dir.dir, 'logs')];
// The wait may take up to --timeout; the command is given more, so that a hang fails on its exit code.
const detach = ['run', '--detach', '--timeout', '60s', ...common];
const commandTimeout = { timeoutMs: 120_000 };

function manifest(name: string, containers: string, extra = ''): string {
  const file = join(dir.dir, `${name}.yaml`);
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n${extra}  containers:\n${containers}`,
  );
  return file;
}

const sandboxesOf = async (name: string) =>
  client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: name, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  const stop = podctl(['agent', 'stop', '--root-dir', rootDir]);
  assert.equal(stop.code, 0, stop.stderr);
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

const strictPod = () =>
  manifest(
    'strict',
    '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n',
    '  securityContext: {runAsUser: 1000, supplementalGroupsPolicy: Strict}\n',
  );
const STRICT = /SupplementalGroupsPolicy=Strict is not supported in this node/;

test(
  'supplementalGroupsPolicy: Strict is refused by run, run --detach and sync-once with the reason, and nothing is created; ' +
    'validate says this runtime will refuse it',
  async () => {
    const file = strictPod();
    const v = podctl(['validate', file]);
    assert.match(
      v.stdout,
      /spec\.securityContext\.supplementalGroupsPolicy: this runtime will refuse it: SupplementalGroupsPolicyNotSupported: SupplementalGroupsPolicy=Strict is not supported in this node/,
    );

    const run = podctl(['run', file, ...common], commandTimeout);
    assert.equal(run.code, 1, run.stdout + run.stderr);
    assert.match(run.stderr, STRICT);

    const detached = podctl([...detach, file], commandTimeout);
    assert.equal(detached.code, 1, detached.stdout + detached.stderr);
    assert.match(detached.stderr, STRICT);
    assert.match(detached.stderr, /nothing was handed to the agent/);

    const once = podctl(['sync-once', file, '-o', 'json', ...common], commandTimeout);
    assert.equal(once.code, 1, once.stdout + once.stderr);
    const status = (JSON.parse(once.stdout) as { status: { phase: string; reason: string; message: string } }).status;
    assert.deepEqual([status.phase, status.reason], ['Failed', 'SupplementalGroupsPolicyNotSupported']);
    assert.match(status.message, STRICT);

    assert.deepEqual(await sandboxesOf('strict'), [], 'a refused pod gets no sandbox');
  },
);

test(
  'run --detach of a pod whose first container exits 0 while the second runs (restartPolicy Never) returns, exit 0, the ' + 'pod Running',
  async () => {
    const file = manifest(
      'pair',
      '  - {name: writer, image: busybox:1.36, command: ["true"]}\n  - {name: server, image: busybox:1.36, command: [sleep, "3600"]}\n',
      '  restartPolicy: Never\n',
    );
    const r = podctl([...detach, file], commandTimeout);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    // kubectl's printer: a Completed container beside a running one is NotReady until the pod is Ready; the phase is Running.
    assert.match(r.stdout, new RegExp(`${E2E_NAMESPACE}/pair\\s+(NotReady|Running)\\s+[01]/2`));
    const pods = podctl(['get', 'pods', 'pair', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', rootDir]);
    assert.equal(pods.code, 0, pods.stderr);
    assert.equal((JSON.parse(pods.stdout) as { status: { phase: string } }).status.phase, 'Running');
  },
);

test('run --detach of a pod whose only container exits 0 at once: exit 0, said completed', () => {
  const file = manifest('done', '  - {name: app, image: busybox:1.36, command: ["true"]}\n', '  restartPolicy: Never\n');
  const r = podctl([...detach, file], commandTimeout);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`^${E2E_NAMESPACE}/done completed$`, 'm'));
});

test(
  'run --detach of a pod whose only container exits 3 at once under restartPolicy Never: exit 1, naming exit code 3 and ' + 'its message',
  () => {
    const file = manifest(
      'broken',
      '  - {name: app, image: busybox:1.36, command: [sh, -c, "echo no config >/dev/termination-log; exit 3"]}\n',
      '  restartPolicy: Never\n',
    );
    const r = podctl([...detach, file], commandTimeout);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`${E2E_NAMESPACE}/broken: Error: app: exited with code 3 \\(Error\\): no config`));
    assert.match(r.stderr, /1 of 1 pod\(s\) failed \(Error\)/);
  },
);

test('with the agent running, run --detach of the Strict pod is refused by it, and nothing is created', async () => {
  const r = podctl([...detach, strictPod()], commandTimeout);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stderr, STRICT);
  assert.deepEqual(await sandboxesOf('strict'), []);
});

test('inspect container finds a container by its name, with --pod or POD/NAME, and names the pods when the name is ambiguous', () => {
  const byName = podctl(['inspect', 'container', 'server', '-n', E2E_NAMESPACE]);
  assert.equal(byName.code, 0, byName.stderr);
  const status = (JSON.parse(byName.stdout) as { status: { metadata: { name: string }; labels: Record<string, string> } }).status;
  assert.equal(status.metadata.name, 'server');
  assert.equal(status.labels[POD_NAME_LABEL], 'pair');

  // done and broken each have a container named app (exited: the runtime keeps them).
  const ambiguous = podctl(['inspect', 'container', 'app', '-n', E2E_NAMESPACE]);
  assert.equal(ambiguous.code, 1);
  assert.match(
    ambiguous.stderr,
    new RegExp(`container name "app" is ambiguous in namespace ${E2E_NAMESPACE}: pods broken, done each have a container of that name`),
  );
  const withPod = podctl(['inspect', 'container', 'app', '--pod', 'done', '-n', E2E_NAMESPACE]);
  assert.equal(withPod.code, 0, withPod.stderr);
  assert.equal((JSON.parse(withPod.stdout) as { status: { labels: Record<string, string> } }).status.labels[POD_NAME_LABEL], 'done');
  const slash = podctl(['inspect', 'container', 'broken/app', '-n', E2E_NAMESPACE]);
  assert.equal(slash.code, 0, slash.stderr);
});
