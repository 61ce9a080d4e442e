import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
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

/** Runs one sleeping busybox pod per name (pod network) through sync-once on this file's root dir. */
function syncPods(names: string[]): void {
  const file = join(dir.dir, `${names.join('-')}.yaml`);
  writeFileSync(
    file,
    names
      .map(
        (n) =>
          `apiVersion: v1\nkind: Pod\nmetadata: {name: ${n}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`,
      )
      .join('---\n'),
  );
  const once = podctl(['sync-once', file, '--root-dir', root, '--log-root', logs]);
  assert.equal(once.code, 0, once.stderr + once.stdout);
}

test('with /run/netns bind-mounted onto itself (as podman leaves it), pods are created and removed cleanly', async () => {
  assert.ok(mountsAt(NETNS) >= 1, 'the shared self-bind is in place');
  const names = ['netns-a', 'netns-b'];
  syncPods(names);
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
  assert.deepEqual(
    left.filter((s) => names.includes(s.metadata?.name ?? '')).map((s) => s.id),
    [],
    'every sandbox removed',
  );
  const list = podctl(['get', 'pods', '-A', '--root-dir', root]);
  assert.equal(list.code, 0, list.stderr);
});

/** The sandbox's network namespace file, from containerd's verbose status (its OCI spec). */
async function netnsPath(id: string): Promise<string> {
  const info = JSON.parse((await client.podSandboxStatus(id, true)).info?.info ?? '{}') as {
    runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } };
  };
  const path = info.runtimeSpec?.linux?.namespaces?.find((n) => n.type === 'network')?.path;
  assert.ok(path, "containerd names the sandbox's netns");
  return path;
}

test('a sandbox whose status call fails shows as Unknown in get pods -A, beside the others, and the command exits 0', async () => {
  const names = ['sick', 'well'];
  syncPods(names);
  const [sick] = await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: 'sick', [POD_NAMESPACE_LABEL]: E2E_NAMESPACE } });
  assert.ok(sick, 'sick has a sandbox');
  const ns = await netnsPath(sick.id);
  // containerd 1.6 checks the netns file on every PodSandboxStatus; a path it cannot even stat
  // (a symlink to itself: ELOOP) makes that call fail while listing still shows the sandbox.
  // The namespace itself is kept on a bind of our own and put back afterwards.
  const keep = join(dir.dir, 'netns-keep');
  writeFileSync(keep, '');
  sh('mount', ['--bind', ns, keep]);
  let broken = false;
  try {
    sh('umount', [ns]);
    broken = true;
    rmSync(ns, { force: true });
    symlinkSync(basename(ns), ns);
    await assert.rejects(client.podSandboxStatus(sick.id), 'the runtime cannot report the sick sandbox');

    const json = podctl(['get', 'pods', '-A', '-o', 'json', '--root-dir', root]);
    assert.equal(json.code, 0, json.stderr);
    const items = (
      JSON.parse(json.stdout) as {
        items: { metadata: { name: string; namespace: string }; status: { phase: string; reason?: string; message?: string } }[];
      }
    ).items.filter((p) => p.metadata.namespace === E2E_NAMESPACE);
    const byName = new Map(items.map((p) => [p.metadata.name, p.status]));
    assert.equal(byName.get('sick')?.phase, 'Unknown', JSON.stringify(byName.get('sick')));
    assert.equal(byName.get('sick')?.reason, 'RuntimeError');
    assert.match(byName.get('sick')?.message ?? '', /netns|network namespace/i, "the runtime's own error is kept");
    assert.equal(byName.get('well')?.phase, 'Running', 'the other pod is listed as it is');

    const table = podctl(['get', 'pods', '-A', '--root-dir', root]);
    assert.equal(table.code, 0, table.stderr);
    const row = (name: string) => table.stdout.split('\n').find((l) => l.startsWith(E2E_NAMESPACE) && l.split(/\s+/)[1] === name) ?? '';
    // kubectl's printer shows the pod's reason over its phase: RuntimeError, the phase Unknown above.
    assert.match(row('sick'), /\bRuntimeError\b/, table.stdout);
    assert.match(row('well'), /\bRunning\b/, table.stdout);
  } finally {
    if (broken) {
      rmSync(ns, { force: true });
      writeFileSync(ns, '');
      sh('mount', ['--bind', keep, ns]);
    }
    spawnSync('umount', [keep]);
  }
  assert.ok((await client.podSandboxStatus(sick.id)).status, 'the sandbox reports again once its netns is back');
  const del = podctl(['delete', 'pod', ...names, '-n', E2E_NAMESPACE, '--grace-period', '0', '--root-dir', root]);
  assert.equal(del.code, 0, del.stderr + del.stdout);
});
