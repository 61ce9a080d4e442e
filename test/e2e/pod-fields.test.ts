import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { totalmem } from 'node:os';
import { hostHasAppArmor, hostHasSELinux } from '../../src/core/admission.js';
import type { CriClient } from '../../src/core/cri/client.js';
import { POD_NAME_LABEL } from '../../src/core/kuberuntime/labels.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, podctlAsync, removeE2EPods, scratchDir, startPodctl } from '../support/e2e.js';

let client: CriClient;
const dir = scratchDir('e2e-fields');
const root = scratchDir('e2e-fields-root');
const common = ['--root-dir', root.dir, '--log-root', join(root.dir, 'logs')];

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
});

after(async () => {
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
  root.cleanup();
});

test("sync-once of a pod whose ConfigMap no document provides exits 1 within 5 s, naming it in the kubelet's words", () => {
  const file = join(dir.dir, 'nocm.yaml');
  writeFileSync(
    file,
    `apiVersion: v1
kind: Pod
metadata: {name: nocm, namespace: ${E2E_NAMESPACE}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    env: [{name: SETTING, valueFrom: {configMapKeyRef: {name: settings, key: level}}}]
`,
  );
  const v = podctl(['validate', file]);
  assert.equal(v.code, 0, v.stderr);
  assert.match(
    v.stdout,
    /warning: .*nocm\.yaml: document 1 \(Pod "nocm"\): spec\.containers\[0\]\.env\[0\]\.valueFrom\.configMapKeyRef: configmap "settings" not found/,
  );

  const r = podctl(['sync-once', file, ...common]);
  assert.equal(r.code, 1, r.stderr);
  // Failed at once, without RunOnce's retries: the reason says it can never start.
  assert.match(r.stdout, /CreateContainerConfigError .*FAILED: can never start: configmap "settings" not found/);
});

function podDoc(name: string, extra = '', container = ''): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${E2E_NAMESPACE}}
spec:
  terminationGracePeriodSeconds: 2
${extra}  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
${container}`;
}

test('nodeSelector {disktype: ssd} is refused with NodeAffinity by run and sync-once, and runs with --node-labels disktype=ssd', () => {
  const file = join(dir.dir, 'ssd.yaml');
  writeFileSync(file, podDoc('ssd', '  nodeSelector: {disktype: ssd}\n'));
  const run = podctl(['run', '--detach', file, ...common]);
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, /ssd: rejected at admission: NodeAffinity: Predicate NodeAffinity failed: .*nodeSelector disktype=ssd/);
  const once = podctl(['sync-once', file, '-o', 'json', ...common]);
  assert.equal(once.code, 1, once.stderr);
  // One pod prints as a v1 Pod.
  const status = (JSON.parse(once.stdout) as { status: { phase: string; reason: string; message: string } }).status;
  assert.equal(status.phase, 'Failed');
  assert.equal(status.reason, 'NodeAffinity');
  assert.match(status.message, /nodeSelector disktype=ssd/);
  const labelled = podctl(['sync-once', file, '--node-labels', 'disktype=ssd', ...common]);
  assert.equal(labelled.code, 0, labelled.stderr + labelled.stdout);
  assert.match(labelled.stdout, /ssd\s+│ Running/);
});

test(
  'admission: more CPU than the host has is OutOfcpu; the second of two pods over allocatable memory is OutOfmemory; a taken ' +
    'hostPort is NodePorts',
  () => {
    const cpu = join(dir.dir, 'cpu.yaml');
    writeFileSync(cpu, podDoc('hungry', '', '    resources: {requests: {cpu: "1000"}}\n'));
    const v = podctl(['validate', cpu]);
    assert.equal(v.code, 0, v.stderr);
    assert.match(
      v.stdout,
      /warning: .*cpu\.yaml: document 1 \(Pod "hungry"\): .*never fits this host: OutOfcpu: Node didn't have enough resource: cpu, requested: 1000000/,
    );
    const r = podctl(['sync-once', cpu, ...common]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /hungry/);
    assert.match(r.stdout.replace(/[│\s]+/g, ' '), /OutOfcpu: Node didn't have enough resource: cpu, requested: 1000000/);

    const half = Math.ceil(totalmem() * 0.6);
    const mem = join(dir.dir, 'mem.yaml');
    writeFileSync(
      mem,
      [
        podDoc('mem-a', '', `    resources: {requests: {memory: "${half}"}}\n`),
        podDoc('mem-b', '', `    resources: {requests: {memory: "${half}"}}\n`),
      ].join('---\n'),
    );
    const m = podctl(['sync-once', mem, '-o', 'json', ...common]);
    assert.equal(m.code, 1, m.stderr);
    const items = (
      JSON.parse(m.stdout) as { items: { metadata: { name: string }; status: { phase: string; reason?: string; message?: string } }[] }
    ).items;
    assert.equal(items.find((i) => i.metadata.name === 'mem-a')!.status.phase, 'Running');
    const b = items.find((i) => i.metadata.name === 'mem-b')!.status;
    assert.equal(b.reason, 'OutOfmemory');
    assert.match(b.message!, new RegExp(`Node didn't have enough resource: memory, requested: ${half}, used: ${half}, capacity: \\d+`));

    const ports = join(dir.dir, 'ports.yaml');
    const port = '    ports: [{containerPort: 80, hostPort: 38471}]\n';
    writeFileSync(ports, [podDoc('port-a', '', port), podDoc('port-b', '', port)].join('---\n'));
    const p = podctl(['sync-once', ports, '-o', 'json', ...common]);
    assert.equal(p.code, 1, p.stderr);
    const pi = (JSON.parse(p.stdout) as { items: { metadata: { name: string }; status: { phase: string; reason?: string } }[] }).items;
    assert.equal(pi.find((i) => i.metadata.name === 'port-a')!.status.phase, 'Running');
    assert.equal(pi.find((i) => i.metadata.name === 'port-b')!.status.reason, 'NodePorts');
  },
);

test(
  'a Localhost AppArmor profile is refused at admission on a host without AppArmor',
  { skip: hostHasAppArmor() ? 'this host has AppArmor' : false },
  () => {
    const file = join(dir.dir, 'apparmor.yaml');
    writeFileSync(file, podDoc('aa', '  securityContext: {appArmorProfile: {type: Localhost, localhostProfile: podctl-none}}\n'));
    const r = podctl(['sync-once', file, '-o', 'json', ...common]);
    assert.equal(r.code, 1, r.stderr);
    const status = (JSON.parse(r.stdout) as { status: { phase: string; reason: string; message: string } }).status;
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'AppArmor');
    assert.match(status.message, /AppArmor is not enabled on the host/);
  },
);

test('activeDeadlineSeconds: 5 ends the pod Failed with DeadlineExceeded (watch)', async () => {
  const watchRoot = scratchDir('e2e-fields-watch');
  const file = join(dir.dir, 'deadline.yaml');
  writeFileSync(file, podDoc('deadline', '  activeDeadlineSeconds: 5\n'));
  const watch = startPodctl(['watch', file, '--root-dir', watchRoot.dir, '--log-root', join(watchRoot.dir, 'logs')]);
  try {
    const status = await eventually(
      'the pod to end Failed with DeadlineExceeded',
      async () => {
        const r = await podctlAsync(['get', 'pods', 'deadline', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', watchRoot.dir]);
        if (r.code !== 0) return undefined;
        const s = (JSON.parse(r.stdout) as { status?: { phase?: string; reason?: string; message?: string } }).status;
        return s?.reason === 'DeadlineExceeded' ? s : undefined;
      },
      15_000,
    );
    assert.equal(status.phase, 'Failed');
    assert.equal(status.message, 'Pod was active on the node longer than the specified deadline');
  } finally {
    watch.interrupt();
    await watch.done;
    watchRoot.cleanup();
  }
});

test(
  'watch admits each pod it adds: nodeSelector {disktype: ssd} is held Failed with NodeAffinity and never run, and runs once ' +
    'the file is edited to fit',
  async () => {
    const watchRoot = scratchDir('e2e-fields-admit');
    const manifests = join(watchRoot.dir, 'manifests');
    mkdirSync(manifests);
    const file = join(manifests, 'ssd.yaml');
    writeFileSync(file, podDoc('watch-ssd', '  nodeSelector: {disktype: ssd}\n'));
    const watch = startPodctl([
      'watch',
      manifests,
      '--root-dir',
      watchRoot.dir,
      '--log-root',
      join(watchRoot.dir, 'logs'),
      '--file-check-frequency',
      '1s',
    ]);
    const status = async () => {
      const r = await podctlAsync(['get', 'pods', 'watch-ssd', '-n', E2E_NAMESPACE, '-o', 'json', '--root-dir', watchRoot.dir]);
      return r.code === 0 ? (JSON.parse(r.stdout) as { status?: { phase?: string; reason?: string; message?: string } }).status : undefined;
    };
    try {
      const rejected = await eventually('the pod rejected at admission', async () => {
        const s = await status();
        return s?.reason === 'NodeAffinity' ? s : undefined;
      });
      assert.equal(rejected.phase, 'Failed');
      assert.match(
        rejected.message!,
        /^Pod was rejected: Predicate NodeAffinity failed: node\(s\) didn't match Pod's node affinity\/selector \(nodeSelector disktype=ssd;/,
      );
      const sandboxes = await client.listPodSandbox({ labelSelector: { [POD_NAME_LABEL]: 'watch-ssd' } });
      assert.deepEqual(sandboxes, [], 'a rejected pod gets no sandbox');
      const events = await podctlAsync(['events', '-n', E2E_NAMESPACE, '--for', 'pod/watch-ssd', '--root-dir', watchRoot.dir]);
      assert.match(events.stdout, /NodeAffinity/);

      writeFileSync(file, podDoc('watch-ssd'));
      await eventually(
        'the edited pod admitted and running',
        async () => ((await status())?.phase === 'Running' ? true : undefined),
        60_000,
      );
    } finally {
      watch.interrupt();
      await watch.done;
      watchRoot.cleanup();
    }
  },
);

test(
  'appArmorProfile Unconfined reaches containerd, which runs the pod; RuntimeDefault and an SELinux label are refused on a host ' +
    'without AppArmor and SELinux',
  { skip: hostHasAppArmor() || hostHasSELinux() ? 'this host has AppArmor or SELinux' : false },
  () => {
    const file = join(dir.dir, 'lsm.yaml');
    writeFileSync(file, podDoc('lsm', '', '    securityContext: {appArmorProfile: {type: Unconfined}}\n'));
    const ok = podctl(['sync-once', file, ...common]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /lsm\s+│ Running/);

    const rd = join(dir.dir, 'rd.yaml');
    writeFileSync(rd, podDoc('rd', '', '    securityContext: {appArmorProfile: {type: RuntimeDefault}}\n'));
    const refused = podctl(['sync-once', rd, '-o', 'json', ...common]);
    assert.equal(refused.code, 1, refused.stderr);
    const status = (JSON.parse(refused.stdout) as { status: { reason: string; message: string } }).status;
    assert.equal(status.reason, 'AppArmor');
    assert.match(
      status.message,
      /Cannot enforce AppArmor: AppArmor is not enabled on the host \(container app asks for the RuntimeDefault profile\)/,
    );

    // containerd applies no SELinux label on such a host: a pod asking for one would run unlabelled.
    const se = join(dir.dir, 'se.yaml');
    writeFileSync(
      se,
      podDoc(
        'se',
        '  securityContext: {seLinuxOptions: {level: "s0:c123,c456"}}\n',
        '    securityContext: {seLinuxOptions: {type: container_t}}\n',
      ),
    );
    const v = podctl(['validate', se]);
    assert.equal(v.code, 0, v.stderr);
    assert.match(
      v.stdout,
      /never runs on this host: SELinux: Cannot enforce SELinux: SELinux is not enabled on the host \(the pod asks for the label level s0:c123,c456\)/,
    );
    const seRefused = podctl(['sync-once', se, '-o', 'json', ...common]);
    assert.equal(seRefused.code, 1, seRefused.stderr);
    assert.equal((JSON.parse(seRefused.stdout) as { status: { reason: string } }).status.reason, 'SELinux');
  },
);
