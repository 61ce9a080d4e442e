import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, podctlAsync, removeE2EPods, scratchDir, startPodctl } from '../support/e2e.js';
import {
  findKubectl,
  kubeClient,
  needsKubectl,
  startKubeAgent,
  stopOnRoot,
  type KubeAgentHandle,
  type KubeClient,
} from '../support/kubectl.js';

const NS = E2E_NAMESPACE;
const skip = needsKubectl(30);
let client: CriClient;
let dirs: ReturnType<typeof scratchDir>;
let root: string;
let logs: string;
let agent: KubeAgentHandle | undefined;
let kube: KubeClient;

before(async () => {
  if (skip) return;
  client = e2eClient();
  await removeE2EPods(client);
  dirs = scratchDir('kubectl');
  root = join(dirs.dir, 'root');
  logs = join(dirs.dir, 'logs');
  agent = await startKubeAgent({ root, logs, timeoutMs: 900_000 });
  kube = kubeClient(root, join(dirs.dir, 'client'));
});

after(async () => {
  if (skip) return;
  await agent?.stop();
  await removeE2EPods(client);
  client.close();
  dirs.cleanup();
});

function ok(r: { code: number; stdout: string; stderr: string }, what: string): string {
  assert.equal(r.code, 0, `${what}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

const podJSONIn = (namespace: string, name: string): IPod | undefined => {
  const r = kube.run(['get', 'pod', name, '-n', namespace, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as IPod) : undefined;
};

const podJSON = (name: string): IPod | undefined => {
  const r = kube.run(['get', 'pod', name, '-n', NS, '-o', 'json', '--show-managed-fields']);
  return r.code === 0 ? (JSON.parse(r.stdout) as IPod) : undefined;
};

function manifest(name: string, image: string, command: string, extra = ''): string {
  return (
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n  labels: {app: ${name}}\nspec:\n  terminationGracePeriodSeconds: 2\n${extra}` +
    `  containers:\n  - name: app\n    image: ${image}\n    command: [sh, -c, ${JSON.stringify(command)}]\n`
  );
}

test('kubectl version, api-resources and auth can-i/whoami read the node as an API server', { skip }, () => {
  const v = JSON.parse(ok(kube.run(['version', '-o', 'json']), 'version')) as { serverVersion?: { major: string; minor: string } };
  assert.equal(v.serverVersion?.major, '1');
  assert.match(v.serverVersion?.minor ?? '', /^\d+$/);
  const resources = ok(kube.run(['api-resources']), 'api-resources');
  assert.match(resources, /^pods\s+po\s+v1\s+true\s+Pod$/m);
  assert.match(resources, /^configmaps\s+cm\s+v1\s+true\s+ConfigMap$/m);
  assert.match(resources, /^nodes\s+no\s+v1\s+false\s+Node$/m);
  assert.equal(ok(kube.run(['auth', 'can-i', 'create', 'pods']), 'auth can-i').trim(), 'yes');
  assert.match(ok(kube.run(['auth', 'whoami']), 'auth whoami'), /^Username\s+podctl-admin$/m);
});

test(
  'kubectl apply -f examples/hello.yaml: get pods shows READY 1/1 Running; -o wide its IP and node; -o json the status podctl serves',
  { skip },
  async () => {
    ok(kube.run(['apply', '-n', NS, '-f', join(import.meta.dirname, '..', '..', '..', 'examples', 'hello.yaml')]), 'apply');
    const row = await eventually(
      'hello Running 1/1',
      async () => {
        const out = kube.run(['get', 'pods', '-n', NS, '--no-headers']).stdout;
        return /^hello\s+1\/1\s+Running\s+0\s+\d+s$/m.test(out) ? out : undefined;
      },
      90_000,
    );
    assert.match(row, /^hello\s/m);
    const head = ok(kube.run(['get', 'pods', '-n', NS]), 'get pods').split('\n')[0]!;
    assert.match(head, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
    const wide = ok(kube.run(['get', 'pod', 'hello', '-n', NS, '-o', 'wide']), 'get -o wide');
    const pod = podJSON('hello')!;
    assert.ok(pod.status?.podIP, 'a pod IP');
    assert.match(
      wide,
      new RegExp(`^hello\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+${pod.status!.podIP!.replace(/\./g, '\\.')}\\s+${pod.spec!.nodeName}\\s`, 'm'),
    );
    assert.equal(pod.apiVersion, 'v1');
    assert.equal(pod.kind, 'Pod');
    assert.ok(pod.metadata?.resourceVersion, 'a resourceVersion');
    const ours = await podctlAsync(['get', 'pods', '-n', NS, '-o', 'json', '--root-dir', root]);
    const mine = (JSON.parse(ours.stdout) as { items: IPod[] }).items.find((p) => p.metadata?.name === 'hello')!;
    // Once Running and Ready, nothing changes the status: both read the status manager's one answer.
    assert.deepEqual(podJSON('hello')!.status, mine.status);
  },
);

test('kubectl describe pod shows the containers, conditions and the kubelet events', { skip }, async () => {
  const out = await eventually(
    'describe with Started',
    async () => {
      const d = kube.run(['describe', 'pod', 'hello', '-n', NS]);
      return d.code === 0 && /Started/.test(d.stdout) ? d.stdout : undefined;
    },
    60_000,
  );
  assert.match(out, /^Containers:\n\s+hello:/m);
  assert.match(out, /^Conditions:/m);
  assert.match(out, /^\s+Ready\s+True/m);
  assert.match(out, /^Events:/m);
  for (const reason of ['Pulled', 'Created', 'Started']) assert.match(out, new RegExp(`Normal\\s+${reason}\\s`), reason);
});

test('kubectl create -f of a name that exists is 409 AlreadyExists', { skip }, () => {
  const again = kube.run(['create', '-n', NS, '-f', join(import.meta.dirname, '..', '..', '..', 'examples', 'hello.yaml')]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /Error from server \(AlreadyExists\): .*pods "hello" already exists/);
});

test(
  'kubectl apply -f of a Pod beside a Service and a Deployment applies the Pod, refuses the Service saying why and names the unmapped Deployment; cluster-info; get crd lists none',
  { skip },
  async () => {
    const file = join(dirs.dir, 'mixed.yaml');
    const service = 'apiVersion: v1\nkind: Service\nmetadata: {name: mixed}\nspec:\n  selector: {app: mixed}\n  ports: [{port: 80}]\n';
    const deployment =
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: mixed}\nspec:\n  selector: {matchLabels: {app: mixed}}\n' +
      '  template:\n    metadata: {labels: {app: mixed}}\n    spec: {containers: [{name: app, image: busybox:1.36}]}\n';
    writeFileSync(file, [service, manifest('mixed', 'busybox:1.36', 'sleep 3600'), deployment].join('---\n'));
    const r = kube.run(['apply', '-n', NS, '-f', file]);
    assert.equal(r.code, 1, r.stderr + r.stdout);
    assert.match(r.stdout, /^pod\/mixed created$/m);
    assert.match(r.stderr, /Error from server \(MethodNotAllowed\): error when creating ".*mixed\.yaml": this node keeps no Services/);
    assert.match(r.stderr, /no matches for kind "Deployment" in version "apps\/v1"/);
    assert.doesNotMatch(r.stderr, /error validating|failed to download openapi|failed to check CRD/);
    const running = await eventually(
      'mixed running',
      async () => (podJSON('mixed')?.status?.phase === 'Running' ? true : undefined),
      90_000,
    );
    assert.equal(running, true);
    const info = kube.run(['cluster-info']);
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, /Kubernetes control plane is running at https:\/\/127\.0\.0\.1:\d+/);
    const crds = kube.run(['get', 'crd']);
    assert.equal(crds.code, 0, crds.stderr);
    assert.equal(crds.stderr.trim(), 'No resources found');
    ok(kube.run(['delete', 'pod', 'mixed', '-n', NS, '--wait=true']), 'delete');
  },
);

test(
  'apply of an image change replaces the container under the same name; a command change is refused as the API server refuses it',
  { skip },
  async () => {
    const file = join(dirs.dir, 'edit.yaml');
    writeFileSync(file, manifest('edit', 'busybox:1.36', 'sleep 3600'));
    ok(kube.run(['apply', '-n', NS, '-f', file]), 'apply');
    const first = await eventually(
      'edit running',
      async () => {
        const p = podJSON('edit');
        return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
      },
      90_000,
    );
    writeFileSync(file, manifest('edit', 'busybox:latest', 'sleep 3600'));
    ok(kube.run(['apply', '-n', NS, '-f', file]), 'apply the image change');
    const replaced = await eventually(
      'the container replaced with busybox:latest',
      async () => {
        const p = podJSON('edit');
        const c = p?.status?.containerStatuses?.[0];
        return c?.state?.running && /busybox:latest/.test(c.image) && c.containerID !== first.status!.containerStatuses![0]!.containerID
          ? p
          : undefined;
      },
      90_000,
    );
    assert.equal(replaced.metadata?.uid, first.metadata?.uid, 'the same pod');
    writeFileSync(file, manifest('edit', 'busybox:latest', 'sleep 7200'));
    const refused = kube.run(['apply', '-n', NS, '-f', file]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /Pod "edit" is invalid: spec: Forbidden: pod updates may not change fields other than/);
    assert.deepEqual(podJSON('edit')!.spec!.containers[0]!.command, ['sh', '-c', 'sleep 3600']);
  },
);

test('kubectl apply --server-side of a new pod, then of a change', { skip }, async () => {
  const file = join(dirs.dir, 'ssa.yaml');
  writeFileSync(file, manifest('ssa', 'busybox:1.36', 'sleep 3600'));
  ok(kube.run(['apply', '--server-side', '-n', NS, '-f', file]), 'server-side apply');
  const made = await eventually(
    'ssa running',
    async () => {
      const p = podJSON('ssa');
      return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    },
    90_000,
  );
  assert.ok(
    made.metadata?.managedFields?.some((m) => m.manager === 'kubectl' && m.operation === 'Apply'),
    'kubectl owns its fields',
  );
  writeFileSync(file, manifest('ssa', 'busybox:latest', 'sleep 3600'));
  ok(kube.run(['apply', '--server-side', '-n', NS, '-f', file]), 'server-side apply of a change');
  await eventually(
    'ssa on busybox:latest',
    async () => {
      const c = podJSON('ssa')?.status?.containerStatuses?.[0];
      return c?.state?.running && /busybox:latest/.test(c.image) ? c : undefined;
    },
    90_000,
  );
  ok(kube.run(['delete', 'pod', 'ssa', '-n', NS]), 'delete ssa');
});

test('kubectl get pods -w prints the rows from ContainerCreating to Running to CrashLoopBackOff', { skip }, async () => {
  // -v=6: kubectl says when the watch's answer began, so the pod is made only once it watches.
  const watcher = kube.spawn(['get', 'pods', '-w', '-n', NS, '-l', 'app=crasher', '--no-headers', '-v=6']);
  let out = '';
  let err = '';
  watcher.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  watcher.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await eventually('the watch open', async () => (/GET https:\S+watch=true\S* 200 OK/.test(err) ? true : undefined), 30_000);
    const file = join(dirs.dir, 'crasher.yaml');
    writeFileSync(file, manifest('crasher', 'busybox:1.36', 'sleep 2; exit 1'));
    ok(kube.run(['apply', '-n', NS, '-f', file]), 'apply crasher');
    await eventually(
      'CrashLoopBackOff in the watch',
      async () => (/^crasher\s+0\/1\s+CrashLoopBackOff\s/m.test(out) ? true : undefined),
      120_000,
    );
    const rows = out.split('\n').filter((l) => l.startsWith('crasher'));
    const statuses = rows.map((l) => l.split(/\s+/)[2]);
    assert.ok(statuses.indexOf('ContainerCreating') >= 0 || statuses.indexOf('Pending') >= 0, `a row before it ran: ${statuses.join(' ')}`);
    assert.ok(statuses.includes('Running'), `a Running row: ${statuses.join(' ')}`);
    assert.ok(statuses.indexOf('Running') < statuses.indexOf('CrashLoopBackOff'), statuses.join(' '));
  } finally {
    watcher.kill('SIGTERM');
  }
  ok(kube.run(['delete', 'pod', 'crasher', '-n', NS, '--grace-period', '1']), 'delete crasher');
});

test(
  'kubectl get events, nodes, describe node, configmaps and secrets; a ConfigMap made by kubectl reaches a pod applied after it',
  { skip },
  async () => {
    const events = ok(kube.run(['get', 'events', '-n', NS]), 'get events');
    assert.match(events.split('\n')[0]!, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    assert.match(events, /Normal\s+Started\s+pod\/hello\s/);
    const nodes = ok(kube.run(['get', 'nodes']), 'get nodes');
    assert.match(nodes, /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/m);
    assert.match(nodes, /\sReady\s+<none>\s/);
    const node = ok(kube.run(['describe', 'node']), 'describe node');
    for (const part of [
      'Conditions:',
      'MemoryPressure',
      'DiskPressure',
      'PIDPressure',
      'Capacity:',
      'Allocatable:',
      'System Info:',
      'Container Runtime Version:',
    ])
      assert.ok(node.includes(part), part);
    ok(kube.run(['create', 'configmap', 'greeting', '-n', NS, '--from-literal', 'GREETING=hello-from-configmap']), 'create configmap');
    ok(kube.run(['create', 'secret', 'generic', 'token', '-n', NS, '--from-literal', 'TOKEN=s3cret']), 'create secret');
    const listed = ok(kube.run(['get', 'configmaps,secrets', '-n', NS]), 'get configmaps,secrets');
    assert.match(listed, /^configmap\/greeting\s+1\s/m);
    assert.match(listed, /^secret\/token\s+Opaque\s+1\s/m);
    const file = join(dirs.dir, 'uses-cm.yaml');
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Pod\nmetadata: {name: uses-cm}\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n` +
        `  - name: app\n    image: busybox:1.36\n    command: [sh, -c, 'echo "$GREETING"']\n    envFrom: [{configMapRef: {name: greeting}}]\n`,
    );
    ok(kube.run(['apply', '-n', NS, '-f', file]), 'apply uses-cm');
    const done = await eventually(
      'uses-cm Succeeded',
      async () => (podJSON('uses-cm')?.status?.phase === 'Succeeded' ? true : undefined),
      90_000,
    );
    assert.ok(done);
    const log = await podctlAsync(['logs', 'uses-cm', '-n', NS, '--root-dir', root]);
    assert.equal(log.stdout.trim(), 'hello-from-configmap');
    ok(kube.run(['delete', 'pod', 'uses-cm', '-n', NS]), 'delete uses-cm');
  },
);

test(
  'a ConfigMap kubectl changes reaches the configMap volume of a running pod at its next sync; ' +
    'a pod applied before its ConfigMap starts once kubectl creates it',
  { skip },
  async () => {
    const volumePod = (name: string, map: string) =>
      `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n` +
      `  - name: app\n    image: busybox:1.36\n    command: [sleep, '3600']\n    volumeMounts: [{name: cfg, mountPath: /etc/cfg}]\n` +
      `  volumes: [{name: cfg, configMap: {name: ${map}}}]\n`;
    const running = (name: string) => async () => (podJSON(name)?.status?.containerStatuses?.[0]?.state?.running ? true : undefined);
    const modeIn = (name: string) => kube.run(['exec', name, '-n', NS, '--', 'cat', '/etc/cfg/mode']);
    ok(kube.run(['create', 'configmap', 'live-cfg', '-n', NS, '--from-literal', 'mode=first']), 'create configmap live-cfg');
    const file = join(dirs.dir, 'mounts-cm.yaml');
    writeFileSync(file, volumePod('mounts-cm', 'live-cfg'));
    ok(kube.run(['apply', '-n', NS, '-f', file]), 'apply mounts-cm');
    await eventually('mounts-cm running', running('mounts-cm'), 90_000);
    assert.equal(ok(modeIn('mounts-cm'), 'cat mode').trim(), 'first');
    ok(kube.run(['patch', 'configmap', 'live-cfg', '-n', NS, '--type', 'merge', '-p', '{"data":{"mode":"second"}}']), 'patch live-cfg');
    // As on a cluster, the volume follows at the pod's periodic sync (the kubelet's 1 min), not at once.
    const seen = await eventually(
      'the changed ConfigMap in mounts-cm',
      async () => {
        const r = modeIn('mounts-cm');
        return r.code === 0 && r.stdout.trim() === 'second' ? r.stdout.trim() : undefined;
      },
      150_000,
    );
    assert.equal(seen, 'second');

    const early = join(dirs.dir, 'before-cm.yaml');
    writeFileSync(early, volumePod('before-cm', 'late-cfg'));
    ok(kube.run(['apply', '-n', NS, '-f', early]), 'apply before-cm');
    const waiting = await eventually(
      'before-cm held for its missing ConfigMap',
      async () => {
        const events = kube.run(['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=before-cm']).stdout;
        return /FailedMount/.test(events) ? events : undefined;
      },
      60_000,
    );
    assert.match(waiting, /configmap "late-cfg" not found/);
    ok(kube.run(['create', 'configmap', 'late-cfg', '-n', NS, '--from-literal', 'mode=late']), 'create configmap late-cfg');
    await eventually('before-cm running', running('before-cm'), 150_000);
    assert.equal(ok(modeIn('before-cm'), 'cat mode').trim(), 'late');
    ok(kube.run(['delete', 'pod', 'mounts-cm', 'before-cm', '-n', NS]), 'delete mounts-cm and before-cm');
  },
);

test(
  'kubectl apply -f of a Namespace and a pod in it; create namespace (protobuf) and label; delete -f takes the pod and ' +
    'the namespace; default may not be deleted',
  { skip },
  async () => {
    const SHOP = `${NS}-shop`;
    const file = join(dirs.dir, 'shop.yaml');
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${SHOP}}\n---\n` +
        `apiVersion: v1\nkind: Pod\nmetadata: {name: cart, namespace: ${SHOP}}\nspec:\n  terminationGracePeriodSeconds: 1\n` +
        `  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, '3600']}\n`,
    );
    try {
      assert.equal(ok(kube.run(['apply', '-f', file]), 'apply shop.yaml'), `namespace/${SHOP} created\npod/cart created\n`);
      assert.equal(ok(kube.run(['apply', '-f', file]), 'apply shop.yaml again'), `namespace/${SHOP} unchanged\npod/cart unchanged\n`);
      assert.match(ok(kube.run(['get', 'ns', SHOP]), 'get ns'), new RegExp(`^${SHOP}\\s+Active\\s`, 'm'));
      await eventually(
        'cart running',
        async () => (podJSONIn(SHOP, 'cart')?.status?.containerStatuses?.[0]?.state?.running ? true : undefined),
        90_000,
      );

      ok(kube.run(['create', 'namespace', `${SHOP}-b`]), 'create namespace');
      ok(kube.run(['label', 'ns', `${SHOP}-b`, 'env=dev']), 'label ns');
      assert.match(
        ok(kube.run(['get', 'ns', `${SHOP}-b`, '--show-labels']), 'get ns --show-labels'),
        /\senv=dev,kubernetes\.io\/metadata\.name=/,
      );
      assert.match(
        kube.run(['create', 'namespace', `${SHOP}-b`]).stderr,
        /\(AlreadyExists\): namespaces "podctl-e2e-shop-b" already exists/,
      );
      ok(kube.run(['delete', 'ns', `${SHOP}-b`]), 'delete ns');

      ok(kube.run(['delete', '-f', file], { timeoutMs: 120_000 }), 'delete -f shop.yaml');
      assert.equal(kube.run(['get', 'ns', SHOP]).code, 1, 'the namespace is gone');
      assert.equal(kube.run(['get', 'pod', 'cart', '-n', SHOP]).code, 1, 'and its pod');
      assert.doesNotMatch(ok(kube.run(['get', 'ns', '--no-headers']), 'get ns'), new RegExp(`^${SHOP}`, 'm'));
      const refused = kube.run(['delete', 'ns', 'default']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /\(Forbidden\): namespaces "default" is forbidden: this namespace may not be deleted/);
    } finally {
      await removeE2EPods(client, SHOP);
    }
  },
);

test('podctl run --detach and kubectl see the same pods; a kubectl pod is podctl get, describe and delete', { skip }, async () => {
  const file = join(dirs.dir, 'detached.yaml');
  writeFileSync(file, manifest('detached', 'busybox:1.36', 'sleep 3600').replace('metadata:\n', `metadata:\n  namespace: ${NS}\n`));
  ok(podctl(['run', '--detach', file, '--root-dir', root, '--log-root', logs]), 'run --detach');
  await eventually(
    'kubectl lists detached',
    async () => (/^detached\s/m.test(kube.run(['get', 'pods', '-n', NS, '--no-headers']).stdout) ? true : undefined),
    60_000,
  );
  const got = ok(await podctlAsync(['get', 'pods', '-n', NS, '--root-dir', root]), 'podctl get pods');
  assert.match(got, /^hello\s+1\/1\s+Running\s/m, 'the pod kubectl applied');
  const described = ok(await podctlAsync(['describe', 'pod', 'hello', '-n', NS, '--root-dir', root]), 'podctl describe');
  assert.match(described, /^Name:\s+hello$/m);
  ok(await podctlAsync(['delete', 'pod', 'detached', '-n', NS, '--root-dir', root]), 'podctl delete detached');
});

test('kubectl delete waits for the graceful termination; the pod is gone and stays gone after an agent restart', { skip }, async () => {
  ok(kube.run(['delete', 'pod', 'hello', '-n', NS], { timeoutMs: 120_000 }), 'delete hello');
  assert.equal(kube.run(['get', 'pod', 'hello', '-n', NS]).code, 1);
  assert.match(kube.run(['get', 'pod', 'hello', '-n', NS]).stderr, /Error from server \(NotFound\): pods "hello" not found/);
  const listed = ok(await podctlAsync(['get', 'pods', '-n', NS, '--root-dir', root]), 'podctl get pods');
  assert.doesNotMatch(listed, /^hello\s/m);
  // Should the new agent not come up, `after` stops the old handle again: idempotent, and root's lock is checked all the same.
  await agent?.stop();
  agent = await startKubeAgent({ root, logs, timeoutMs: 900_000 });
  kube = kubeClient(root, join(dirs.dir, 'client'), kube.kubectl);
  // The agent back: the pods it keeps are listed (edit), and hello is not among them.
  await eventually(
    'edit listed again',
    async () => (/^edit\s/m.test(kube.run(['get', 'pods', '-n', NS, '--no-headers']).stdout) ? true : undefined),
    60_000,
  );
  assert.doesNotMatch(kube.run(['get', 'pods', '-n', NS, '--no-headers']).stdout, /^hello\s/m);
  // What kubectl made survives too.
  assert.match(ok(kube.run(['get', 'configmap', 'greeting', '-n', NS]), 'configmap after restart'), /^greeting\s/m);
});

/** A raw HTTPS GET of the node's API with the given credentials. */
function rawGet(url: string, opts: { cert?: string; key?: string; token?: string; ca: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/v1/pods`,
      { ca: opts.ca, cert: opts.cert, key: opts.key, headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {} },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test(
  "a pod of watch's manifests directory stays the file's: kubectl apply and delete of it are refused 409, naming the file",
  { skip },
  async () => {
    const manifests = join(dirs.dir, 'manifests');
    mkdirSync(manifests);
    const file = join(manifests, 'static.yaml');
    writeFileSync(file, manifest('static', 'busybox:1.36', 'sleep 3600').replace('metadata:\n', `metadata:\n  namespace: ${NS}\n`));
    const root2 = join(dirs.dir, 'root2');
    const args = ['watch', manifests, '--root-dir', root2, '--log-root', join(dirs.dir, 'logs2'), '--kube-api-port', '0'];
    const watch = startPodctl(args, { timeoutMs: 600_000 });
    try {
      await watch.waitFor(/Kubernetes API on https:\/\/\S+/, 60_000);
      const k2 = kubeClient(root2, join(dirs.dir, 'client2'), kube.kubectl);
      await eventually('static listed', async () => (k2.run(['get', 'pod', 'static', '-n', NS]).code === 0 ? true : undefined), 60_000);
      const edited = join(dirs.dir, 'static-edit.yaml');
      writeFileSync(edited, manifest('static', 'busybox:latest', 'sleep 3600'));
      const applied = k2.run(['apply', '-n', NS, '-f', edited]);
      assert.equal(applied.code, 1);
      assert.match(applied.stderr, /Error from server \(Conflict\)/);
      assert.ok(applied.stderr.includes(file), applied.stderr);
      const deleted = k2.run(['delete', 'pod', 'static', '-n', NS, '--wait=false']);
      assert.equal(deleted.code, 1);
      assert.ok(deleted.stderr.includes(manifests), deleted.stderr);
      assert.equal(k2.run(['get', 'pod', 'static', '-n', NS, '-o', 'jsonpath={.spec.containers[0].image}']).stdout, 'busybox:1.36');
    } finally {
      await stopOnRoot(watch, root2);
    }
  },
);

test(
  'without credentials, with a wrong token or a certificate of another CA, every request is refused 401; another user cannot read the key',
  { skip },
  async () => {
    const endpoint = JSON.parse(readFileSync(join(root, 'kubeapi', 'endpoint.json'), 'utf8')) as { url: string };
    const cfg = readFileSync(kube.kubeconfig, 'utf8');
    const ca = Buffer.from(/certificate-authority-data: (\S+)/.exec(cfg)![1]!, 'base64').toString();
    const none = await rawGet(endpoint.url, { ca });
    assert.equal(none.status, 401);
    assert.equal((JSON.parse(none.body) as { reason: string }).reason, 'Unauthorized');
    assert.equal((await rawGet(endpoint.url, { ca, token: 'not-the-token' })).status, 401);
    const other = spawnSync('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=podctl-admin/O=system:masters',
      '-keyout',
      join(dirs.dir, 'k.pem'),
      '-out',
      join(dirs.dir, 'c.pem'),
    ]);
    assert.equal(other.status, 0, other.stderr?.toString());
    const forged = await rawGet(endpoint.url, {
      ca,
      cert: readFileSync(join(dirs.dir, 'c.pem'), 'utf8'),
      key: readFileSync(join(dirs.dir, 'k.pem'), 'utf8'),
    });
    assert.equal(forged.status, 401);
    const cert = Buffer.from(/client-certificate-data: (\S+)/.exec(cfg)![1]!, 'base64').toString();
    const key = Buffer.from(/client-key-data: (\S+)/.exec(cfg)![1]!, 'base64').toString();
    assert.equal((await rawGet(endpoint.url, { ca, cert, key })).status, 200);
    // A second local user (nobody) can read neither the key files nor get anything without them.
    const asNobody = spawnSync(
      process.execPath,
      ['-e', `require('fs').readFileSync(${JSON.stringify(join(root, 'kubeapi'))} + '/admin.key')`],
      { uid: 65534, gid: 65534, encoding: 'utf8' },
    );
    assert.notEqual(asNobody.status, 0);
    assert.match(asNobody.stderr, /EACCES/);
  },
);

test('kubectl is the fixed 1.3x one', { skip }, () => {
  assert.ok(findKubectl()!.minor >= 30);
});
