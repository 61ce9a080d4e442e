import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { findKubectl, type Kubectl } from '../test/support/kubectl.js';
import { errorMessage } from '../src/core/errors.js';
import { BENCH_NAMESPACE, PODCTL_BIN, onCleanup, sleep, timeProcess, until, type Timed } from './lib.js';
import { REAL_ENDPOINT, criClient, sweepBenchPods } from './node.js';

/** A `podctl agent` serving the Kubernetes API on a free port, in its own root dir, on the runtime at `endpoint`. */
export interface KubeAgent {
  pid: number;
  url: string;
  rootDir: string;
  /** `podctl kubeconfig`'s output, written as a user writes it. */
  kubeconfig: string;
  /** kubectl's own discovery cache: warm after the first command. */
  cacheDir: string;
  kubectl: Kubectl;
  env: NodeJS.ProcessEnv;
  /** The kubeconfig's client certificate, for Node's https clients. */
  tls: { ca: string; cert: string; key: string };
  /** kubectl with this agent's kubeconfig and cache dir. */
  kubectlArgs(args: string[]): string[];
  /** Its last lines of output, for error messages. */
  tail(): string;
  /** SIGTERM to its PID (SIGKILL after 60 s); resolves once it has exited. */
  stop(): Promise<void>;
}

export function requireKubectl(): Kubectl {
  const k = findKubectl();
  if (!k) throw new Error('no kubectl on this machine (scripts/ensure-kubectl.mjs installs one)');
  return k;
}

export async function startKubeAgent(opts: { dir: string; endpoint: string; cleanupOnExit?: boolean }): Promise<KubeAgent> {
  const kubectl = requireKubectl();
  const rootDir = join(opts.dir, 'root');
  const env = { ...process.env, CONTAINER_RUNTIME_ENDPOINT: opts.endpoint };
  const args = [PODCTL_BIN, 'agent', '--root-dir', rootDir, '--log-root', join(opts.dir, 'logs'), '--kube-api-port', '0'];
  if (opts.cleanupOnExit) args.push('--cleanup-on-exit');
  const child: ChildProcess = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let url: string | undefined;
  let pid: number | undefined;
  const onData = (d: Buffer) => {
    // One line per pod status change: kept short, only the tail matters.
    for (const line of d.toString().split('\n')) {
      if (!line) continue;
      lines.push(line);
      if (lines.length > 40) lines.shift();
      url ??= /Kubernetes API on (https:\/\/\S+)/.exec(line)?.[1];
      pid ??= Number(/agent pid (\d+)/.exec(line)?.[1]) || undefined;
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const stop = async () => {
    if (running()) child.kill('SIGTERM');
    await Promise.race([exited, sleep(60_000)]);
    if (running()) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  const tail = () => lines.slice(-10).join('\n');
  if (!(await until(() => url !== undefined || !running(), 60_000, 50)) || !url) {
    await stop();
    throw new Error(`the agent did not serve the Kubernetes API within 60 s:\n${tail()}`);
  }
  const kubeconfig = join(opts.dir, 'kubeconfig');
  const cfg = await timeProcess(process.execPath, [PODCTL_BIN, 'kubeconfig', '--root-dir', rootDir], { env });
  if (cfg.code !== 0) {
    await stop();
    throw new Error(`podctl kubeconfig exited ${cfg.code}: ${cfg.stderr}`);
  }
  writeFileSync(kubeconfig, cfg.stdout, { mode: 0o600 });
  const doc = yaml.load(cfg.stdout) as {
    clusters: { cluster: Record<string, string> }[];
    users: { user: Record<string, string> }[];
  };
  const b64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');
  const tls = {
    ca: b64(doc.clusters[0]?.cluster['certificate-authority-data']),
    cert: b64(doc.users[0]?.user['client-certificate-data']),
    key: b64(doc.users[0]?.user['client-key-data']),
  };
  const cacheDir = join(opts.dir, 'kube-cache');
  return {
    pid: pid ?? child.pid!,
    url,
    rootDir,
    kubeconfig,
    cacheDir,
    kubectl,
    env,
    tls,
    kubectlArgs: (a) => ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...a],
    tail,
    stop,
  };
}

/** kubectl against the agent, timed from spawn to exit. */
export function kubectl(agent: KubeAgent, args: string[], timeoutMs?: number): Promise<Timed> {
  return timeProcess(agent.kubectl.path, agent.kubectlArgs(args), { env: { ...agent.env, KUBECONFIG: agent.kubeconfig }, timeoutMs });
}

/** podctl against the agent's root dir, timed from spawn to exit. */
export function podctl(agent: KubeAgent, args: string[], timeoutMs?: number): Promise<Timed> {
  return timeProcess(process.execPath, [PODCTL_BIN, ...args, '--root-dir', agent.rootDir], { env: agent.env, timeoutMs });
}

export interface KubeResponse {
  status: number;
  body: string;
}

/** One request to the agent's Kubernetes API, authenticated by the kubeconfig's client certificate. */
export function kubeRequest(
  agent: KubeAgent,
  client: HttpsAgent,
  method: string,
  path: string,
  body?: { text: string; type: string },
): Promise<KubeResponse> {
  const url = new URL(path, agent.url);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method,
        agent: client,
        headers: {
          accept: 'application/json',
          ...(body ? { 'content-type': body.type, 'content-length': Buffer.byteLength(body.text) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body?.text);
  });
}

export function httpsClient(agent: KubeAgent, opts: { keepAlive?: boolean; maxSockets?: number } = {}): HttpsAgent {
  return new HttpsAgent({ ...agent.tls, keepAlive: opts.keepAlive ?? true, maxSockets: opts.maxSockets ?? Infinity });
}

interface PodList {
  metadata?: { resourceVersion?: string };
  items: { metadata?: { name?: string }; status?: { phase?: string; podIP?: string } }[];
}

/** Waits until `names` are all Running in the namespace, as the API lists them; the last list. */
export async function waitRunning(agent: KubeAgent, namespace: string, names: string[], timeoutMs: number): Promise<PodList> {
  const client = httpsClient(agent);
  let last: PodList = { items: [] };
  try {
    const ok = await until(
      async () => {
        const r = await kubeRequest(agent, client, 'GET', `/api/v1/namespaces/${namespace}/pods`).catch(() => undefined);
        if (r?.status !== 200) return false;
        last = JSON.parse(r.body) as PodList;
        const running = new Set(last.items.filter((p) => p.status?.phase === 'Running').map((p) => p.metadata?.name));
        return names.every((n) => running.has(n));
      },
      timeoutMs,
      250,
    );
    if (!ok) {
      const running = last.items.filter((p) => p.status?.phase === 'Running').length;
      throw new Error(`${running} of ${names.length} pod(s) Running after ${Math.round(timeoutMs / 1000)} s:\n${agent.tail()}`);
    }
    return last;
  } finally {
    client.destroy();
  }
}

/** RSS of a process in bytes (Linux /proc), or NaN when it has gone. */
export function rssOf(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? NaN : Number(kb) * 1024;
  } catch {
    return NaN;
  }
}

/** Samples processes' RSS every `everyMs` until stopped: the high-water mark of each. */
export function rssSampler(pids: Record<string, number | undefined>, everyMs = 100): { stop(): Record<string, number> } {
  const peak: Record<string, number> = {};
  const sample = () => {
    for (const [k, pid] of Object.entries(pids)) {
      if (pid === undefined) continue;
      const v = rssOf(pid);
      if (Number.isFinite(v)) peak[k] = Math.max(peak[k] ?? 0, v);
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** GET http://host:port/path to its end: bytes and milliseconds from the request to the last byte. */
export function download(host: string, port: number, path: string, timeoutMs = 300_000): Promise<{ bytes: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let bytes = 0;
    const req = httpRequest({ host, port, path, agent: false, timeout: timeoutMs }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET http://${host}:${port}${path}: HTTP ${res.statusCode}`));
        return;
      }
      res.on('data', (d: Buffer) => (bytes += d.length));
      res.on('end', () => resolve({ bytes, ms: performance.now() - started }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET http://${host}:${port}${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** A kube-API agent on the real runtime with one pod applied through kubectl and Running; stop() stops the agent and sweeps the pods. */
export async function startRealPod(
  label: string,
  name: string,
  manifest: string,
): Promise<{ agent: KubeAgent; podIP: string; stop: () => Promise<void> }> {
  const client = criClient(REAL_ENDPOINT);
  try {
    await client.version();
  } catch (err) {
    throw new Error(`the embedded runtime does not answer on ${REAL_ENDPOINT} (${errorMessage(err)}): run \`podctl runtime up\` first`);
  } finally {
    client.close();
  }
  await sweepBenchPods();
  const scratch = mkdtempSync(join(tmpdir(), `podctl-bench-${label}-`));
  const removeScratch = onCleanup(`${label} scratch`, async () => {
    await sweepBenchPods();
    rmSync(scratch, { recursive: true, force: true });
  });
  let agent: KubeAgent;
  try {
    agent = await startKubeAgent({ dir: scratch, endpoint: REAL_ENDPOINT, cleanupOnExit: true });
  } catch (err) {
    await removeScratch();
    throw err;
  }
  const stopAgent = onCleanup(`${label} agent`, async () => {
    // The API server's delete first, so the agent forgets the pod; --cleanup-on-exit and the sweep catch the rest.
    await kubectl(agent, ['delete', 'pod', name, '-n', BENCH_NAMESPACE, '--wait=false', '--ignore-not-found'], 30_000);
    await agent.stop();
  });
  const stop = async () => {
    await stopAgent();
    await removeScratch();
  };
  try {
    const file = join(scratch, 'pod.yaml');
    writeFileSync(file, manifest);
    const applied = await kubectl(agent, ['apply', '-f', file]);
    if (applied.code !== 0) throw new Error(`kubectl apply exited ${applied.code}: ${applied.stderr}`);
    const list = await waitRunning(agent, BENCH_NAMESPACE, [name], 120_000);
    const podIP = list.items.find((p) => p.metadata?.name === name)?.status?.podIP;
    if (!podIP) throw new Error(`pod ${name} is Running without a pod IP`);
    return { agent, podIP, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
