import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_NAMESPACE, e2eClient, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';

/**
 * podman, run on the same host (the benchmarks' peer row does), bind-mounts /run/netns onto
 * itself as a shared mount. containerd 1.6 keeping its netns files there then fails to unlink
 * them, and the sandbox can never be removed: the embedded runtime keeps them under its own
 * state dir instead. This test leaves /run/netns as podman does, then creates and removes pods.
 */

const NETNS = '/run/netns';
let client: CriClient;
let mountedHere = false;
const dir = scratchDir('e2e-netns');
const root = join(dir.dir, 'root');
const logs = join(dir.dir, 'logs');

/** Mount points exactly at path, from this process's mountinfo. */
function mountsAt(path: string): number {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.split(' ')[4] === path).length;
}

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  if (!existsSync(NETNS)) mkdirSync(NETNS, { recursive: true });
  // podman's own steps (pkg/netns): a self bind mount, made shared.
  sh('mount', ['--bind', NETNS, NETNS]);
  mountedHere = true;
  sh('mount', ['--make-shared', NETNS]);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  // Only the bind this test made: the host's own /run/netns stays as it was.
  if (mountedHere) spawnSync('umount', [NETNS]);
  dir.cleanup();
});

test('with /run/netns bind-mounted onto itself (as podman leaves it), pods are created and removed cleanly', async () => {
  assert.ok(mountsAt(NETNS) >= 1, 'the shared self-bind is in place');
  const names = ['netns-a', 'netns-b'];
  const file = join(dir.dir, 'pods.yaml');
  writeFileSync(
    file,
    names
      .map((n) => `apiVersion: v1\nkind: Pod\nmetadata: {name: ${n}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`)
      .join('---\n'),
  );
  const once = podctl(['sync-once', file, '--root-dir', root, '--log-root', logs]);
  assert.equal(once.code, 0, once.stderr + once.stdout);
  for (const n of names) {
    const [s] = await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: n, [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
    assert.ok(s, `${n} has a sandbox`);
    // A pod network (not hostNetwork): the case that makes a netns file.
    const status = await client.podSandboxStatus(s.id);
    assert.ok(status.status?.network?.ip, `${n} has a pod IP`);
  }
  const del = podctl(['delete', 'pod', ...names, '-n', E2E_NAMESPACE, '--grace-period', '0', '--root-dir', root]);
  assert.equal(del.code, 0, del.stderr + del.stdout);
  const left = await client.listPodSandbox({ labelSelector: { [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
  assert.deepEqual(left.filter((s) => names.includes(s.metadata?.name ?? '')).map((s) => s.id), [], 'every sandbox removed');
  const list = podctl(['get', 'pods', '-A', '--root-dir', root]);
  assert.equal(list.code, 0, list.stderr);
});
