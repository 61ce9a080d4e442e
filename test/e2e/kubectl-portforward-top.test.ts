import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { request } from 'node:https';
import { join, relative } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import type { CriClient } from '../../src/core/cri/client.js';
import { E2E_NAMESPACE, e2eClient, eventually, removeE2EPods, scratchDir } from '../support/e2e.js';
import { kubeClient, kubectlOfMinor, needsKubectl, startKubeAgent, type KubeAgentHandle, type KubeClient } from '../support/kubectl.js';

/**
 * The real agent's Kubernetes API with the real kubectl: port-forward (WebSocket-tunnelled and plain
 * SPDY) to an HTTP server in a pod, top pod and top node, exec -i of 5 MB over SPDY (kubectl 1.29,
 * whose SPDY never gives window back), cp of a tree both ways, and the 401 of a client without
 * credentials on port-forward and exec.
 */
const NS = E2E_NAMESPACE;
const skip = needsKubectl(30);
const k129 = kubectlOfMinor(29);
let client: CriClient;
let dirs: ReturnType<typeof scratchDir>;
let root: string;
let logs: string;
let agent: KubeAgentHandle | undefined;
let kube: KubeClient;
const forwards = new Set<ChildProcess>();

/** What the pod's httpd serves: `seq 1 3000`, made in the container and known here. */
const SERVED = Array.from({ length: 3000 }, (_, i) => `${i + 1}\n`).join('');
const WEB =
  `apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n` +
  `  - name: app\n    image: busybox:1.36\n` +
  `    command: [sh, -c, "mkdir -p /www && seq 1 3000 > /www/index.html && exec httpd -f -v -p 80 -h /www"]\n`;

before(async () => {
  if (skip) return;
  client = e2eClient();
  await removeE2EPods(client);
  dirs = scratchDir('kubectl-pf-top');
  root = join(dirs.dir, 'root');
  logs = join(dirs.dir, 'logs');
  agent = await startKubeAgent({ root, logs, timeoutMs: 900_000 });
  kube = kubeClient(root, join(dirs.dir, 'client'));
  const file = join(dirs.dir, 'web.yaml');
  writeFileSync(file, WEB);
  ok(kube.run(['apply', '-n', NS, '-f', file]), 'apply web');
  await eventually(
    'web running',
    async () => {
      const r = kube.run(['get', 'pod', 'web', '-n', NS, '-o', 'json']);
      const p = r.code === 0 ? (JSON.parse(r.stdout) as IPod) : undefined;
      return p?.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.state?.running ? p : undefined;
    },
    120_000,
  );
  // httpd listening on :80, IPv4 or IPv6 (read from the kernel, not by a request that would be counted).
  await eventually(
    'httpd listening',
    async () =>
      /^\s*\d+: 0+:0050 0+:0000 0A /m.test(kube.run(['exec', '-n', NS, 'web', '--', 'cat', '/proc/net/tcp', '/proc/net/tcp6']).stdout)
        ? true
        : undefined,
    60_000,
  );
});

after(async () => {
  if (skip) return;
  for (const child of forwards) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await agent?.stop();
  await removeE2EPods(client);
  client.close();
  dirs.cleanup();
});

function ok(r: { code: number; stdout: string; stderr: string }, what: string): string {
  assert.equal(r.code, 0, `${what}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** The agent's API endpoint and its CA, from the root dir and the kubeconfig. */
function endpoint(): { url: string; ca: string } {
  const { url } = JSON.parse(readFileSync(join(root, 'kubeapi', 'endpoint.json'), 'utf8')) as { url: string };
  const cfg = readFileSync(kube.kubeconfig, 'utf8');
  return { url, ca: Buffer.from(/certificate-authority-data: (\S+)/.exec(cfg)![1]!, 'base64').toString() };
}

/** An upgrade without credentials: the HTTP answer (an upgrade itself fails the test). */
function anonymousUpgrade(path: string, headers: Record<string, string>, method = 'POST'): Promise<{ status: number; body: string }> {
  const { url, ca } = endpoint();
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, ca, headers: { Connection: 'Upgrade', ...headers } });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error(`${path} was upgraded without credentials`));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The number of requests the pod's httpd has answered (its -v log: one `response:CODE` line each). */
function answered(): number {
  const out = ok(kube.run(['logs', '-n', NS, 'web']), 'logs web');
  return out.split('\n').filter((l) => /: response:\d+$/.test(l)).length;
}

const POD = `/api/v1/namespaces/${NS}/pods/web`;
const WS_HEADERS = {
  Upgrade: 'websocket',
  'Sec-WebSocket-Version': '13',
  'Sec-WebSocket-Key': Buffer.from('0123456789abcdef').toString('base64'),
};

test('without credentials: 401 on portforward (WebSocket tunnel and SPDY) and exec, and nothing reaches the pod', { skip }, async () => {
  const refused = [
    await anonymousUpgrade(`${POD}/portforward`, { ...WS_HEADERS, 'Sec-WebSocket-Protocol': 'SPDY/3.1+portforward.k8s.io' }, 'GET'),
    await anonymousUpgrade(`${POD}/portforward`, { Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'portforward.k8s.io' }),
    await anonymousUpgrade(`${POD}/exec?command=touch&command=/tmp/pwned&stdout=true`, {
      Upgrade: 'SPDY/3.1',
      'X-Stream-Protocol-Version': 'v4.channel.k8s.io',
    }),
    await anonymousUpgrade(
      `${POD}/exec?command=touch&command=/tmp/pwned&stdout=true`,
      { ...WS_HEADERS, 'Sec-WebSocket-Protocol': 'v5.channel.k8s.io' },
      'GET',
    ),
  ];
  for (const r of refused) {
    assert.equal(r.status, 401);
    assert.equal((JSON.parse(r.body) as { reason: string }).reason, 'Unauthorized');
  }
  assert.equal(answered(), 0, 'httpd answered nothing');
  const pwned = kube.run(['exec', '-n', NS, 'web', '--', 'test', '-e', '/tmp/pwned']);
  assert.equal(pwned.code, 1, `the command did not run: ${pwned.stderr}`);
});

/** `kubectl port-forward pod/web :80`: the local port kubectl chose, once it says it forwards. */
async function portForward(env?: NodeJS.ProcessEnv): Promise<{ port: number; stop: () => Promise<void> }> {
  const child = kube.spawn(['port-forward', '-n', NS, 'pod/web', ':80'], { env });
  forwards.add(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^Forwarding from 127\.0\.0\.1:(\d+) -> 80$/m.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('close', (code) => reject(new Error(`kubectl port-forward exited ${code}: ${err}${out}`)));
  });
  return {
    port,
    stop: async () => {
      const closed = once(child, 'close');
      child.kill('SIGINT');
      await closed;
      forwards.delete(child);
    },
  };
}

function httpGet(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/index.html', agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** 50 requests, 10 connections at a time (httpd closes each after its answer): every one the file. */
async function fiftyRequests(port: number): Promise<void> {
  const results = await Promise.all(
    Array.from({ length: 10 }, async () => {
      const got: { status: number; body: string }[] = [];
      for (let i = 0; i < 5; i++) got.push(await httpGet(port));
      return got;
    }),
  );
  const all = results.flat();
  assert.equal(all.length, 50);
  for (const r of all) {
    assert.equal(r.status, 200);
    assert.equal(r.body, SERVED);
  }
}

test(
  'kubectl port-forward pod/web (SPDY tunnelled in WebSocket): 50 requests over 10 parallel connections all answer with the file',
  { skip },
  async () => {
    const pf = await portForward();
    try {
      await fiftyRequests(pf.port);
    } finally {
      await pf.stop();
    }
  },
);

test('kubectl port-forward with KUBECTL_PORT_FORWARD_WEBSOCKETS=false (plain SPDY): the same 50 requests', { skip }, async () => {
  const pf = await portForward({ KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' });
  try {
    await fiftyRequests(pf.port);
  } finally {
    await pf.stop();
  }
  // The httpd saw exactly the 100 forwarded requests: the refused clients before them reached nothing.
  const seen = await eventually('100 answers in the httpd log', async () => (answered() >= 100 ? answered() : undefined), 60_000);
  assert.equal(seen, 100);
});

test('kubectl top pod and top node print figures for the running pod and the node', { skip }, async () => {
  const pod = await eventually(
    'top pod figures',
    async () => {
      const r = kube.run(['top', 'pod', 'web', '-n', NS, '--no-headers']);
      return r.code === 0 && /^web\s+\d+m\s+\d+Mi\s*$/m.test(r.stdout) ? r.stdout : undefined;
    },
    90_000,
  );
  assert.match(pod, /^web\s/m);
  const node = await eventually(
    'top node figures',
    async () => {
      const r = kube.run(['top', 'node', '--no-headers']);
      return r.code === 0 && /^\S+\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%\s*$/m.test(r.stdout) ? r.stdout : undefined;
    },
    90_000,
  );
  assert.equal(node.trim().split('\n').length, 1, 'one node');
});

/** 5 MB of text lines, every one different. */
const FIVE_MB = (() => {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < 5_000_000; i++) {
    const line = `${i} ${'abcdefghijklmnopqrstuvwxyz'.repeat(3)} ${(i * 2654435761) % 4294967296}\n`;
    lines.push(line);
    size += line.length;
  }
  return lines.join('');
})();

for (const [name, minor, env] of [
  ['kubectl 1.29 (SPDY only)', 29, {}],
  ['kubectl 1.32 with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false', 32, { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' }],
  ['kubectl 1.32 over WebSocket', 32, {}],
] as const) {
  const noKubectl = minor === 29 && !k129 ? 'no kubectl 1.29 on this machine' : false;
  test(`${name}: exec -i web -- cat of 5 MB gives the same bytes back and ends at EOF`, { skip: skip || noKubectl }, async () => {
    const c = minor === 29 ? kubeClient(root, join(dirs.dir, 'client-1.29'), k129) : kube;
    const r = await c.runAsync(['exec', '-i', '-n', NS, 'web', '--', 'cat'], { input: FIVE_MB, env, timeoutMs: 300_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.length, FIVE_MB.length);
    assert.ok(r.stdout === FIVE_MB, 'the same bytes back');
  });
}

/** Every file and directory under dir: its path, and its bytes for a file. */
function tree(dir: string): [string, string][] {
  const out: [string, string][] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) {
        out.push([relative(dir, p) + '/', '']);
        walk(p);
      } else out.push([relative(dir, p), readFileSync(p).toString('base64')]);
    }
  };
  walk(dir);
  return out;
}

test('kubectl cp of a directory tree into the pod and back: the same bytes', { skip }, () => {
  const src = join(dirs.dir, 'tree');
  mkdirSync(join(src, 'sub', 'deeper'), { recursive: true });
  mkdirSync(join(src, 'empty-dir'));
  writeFileSync(join(src, 'a.txt'), 'hello\n');
  writeFileSync(join(src, 'empty'), '');
  const binary = Buffer.alloc(700 * 1024);
  for (let i = 0; i < binary.length; i++) binary[i] = (i * 131 + (i >> 9)) & 0xff;
  writeFileSync(join(src, 'sub', 'blob.bin'), binary);
  writeFileSync(join(src, 'sub', 'deeper', 'c with space.txt'), 'deep\n'.repeat(1000));
  ok(kube.run(['cp', '-n', NS, src, 'web:/tmp/tree']), 'cp into the pod');
  const listed = ok(kube.run(['exec', '-n', NS, 'web', '--', 'sh', '-c', 'cd /tmp/tree && find . | sort']), 'find in the pod');
  assert.deepEqual(listed.trim().split('\n'), [
    '.',
    './a.txt',
    './empty',
    './empty-dir',
    './sub',
    './sub/blob.bin',
    './sub/deeper',
    './sub/deeper/c with space.txt',
  ]);
  const back = join(dirs.dir, 'back');
  ok(kube.run(['cp', '-n', NS, 'web:/tmp/tree', back]), 'cp out of the pod');
  assert.deepEqual(tree(back), tree(src));
});
