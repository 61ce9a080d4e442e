import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { isNotFound } from '../../src/core/cri/errors.js';
import { embeddedEndpoint, embeddedPaths } from '../../src/core/embedded/index.js';
import { E2E_ENDPOINT, E2E_NAMESPACE, e2eClient, removeE2EPods, scratchDir } from '../support/e2e.js';

let client: CriClient;
const logs = scratchDir('e2e-logs');

before(() => {
  client = e2eClient();
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  logs.cleanup();
});

test('version and status: RuntimeReady and NetworkReady', async () => {
  const v = await client.version();
  assert.equal(v.runtimeApiVersion, 'v1');
  assert.ok(v.runtimeName.length > 0);
  const status = await client.status();
  const conditions = Object.fromEntries((status.status?.conditions ?? []).map((c) => [c.type, c.status]));
  assert.equal(conditions.RuntimeReady, true);
  assert.equal(conditions.NetworkReady, true);
});

test('pulling busybox:1.36 from the loopback registry', async () => {
  const ref = await client.pullImage('busybox:1.36');
  assert.match(ref, /^sha256:[0-9a-f]{64}$/);
  const image = await client.imageStatus('docker.io/library/busybox:1.36');
  assert.equal(image?.id, ref);
});

test('pulling an image the registry does not hold fails with not found, trying only the loopback registry', async () => {
  const log = join(embeddedPaths().logDir, 'containerd.log');
  const offset = existsSync(log) ? statSync(log).size : 0;
  for (const image of ['docker.io/library/nosuchimage:1', 'registry.k8s.io/nosuch:1', 'example.com/team/app:2']) {
    await assert.rejects(client.pullImage(image), (err: Error) => {
      assert.ok(isNotFound(err), err.message);
      assert.match(err.message, new RegExp(`${image.replace(/[./]/g, '\\$&')}: not found`));
      return true;
    });
  }
  if (E2E_ENDPOINT === embeddedEndpoint() && existsSync(log)) {
    // containerd logs every host it tries: all of them must be the loopback registry.
    const tail = readFileSync(log, 'utf8').slice(offset);
    const hosts = [...tail.matchAll(/host="?([^"\s]+)"?/g)].map((m) => m[1]);
    assert.ok(hosts.length > 0, 'containerd logged the hosts it tried');
    assert.deepEqual([...new Set(hosts)], ['127.0.0.1:5000']);
  }
});

test('a sandbox with a container runs, writes its log, and is cleaned up', async () => {
  const sandboxConfig = {
    metadata: { name: 'client-e2e', namespace: E2E_NAMESPACE, uid: 'client-e2e-uid', attempt: 0 },
    hostname: 'client-e2e',
    logDirectory: logs.dir,
    labels: { 'io.kubernetes.pod.namespace': E2E_NAMESPACE },
    linux: {},
  };
  const sandboxId = await client.runPodSandbox(sandboxConfig);
  const sandbox = await client.podSandboxStatus(sandboxId);
  assert.equal(sandbox.status?.state, 'SANDBOX_READY');
  assert.match(sandbox.status?.network?.ip ?? '', /^10\.89\./);

  const imageRef = await client.pullImage('busybox:1.36');
  const containerId = await client.createContainer(
    sandboxId,
    {
      metadata: { name: 'hello', attempt: 0 },
      image: { image: imageRef },
      command: ['sh', '-c', 'echo hello from podctl; echo oops >&2'],
      logPath: 'hello/0.log',
    },
    sandboxConfig,
  );
  await client.startContainer(containerId);
  let state = '';
  for (const deadline = Date.now() + 60_000; state !== 'CONTAINER_EXITED' && Date.now() < deadline;) {
    state = (await client.containerStatus(containerId)).status?.state ?? '';
    if (state !== 'CONTAINER_EXITED') await new Promise((r) => setTimeout(r, 100));
  }
  const status = (await client.containerStatus(containerId)).status!;
  assert.equal(status.state, 'CONTAINER_EXITED');
  assert.equal(status.exitCode, 0);

  const logFile = join(logs.dir, 'hello/0.log');
  assert.ok(existsSync(logFile));
  const lines = readFileSync(logFile, 'utf8').trim().split('\n');
  // CRI log format: <RFC3339Nano> <stream> <F|P> <text>
  assert.ok(
    lines.some((l) => /^\S+ stdout F hello from podctl$/.test(l)),
    lines.join('\n'),
  );
  assert.ok(
    lines.some((l) => /^\S+ stderr F oops$/.test(l)),
    lines.join('\n'),
  );

  await client.stopPodSandbox(sandboxId);
  await client.removePodSandbox(sandboxId);
  await assert.rejects(client.containerStatus(containerId), (err) => isNotFound(err));
  const left = await client.listPodSandbox({ id: sandboxId });
  assert.equal(left.length, 0);
});
