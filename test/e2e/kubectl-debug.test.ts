import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, eventually, removeE2EPods, scratchDir } from '../support/e2e.js';
import { kubeClient, needsKubectl, startKubeAgent, type KubeAgentHandle, type KubeClient } from '../support/kubectl.js';

/**
 * kubectl debug through the agent's Kubernetes API: the strategic merge patch of
 * pods/NAME/ephemeralcontainers starts the debug container in the pod's sandbox, in the target's PID
 * namespace; kubectl's watch sees it running and attaches; the pod lists it in spec and status.
 */
const NS = E2E_NAMESPACE;
const skip = needsKubectl(30);
let client: CriClient;
let dirs: ReturnType<typeof scratchDir>;
let root: string;
let agent: KubeAgentHandle | undefined;
let kube: KubeClient;

const POD = `apiVersion: v1
kind: Pod
metadata: {name: debugee, namespace: ${NS}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, "exec sleep 3607"]
`;

const podJSON = (): IPod | undefined => {
  const r = kube.run(['get', 'pod', 'debugee', '-n', NS, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as IPod) : undefined;
};

before(async () => {
  if (skip) return;
  client = e2eClient();
  await removeE2EPods(client);
  dirs = scratchDir('kubectl-debug');
  root = join(dirs.dir, 'root');
  agent = await startKubeAgent({ root, logs: join(dirs.dir, 'logs'), timeoutMs: 900_000 });
  kube = kubeClient(root, join(dirs.dir, 'client'));
  const applied = kube.run(['apply', '-f', '-'], { input: POD });
  assert.equal(applied.code, 0, applied.stderr);
  await eventually('debugee runs', async () => podJSON()?.status?.containerStatuses?.[0]?.state?.running, 120_000);
});

after(async () => {
  if (skip) return;
  kube?.run(['delete', 'pod', 'debugee', '-n', NS, '--wait=true'], { timeoutMs: 60_000 });
  await agent?.stop();
  await removeE2EPods(client);
  client.close();
  dirs.cleanup();
});

/** `kubectl debug -it` under util-linux's script (a pseudo-terminal), typed lines retyped until their answer shows. */
async function debugSession(): Promise<{ code: number; out: string }> {
  const args = ['--kubeconfig', kube.kubeconfig, '--cache-dir', kube.cacheDir, 'debug', '-it', 'debugee', '-n', NS];
  const cmd = [kube.kubectl.path, ...args, '--image=busybox:1.36', '--target=app', '-c', 'debugger', '--', 'sh'].join(' ');
  const child = spawn('script', ['-qec', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const closed = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  try {
    // Until the attach is up, what is typed may reach nobody: typed again until it is answered.
    await eventually(
      'the debug shell answers',
      async () => {
        child.stdin.write('echo dbg-$((6*7))\n');
        return /dbg-42/.test(out) || undefined;
      },
      60_000,
    );
    await eventually(
      "ps shows the target's command",
      async () => {
        child.stdin.write('ps -o pid,args\n');
        return /^\s*1\s+sleep 3607\s*$/m.test(out.replace(/\r/g, '')) || undefined;
      },
      30_000,
    );
    child.stdin.write('exit\n');
    return { code: await closed, out };
  } finally {
    clearTimeout(timer);
    child.stdin.end();
  }
}

test(
  "kubectl debug -it --target=app: the debug shell sees the target's processes; the pod lists the ephemeral container",
  { skip },
  async () => {
    const session = await debugSession();
    assert.equal(session.code, 0, session.out);
    assert.match(session.out, /Targeting container "app"/);

    const pod = podJSON()!;
    const spec = pod.spec?.ephemeralContainers?.find((c) => c.name === 'debugger');
    assert.ok(spec, JSON.stringify(pod.spec));
    assert.equal(spec.image, 'busybox:1.36');
    assert.equal(spec.targetContainerName, 'app');
    assert.deepEqual(spec.command, ['sh']);
    assert.equal(spec.tty, true);
    // Its end reaches the API's watch cache as any status change does.
    const status = await eventually(
      'the debug container terminated in the pod status',
      async () => podJSON()?.status?.ephemeralContainerStatuses?.find((s) => s.name === 'debugger' && s.state?.terminated),
      60_000,
    );
    assert.equal(status.state!.terminated!.exitCode, 0);
    assert.match(status.containerID ?? '', /^containerd:\/\/[0-9a-f]{64}$/);
    assert.equal(status.ready, false);
    // The pod's own container is untouched.
    assert.ok(podJSON()?.status?.containerStatuses?.[0]?.state?.running);
  },
);

test(
  'a debug container the API server would refuse changes nothing: a target that is no container of the pod, a name taken',
  { skip },
  () => {
    const target = kube.run(['debug', 'debugee', '-n', NS, '--image=busybox:1.36', '--target=nosuch', '-c', 'other', '--', 'true']);
    assert.notEqual(target.code, 0);
    assert.match(target.stderr, /spec\.ephemeralContainers\[\d+\]\.targetContainerName: Not found: "nosuch"/);
    const taken = kube.run(['debug', 'debugee', '-n', NS, '--image=busybox:1.36', '-c', 'app', '--', 'true']);
    assert.notEqual(taken.code, 0);
    assert.match(taken.stderr, /spec\.ephemeralContainers\[\d+\]\.name: Duplicate value: "app"/);
    assert.deepEqual(
      podJSON()?.spec?.ephemeralContainers?.map((c) => c.name),
      ['debugger'],
    );
  },
);
