import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { handlePodUpgrade, servePodLog } from '../../src/core/kubeapi/streams/index.js';
import { E2E_NAMESPACE, e2eClient, eventually, podctl, removeE2EPods, scratchDir } from '../support/e2e.js';

/**
 * Real kubectl (1.32 over WebSocket v5 and over SPDY, 1.29 over SPDY only) against the streams on
 * the embedded containerd, through a stand-in for the agent's API server: discovery, GET of the pod
 * (the agent's own status of it) and the streams handed to handlePodUpgrade and servePodLog.
 */
const KUBECTL_DIR = '/usr/lib/google-cloud-sdk/bin';
const K132 = join(KUBECTL_DIR, 'kubectl.1.32');
const K129 = join(KUBECTL_DIR, 'kubectl.1.29');
const NS = E2E_NAMESPACE;
const dir = scratchDir('e2e-kubectl-streams');
const root = join(dir.dir, 'root');
const manifest = join(dir.dir, 'pods.yaml');
let client: CriClient;
let api: Server;
let kubeconfig: string;

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

function agentPod(name: string): Promise<IPod | undefined> {
  return new Promise((resolve, reject) => {
    get({ socketPath: join(root, 'podctl.sock'), path: `/v1/pods/${NS}/${name}` }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(res.statusCode === 200 ? (JSON.parse(body) as IPod) : undefined));
    }).on('error', reject);
  });
}

const podOf = async (url: URL) => agentPod(url.pathname.split('/')[6] ?? '');

function json(res: import('node:http').ServerResponse, code: number, body: unknown) {
  res.writeHead(code, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}

async function serveApi(req: IncomingMessage, res: import('node:http').ServerResponse) {
  const url = new URL(req.url!, 'http://x');
  const parts = url.pathname.split('/');
  if (url.pathname === '/api') return json(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
  if (url.pathname === '/apis') return json(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
  if (url.pathname === '/api/v1') {
    const sub = (name: string, kind: string, verbs: string[]) => ({ name, singularName: '', namespaced: true, kind, verbs });
    return json(res, 200, {
      kind: 'APIResourceList',
      groupVersion: 'v1',
      resources: [
        { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list'], shortNames: ['po'] },
        sub('pods/exec', 'PodExecOptions', ['create', 'get']),
        sub('pods/attach', 'PodAttachOptions', ['create', 'get']),
        sub('pods/log', 'Pod', ['get']),
      ],
    });
  }
  const pod = parts.length >= 7 ? await podOf(url) : undefined;
  if (!pod) return json(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
  if (parts.length === 7) return json(res, 200, pod);
  if (parts[7] === 'log') return servePodLog(req, res, url, { pod, cri: client });
  json(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
}

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  const docs = PODS.map((p) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, namespace: NS, ...(p.annotations ? { annotations: p.annotations } : {}) },
      spec: { terminationGracePeriodSeconds: 1, containers: p.containers.map((c) => ({ ...c, image: 'busybox:1.36' })) },
    }),
  );
  writeFileSync(manifest, docs.join('\n---\n'));
  const run = podctl([
    'run',
    '--detach',
    '--root-dir',
    root,
    '--container-log-max-size',
    '1Mi',
    '--container-log-max-files',
    '3',
    '--container-log-monitor-interval',
    '100ms',
    '--wait',
    'none',
    manifest,
  ]);
  assert.equal(run.code, 0, run.stderr);
  api = createServer((req, res) => void serveApi(req, res).catch((err: Error) => json(res, 500, { message: err.message })));
  api.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url!, 'http://x');
    void podOf(url).then((pod) => {
      const kind = url.pathname.split('/')[7] as 'exec' | 'attach';
      if (pod) handlePodUpgrade(kind, req, socket, head, url, { pod, cri: client });
      else socket.destroy();
    });
  });
  api.listen(0, '127.0.0.1');
  await once(api, 'listening');
  kubeconfig = join(dir.dir, 'kubeconfig');
  const server = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'podctl', cluster: { server } }],
      users: [{ name: 'podctl', user: {} }],
      contexts: [{ name: 'podctl', context: { cluster: 'podctl', user: 'podctl', namespace: NS } }],
      'current-context': 'podctl',
    }),
  );
  for (const name of ['shell', 'chatty'])
    await eventually(
      `${name} runs`,
      async () => ((await agentPod(name))?.status?.containerStatuses ?? []).every((c) => c.state?.running) || undefined,
      120_000,
    );
});

after(async () => {
  api?.close();
  podctl(['agent', 'stop', '--root-dir', root]);
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
function kubectl(bin: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  const cache = join(dir.dir, `cache-${calls++}`);
  const child = spawn(bin, ['--kubeconfig', kubeconfig, '--cache-dir', cache, ...args], {
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
  { name: 'kubectl 1.32 (WebSocket v5)', bin: K132, env: {} },
  {
    name: 'kubectl 1.32 with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false (SPDY)',
    bin: K132,
    env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' },
  },
  { name: 'kubectl 1.29 (SPDY only)', bin: K129, env: {} },
];

/** `kubectl exec -it shell -- sh` under util-linux's script (a pseudo-terminal): typed lines, a resize, exit. */
async function interactive(bin: string, env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  const ttyName = join(dir.dir, `tty-${calls}`);
  const cmd = `tty > ${ttyName}; stty rows 30 cols 100; exec ${bin} --kubeconfig ${kubeconfig} --cache-dir ${join(dir.dir, `cache-${calls++}`)} exec -it shell -- sh`;
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

describe('kubectl exec', { skip: !existsSync(K132) || !existsSync(K129) ? 'kubectl 1.32 and 1.29 are needed' : false }, () => {
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

describe('kubectl logs', { skip: !existsSync(K132) ? 'kubectl 1.32 is needed' : false }, () => {
  test('--tail 5, -c, the default-container annotation, --since', async () => {
    const tail = await kubectl(K132, ['logs', 'shell', '--tail', '5']);
    assert.equal(tail.code, 0, tail.stderr);
    assert.equal(tail.stdout, 'line6\nline7\nline8\nline9\nline10\n');
    assert.equal((await kubectl(K132, ['logs', 'shell', '-c', 'side'])).stdout, 'side-says-hi\n');
    assert.equal((await kubectl(K132, ['logs', 'shell', '--since', '1h'])).stdout.split('\n').filter(Boolean).length, 10);
    const started = Date.parse(
      (await agentPod('shell'))!.status!.containerStatuses!.find((c) => c.name === 'app')!.state!.running!.startedAt!,
    );
    await eventually('the lines are more than 2s old', async () => Date.now() - started > 3000 || undefined);
    assert.equal((await kubectl(K132, ['logs', 'shell', '--since', '2s'])).stdout, '');
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
    const r = await kubectl(K132, ['logs', 'crash', '--previous']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^boot-[0-9a-f-]+\n$/);
    assert.ok(pod);
    const none = await kubectl(K132, ['logs', 'shell', '--previous']);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /previous terminated container "app" in pod "shell" not found/);
  });

  test('-f across log rotations: the counter arrives without a gap or a repeat', async () => {
    const cache = join(dir.dir, `cache-${calls++}`);
    const child = spawn(K132, ['--kubeconfig', kubeconfig, '--cache-dir', cache, 'logs', '-f', 'chatty'], {
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
