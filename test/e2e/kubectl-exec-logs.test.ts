import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { dirname, join } from 'node:path';
import yaml from 'js-yaml';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, eventually, removeE2EPods, scratchDir } from '../support/e2e.js';
import { kubeClient, kubectlOfMinor, startKubeAgent, type KubeAgentHandle, type KubeClient } from '../support/kubectl.js';

/**
 * Real kubectl (1.32 over WebSocket v5 and over SPDY, 1.29 over SPDY only) against the agent's
 * Kubernetes API on the embedded containerd: the pods made with kubectl apply, exec, attach and logs
 * through the API's streams; and a client without credentials refused (401) on every stream before
 * anything reaches the runtime.
 */
const K132 = kubectlOfMinor(32);
const K129 = kubectlOfMinor(29);
const NS = E2E_NAMESPACE;
const dir = scratchDir('e2e-kubectl-streams');
const root = join(dir.dir, 'root');
let client: CriClient;
let agent: KubeAgentHandle | undefined;
let kube: KubeClient;
/** The API's address and CA, from the kubeconfig podctl wrote: for the raw requests without credentials. */
let server: URL;
let ca: string;

const COUNTER = `i=0; pad=$(printf '%500s' | tr ' ' x); while true; do for j in 1 2 3 4 5 6 7 8 9 10; do i=$((i+1)); echo "n=$i $pad"; done; sleep 0.01; done`;
const PODS = [
  {
    name: 'shell',
    annotations: { 'kubectl.kubernetes.io/default-container': 'app' },
    containers: [
      { name: 'side', command: ['sh', '-c', 'echo side-says-hi; exec sleep 3600'] },
      { name: 'app', command: ['sh', '-c', 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; done; exec sleep 3600'] },
    ],
  },
  { name: 'crash', containers: [{ name: 'app', command: ['sh', '-c', 'echo boot-$(cat /proc/sys/kernel/random/uuid); sleep 1; exit 1'] }] },
  { name: 'chatty', containers: [{ name: 'app', command: ['sh', '-c', COUNTER] }] },
];

/** The agent's own view of a pod, over its /v1 socket. */
function agentPod(name: string): Promise<IPod | undefined> {
  return new Promise((resolve, reject) => {
    get({ socketPath: join(root, 'podctl.sock'), path: `/v1/pods/${NS}/${name}` }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(res.statusCode === 200 ? (JSON.parse(body) as IPod) : undefined));
    }).on('error', reject);
  });
}

const skipAll = !K132 || !K129 ? 'kubectl 1.32 and 1.29 are needed' : false;

before(async () => {
  if (skipAll) return;
  client = e2eClient();
  await removeE2EPods(client);
  agent = await startKubeAgent({
    root,
    logs: join(dir.dir, 'logs'),
    args: ['--container-log-max-size', '1Mi', '--container-log-max-files', '3', '--container-log-monitor-interval', '100ms'],
    timeoutMs: 1_800_000,
  });
  kube = kubeClient(root, join(dir.dir, 'client'), K132);
  const config = yaml.load(readFileSync(kube.kubeconfig, 'utf8')) as {
    clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
  };
  server = new URL(config.clusters[0]!.cluster.server);
  ca = Buffer.from(config.clusters[0]!.cluster['certificate-authority-data'], 'base64').toString();
  const docs = PODS.map((p) =>
    yaml.dump({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, namespace: NS, ...(p.annotations ? { annotations: p.annotations } : {}) },
      spec: { terminationGracePeriodSeconds: 1, containers: p.containers.map((c) => ({ ...c, image: 'busybox:1.36' })) },
    }),
  );
  const applied = kube.run(['apply', '-f', '-'], { input: docs.join('---\n') });
  assert.equal(applied.code, 0, applied.stderr);
  for (const name of ['shell', 'chatty'])
    await eventually(
      `${name} runs`,
      async () => {
        const statuses = (await agentPod(name))?.status?.containerStatuses ?? [];
        return (statuses.length > 0 && statuses.every((c) => c.state?.running)) || undefined;
      },
      120_000,
    );
});

after(async () => {
  if (skipAll) return;
  kube?.run(['delete', 'pods', '-n', NS, ...PODS.map((p) => p.name), '--wait=true'], { timeoutMs: 60_000 });
  await agent?.stop();
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let calls = 0;
/** One kubectl call with its own discovery cache, in the e2e namespace; kubeconfig the agent's unless given. */
function kubectl(bin: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; kubeconfig?: string } = {}): Promise<Run> {
  const cache = join(dir.dir, `cache-${calls++}`);
  const child = spawn(bin, ['--kubeconfig', opts.kubeconfig ?? kube.kubeconfig, '--cache-dir', cache, '-n', NS, ...args], {
    env: { ...process.env, ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(opts.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    }),
  );
}

const VARIANTS: { name: string; bin: string; env: NodeJS.ProcessEnv }[] = [
  { name: 'kubectl 1.32 (WebSocket v5)', bin: K132?.path ?? '', env: {} },
  {
    name: 'kubectl 1.32 with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false (SPDY)',
    bin: K132?.path ?? '',
    env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' },
  },
  { name: 'kubectl 1.29 (SPDY only)', bin: K129?.path ?? '', env: {} },
];

/** `kubectl exec -it shell -- sh` under util-linux's script (a pseudo-terminal): typed lines, a resize, exit. */
async function interactive(bin: string, env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  const ttyName = join(dir.dir, `tty-${calls}`);
  const cmd = `tty > ${ttyName}; stty rows 30 cols 100; exec ${bin} --kubeconfig ${kube.kubeconfig} --cache-dir ${join(dir.dir, `cache-${calls++}`)} -n ${NS} exec -it shell -- sh`;
  const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const closed = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  const until = async (what: string, re: RegExp, retype?: string) =>
    eventually(
      what,
      async () => {
        if (retype) child.stdin.write(retype);
        return re.test(out.replace(/\r/g, '')) || undefined;
      },
      30_000,
    );
  try {
    await until('the shell answers', /typed-42/, 'echo typed-$((6*7))\n');
    await until('the starting size', /^30 100$/m, 'stty size\n');
    const pts = readFileSync(ttyName, 'utf8').trim();
    assert.equal(spawnSync('stty', ['-F', pts, 'rows', '40', 'cols', '120']).status, 0);
    await until('the new size', /^40 120$/m, 'stty size\n');
    child.stdin.write('exit 5\n');
    return { code: await closed, out };
  } finally {
    clearTimeout(timer);
    child.stdin.end();
  }
}

describe('kubectl exec', { skip: skipAll }, () => {
  for (const v of VARIANTS) {
    test(`${v.name}: exit 3 is kubectl's exit 3`, async () => {
      const r = await kubectl(v.bin, ['exec', 'shell', '--', 'sh', '-c', 'echo out; exit 3'], { env: v.env });
      assert.equal(r.code, 3, r.stderr);
      assert.equal(r.stdout, 'out\n');
      assert.match(r.stderr, /command terminated with exit code 3/);
    });

    test(`${v.name}: -i cat echoes stdin and ends at its EOF`, async () => {
      const input = Array.from({ length: 200 }, (_, i) => `row ${i}`).join('\n') + '\n';
      const r = await kubectl(v.bin, ['exec', '-i', 'shell', '--', 'cat'], { env: v.env, input });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, input);
    });

    test(`${v.name}: -it under a pseudo-terminal: a command typed runs, a resize reaches it, exit ends it`, async () => {
      const r = await interactive(v.bin, v.env);
      assert.equal(r.code, 5, r.out);
    });
  }
});

describe('kubectl logs', { skip: skipAll }, () => {
  test('--tail 5, -c, the default-container annotation, --since', async () => {
    const tail = await kubectl(K132!.path, ['logs', 'shell', '--tail', '5']);
    assert.equal(tail.code, 0, tail.stderr);
    assert.equal(tail.stdout, 'line6\nline7\nline8\nline9\nline10\n');
    assert.equal((await kubectl(K132!.path, ['logs', 'shell', '-c', 'side'])).stdout, 'side-says-hi\n');
    assert.equal((await kubectl(K132!.path, ['logs', 'shell', '--since', '1h'])).stdout.split('\n').filter(Boolean).length, 10);
    const started = Date.parse(
      (await agentPod('shell'))!.status!.containerStatuses!.find((c) => c.name === 'app')!.state!.running!.startedAt!,
    );
    await eventually('the lines are more than 2s old', async () => Date.now() - started > 3000 || undefined);
    assert.equal((await kubectl(K132!.path, ['logs', 'shell', '--since', '2s'])).stdout, '');
  });

  test('--previous after a restart is the instance before it', async () => {
    const pod = await eventually(
      'crash restarted once',
      async () => {
        const p = await agentPod('crash');
        const s = p?.status?.containerStatuses?.[0];
        return s && s.restartCount >= 1 && s.lastState?.terminated ? p : undefined;
      },
      120_000,
    );
    const r = await kubectl(K132!.path, ['logs', 'crash', '--previous']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^boot-[0-9a-f-]+\n$/);
    assert.ok(pod);
    const none = await kubectl(K132!.path, ['logs', 'shell', '--previous']);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /previous terminated container "app" in pod "shell" not found/);
  });

  test('-f across log rotations: the counter arrives without a gap or a repeat', async () => {
    const cache = join(dir.dir, `cache-${calls++}`);
    const child = spawn(K132!.path, ['--kubeconfig', kube.kubeconfig, '--cache-dir', cache, '-n', NS, 'logs', '-f', 'chatty'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const closed = new Promise((resolve) => child.on('close', resolve));
    const logPath = (await client.containerStatus((await agentPod('chatty'))!.status!.containerStatuses![0]!.containerID!.split('//')[1]!))
      .status!.logPath!;
    const rotatedNow = () => [
      ...new Set(
        readdirSync(dirname(logPath))
          .filter((f) => f.startsWith('0.log.'))
          .map((f) => f.replace(/\.gz$/, '')),
      ),
    ];
    const before = rotatedNow();
    try {
      // Two rotations while kubectl follows: a rotated file that was not there when it started, then a newer one.
      await eventually(
        'two rotations during the follow',
        async () => rotatedNow().filter((f) => !before.includes(f)).length >= 2 || undefined,
        90_000,
      );
      const seen = [...out.matchAll(/^n=(\d+) /gm)].length;
      await eventually('more lines after them', async () => [...out.matchAll(/^n=(\d+) /gm)].length > seen + 1000 || undefined, 60_000);
    } finally {
      child.kill('SIGTERM');
      await closed;
    }
    const counters = [...out.matchAll(/^n=(\d+) /gm)].map((m) => Number(m[1]));
    assert.ok(counters.length > 1000);
    const broken = counters.findIndex((n, i) => i > 0 && n !== counters[i - 1]! + 1);
    assert.equal(broken, -1, `counter jumps at ${broken}: ${counters.slice(Math.max(0, broken - 2), broken + 2).join(', ')}`);
  });
});

/** A request to the API with the CA alone (no client certificate), or a bearer token that is not the agent's. */
function withoutCredentials(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  extra: { cert?: string; key?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: server.hostname, port: server.port, method, path, ca, headers, ...extra }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 101, body: '' });
    });
    req.on('error', reject);
    req.end();
  });
}

const websocket = (protocol: string) => ({
  Connection: 'Upgrade',
  Upgrade: 'websocket',
  'Sec-WebSocket-Version': '13',
  'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
  'Sec-WebSocket-Protocol': protocol,
});
const spdy = (protocol: string) => ({ Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocol });

describe('a client without credentials', { skip: skipAll }, () => {
  const pod = `/api/v1/namespaces/${NS}/pods/shell`;
  const touch = (file: string) =>
    `command=sh&command=-c&command=${encodeURIComponent(`touch ${file}`)}&container=app&stdout=true&stderr=true`;

  test('gets 401 on exec (WebSocket and SPDY), attach, port-forward and log, and no command runs in the container', async () => {
    const cases: [string, string, string, Record<string, string>][] = [
      ['exec over WebSocket', 'GET', `${pod}/exec?${touch('/tmp/unauth-ws')}`, websocket('v5.channel.k8s.io')],
      ['exec over SPDY', 'POST', `${pod}/exec?${touch('/tmp/unauth-spdy')}`, spdy('v4.channel.k8s.io')],
      ['attach', 'GET', `${pod}/attach?container=app&stdin=true&stdout=true`, websocket('v5.channel.k8s.io')],
      ['port-forward over WebSocket', 'GET', `${pod}/portforward?ports=80`, websocket('SPDY/3.1+portforward.k8s.io')],
      ['port-forward over SPDY', 'POST', `${pod}/portforward`, spdy('portforward.k8s.io')],
      ['log', 'GET', `${pod}/log?container=app`, {}],
    ];
    for (const [what, method, path, headers] of cases) {
      for (const auth of [{}, { Authorization: 'Bearer not-the-agents-token' }] as Record<string, string>[]) {
        const r = await withoutCredentials(method, path, { ...headers, ...auth });
        assert.equal(r.status, 401, `${what} ${JSON.stringify(auth)}: ${r.status} ${r.body}`);
        const status = JSON.parse(r.body) as { kind: string; reason: string; code: number };
        assert.deepEqual([status.kind, status.reason, status.code], ['Status', 'Unauthorized', 401], what);
      }
    }
    // The same log request with the kubeconfig's client certificate is answered: the paths are the served ones.
    const user = (yaml.load(readFileSync(kube.kubeconfig, 'utf8')) as { users: { user: Record<string, string> }[] }).users[0]!.user;
    const pem = (k: string) => Buffer.from(user[k]!, 'base64').toString();
    const ok = await withoutCredentials(
      'GET',
      `${pod}/log?container=app&tailLines=1`,
      {},
      {
        cert: pem('client-certificate-data'),
        key: pem('client-key-data'),
      },
    );
    assert.deepEqual(ok, { status: 200, body: 'line10\n' });
  });

  test('kubectl with a kubeconfig without the client certificate and key (a token not the agent’s) is refused by exec, attach, port-forward and logs', async () => {
    const config = yaml.load(readFileSync(kube.kubeconfig, 'utf8')) as { users: { user: Record<string, string> }[] };
    // With no user at all kubectl would prompt for a password; a token the agent never issued is sent instead.
    for (const u of config.users) u.user = { token: 'not-the-agents-token' };
    const anonymous = join(dir.dir, 'kubeconfig-anonymous');
    writeFileSync(anonymous, yaml.dump(config), { mode: 0o600 });
    const runs: [string, string[]][] = [
      ['exec', ['exec', 'shell', '-c', 'app', '--', 'sh', '-c', 'touch /tmp/unauth-kubectl']],
      ['attach', ['attach', 'shell', '-c', 'app']],
      ['port-forward', ['port-forward', 'pod/shell', '18099:80', '--pod-running-timeout', '5s']],
      ['logs', ['logs', 'shell']],
    ];
    for (const [what, args] of runs) {
      const r = await kubectl(K132!.path, args, { kubeconfig: anonymous });
      assert.notEqual(r.code, 0, `${what}: ${r.stdout}`);
      assert.match(r.stderr, /You must be logged in to the server/, what);
    }
  });

  test('afterwards, nothing those clients sent ran: the files their commands would make are not there', async () => {
    const r = await kubectl(K132!.path, [
      'exec',
      'shell',
      '-c',
      'app',
      '--',
      'sh',
      '-c',
      'for f in /tmp/unauth-ws /tmp/unauth-spdy /tmp/unauth-kubectl; do test -e $f && echo $f; done; echo checked',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'checked\n');
  });
});
