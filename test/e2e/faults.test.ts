import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import { watchAgent } from '../../src/cli/node.js';
import { podSandboxConfig } from '../../src/core/kuberuntime/config.js';
import { POD_UID_LABEL } from '../../src/core/kuberuntime/labels.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { E2E_NAMESPACE, e2eClient, podctl, removeE2EPods, scratchDir, startPodctl, type RunningPodctl } from '../support/e2e.js';

/**
 * podctl keeps no state the runtime cannot rebuild: watch killed with SIGKILL
 * at any point and started again converges to the desired pods, with no
 * duplicate or leaked sandbox, and restarts nothing that still matches. Every
 * end state is read from the CRI, not from podctl.
 */
let client: CriClient;
const dirs = scratchDir('e2e-faults');
const manifests = join(dirs.dir, 'manifests');
const root = join(dirs.dir, 'root');
const logs = join(dirs.dir, 'logs');
const running = new Set<RunningPodctl>();

/** The node name the watches here run with: a pod's UID derives from it, as the kubelet's static pods. */
const NODE = 'e2e';

function podYaml(name: string): string {
  return `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n  volumes:\n  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 1Mi}}\n`;
}
const write = (name: string) => writeFileSync(join(manifests, `${name}.yaml`), podYaml(name));
const unlink = (name: string) => rmSync(join(manifests, `${name}.yaml`), { force: true });

function startWatch(): RunningPodctl {
  const w = startPodctl([
    'watch',
    manifests,
    '--root-dir',
    root,
    '--log-root',
    logs,
    '--node-name',
    NODE,
    '--pleg',
    'generic',
    '--pleg-relist-period',
    '200ms',
    '--file-check-frequency',
    '1s',
  ]);
  running.add(w);
  void w.done.then(() => running.delete(w));
  return w;
}

async function crash(w: RunningPodctl): Promise<void> {
  w.kill('SIGKILL');
  await w.done;
}

const selector = (name: string) => ({ 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': E2E_NAMESPACE });

interface PodState {
  ready: number;
  sandboxes: number;
  runningIds: string[];
}

async function podState(name: string): Promise<PodState> {
  const sandboxes = await client.listPodSandbox({ labelSelector: selector(name) });
  const containers = await client.listContainers({ labelSelector: selector(name) });
  return {
    ready: sandboxes.filter((s) => s.state === 'SANDBOX_READY').length,
    sandboxes: sandboxes.length,
    runningIds: containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => c.id),
  };
}

/** Polls the CRI until every desired pod has one ready sandbox and one running container, and every removed pod is gone. */
async function converged(desired: string[], removed: string[], timeoutMs = 60_000): Promise<Map<string, PodState>> {
  const end = Date.now() + timeoutMs;
  let last = new Map<string, PodState>();
  while (Date.now() < end) {
    last = new Map(await Promise.all([...desired, ...removed].map(async (n) => [n, await podState(n)] as const)));
    const ok =
      desired.every((n) => last.get(n)!.ready === 1 && last.get(n)!.runningIds.length === 1) &&
      removed.every((n) => last.get(n)!.sandboxes === 0);
    if (ok) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.fail(`not converged: ${JSON.stringify(Object.fromEntries(last))}`);
}

/** tmpfs mounts podctl made under its state dir. */
function mountsUnderRoot(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(root));
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  mkdirSync(manifests, { recursive: true });
});

after(async () => {
  for (const w of running) await crash(w);
  await removeE2EPods(client);
  for (const m of mountsUnderRoot().reverse()) {
    // A mount left by a killed podctl under our own scratch dir: ours to remove.
    await import('node:child_process').then(({ execFileSync }) => execFileSync('umount', ['-l', m]));
  }
  client.close();
  dirs.cleanup();
});

test("a second watch on the same state dir refuses at once, naming the first one's PID", async () => {
  const first = startWatch();
  await first.waitFor(/watching /, 30_000);
  const second = startPodctl(['watch', manifests, '--root-dir', root, '--log-root', logs]);
  const r = await second.done;
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`another podctl watch \\(pid ${first.pid}, since [^)]+\\) owns ${root.replaceAll('/', '\\/')}`));
  await crash(first);
});

test(
  'watch killed with SIGKILL at random points while syncing and terminating converges after a restart, restarting nothing ' +
    'that matched',
  async () => {
    write('steady');
    let w = startWatch();
    const start = await converged(['steady'], []);
    const steadyId = start.get('steady')!.runningIds[0]!;

    // A sandbox left half-created (killed between RunPodSandbox and CreateContainer): made by hand, as podctl would have.
    const half = parseManifestText(podYaml('half'), { kind: 'file', path: join(manifests, 'half.yaml') }, { nodeName: NODE }).pods[0]!.pod;
    await crash(w);
    const halfSandbox = await client.runPodSandbox(podSandboxConfig(half, 0, logs, watchAgent(root)));
    write('half');
    w = startWatch();
    await converged(['steady', 'half'], []);
    assert.deepEqual(
      (await client.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: half.metadata!.uid! } })).map((s) => s.id),
      [halfSandbox],
      "the half-made sandbox is the pod's: found and completed, not leaked beside a new one",
    );

    // New pods, and watch killed somewhere in their sync.
    const kills = [40, 150, 320, 600];
    for (const [i, ms] of kills.entries()) {
      write(`crash-${i}`);
      await new Promise((r) => setTimeout(r, ms));
      await crash(w);
      w = startWatch();
    }
    await converged(['steady', 'half', ...kills.map((_, i) => `crash-${i}`)], []);

    // Termination interrupted: files removed, watch killed while it stops the pods.
    unlink('half');
    unlink('crash-0');
    await new Promise((r) => setTimeout(r, 1_200));
    await crash(w);
    w = startWatch();
    const end = await converged(['steady', ...kills.slice(1).map((_, i) => `crash-${i + 1}`)], ['half', 'crash-0']);
    assert.deepEqual(end.get('steady')!.runningIds, [steadyId], 'the pod that always matched was never restarted');

    // Everything removed: no sandbox, no container, no mount left behind.
    for (const i of kills.keys()) unlink(`crash-${i}`);
    unlink('steady');
    await converged([], ['steady', ...kills.map((_, i) => `crash-${i}`)]);
    for (let i = 0; i < 240 && mountsUnderRoot().length > 0; i++) await new Promise((r) => setTimeout(r, 250));
    assert.deepEqual(mountsUnderRoot(), [], 'no tmpfs left under the state dir');
    assert.deepEqual(await client.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': E2E_NAMESPACE } }), []);
    w.interrupt();
    assert.equal((await w.done).code, 0);
  },
);

test('run and sync-once from another shell leave a pod the running watch keeps to it, instead of fighting over it', async () => {
  write('shared');
  const w = startWatch();
  const before = (await converged(['shared'], [])).get('shared')!.runningIds;
  const file = join(manifests, 'shared.yaml');
  const run = podctl(['run', '--detach', file, '--root-dir', root, '--log-root', logs]);
  assert.equal(run.code, 1, run.stderr);
  assert.match(
    run.stderr,
    new RegExp(`${E2E_NAMESPACE}/shared: rejected at admission: the watch on ${root.replaceAll('/', '\\/')} keeps this pod`),
  );
  // sync-once reports every pod in its table, this one as rejected.
  const once = podctl(['sync-once', file, '--root-dir', root, '--log-root', logs]);
  assert.equal(once.code, 1, once.stderr);
  assert.match(once.stdout.replace(/\s+/g, ' '), /rejected at admission: the watch on .* keeps this pod/);
  assert.deepEqual((await podState('shared')).runningIds, before, "the watch's container was not touched");
  unlink('shared');
  await converged([], ['shared']);
  w.interrupt();
  await w.done;
});
