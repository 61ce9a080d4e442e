import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStateLock } from '../../src/core/lock.js';
import { podctl, startPodctl, type RunningPodctl } from './e2e.js';

/**
 * The kubectl the e2e tests run: a fixed 1.3x one. On these machines the kubectl package (Google
 * Cloud SDK's) has a dispatcher on PATH and the versioned binaries in its own bin folder; elsewhere
 * whatever `kubectl` is on PATH (scripts/ensure-kubectl.mjs installs Debian's when there is none).
 */
export interface Kubectl {
  path: string;
  minor: number;
}

function versionOf(path: string): number | undefined {
  const r = spawnSync(path, ['version', '--client', '-o', 'json'], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) return undefined;
  try {
    const minor = (JSON.parse(r.stdout) as { clientVersion?: { minor?: string } }).clientVersion?.minor;
    return minor ? Number.parseInt(minor, 10) : undefined;
  } catch {
    return undefined;
  }
}

/** The versioned binaries of the kubectl package (kubectl.1.27 … kubectl.1.33), by minor. */
function packagedKubectls(): Map<number, string> {
  const found = new Map<number, string>();
  const r = spawnSync('dpkg', ['-L', 'kubectl'], { encoding: 'utf8' });
  const dirs = new Set<string>();
  for (const line of r.status === 0 ? r.stdout.split('\n') : []) {
    const m = /^(.*)\/kubectl\.1\.(\d+)$/.exec(line.trim());
    if (m) found.set(Number(m[2]), line.trim());
    else if (line.endsWith('/bin')) dirs.add(line.trim());
  }
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)) {
      const m = /^kubectl\.1\.(\d+)$/.exec(f);
      if (m && !found.has(Number(m[1]))) found.set(Number(m[1]), join(dir, f));
    }
  }
  return found;
}

let cached: Map<number, string> | undefined;

/** kubectl 1.<minor> exactly, when the machine has it. */
export function kubectlOfMinor(minor: number): Kubectl | undefined {
  cached ??= packagedKubectls();
  const path = cached.get(minor);
  return path ? { path, minor } : undefined;
}

/** The tests' kubectl: 1.32 from the package, else the newest 1.3x there, else the one on PATH (any version, said by its minor). */
export function findKubectl(): Kubectl | undefined {
  const fixed = kubectlOfMinor(32);
  if (fixed) return fixed;
  cached ??= packagedKubectls();
  const newest = [...cached.keys()].filter((m) => m >= 30).sort((a, b) => b - a)[0];
  if (newest !== undefined) return { path: cached.get(newest)!, minor: newest };
  const minor = versionOf('kubectl');
  return minor === undefined ? undefined : { path: 'kubectl', minor };
}

/** Why a test that needs kubectl 1.<minor> or newer skips, or false when it can run. */
export function needsKubectl(minor = 30): string | false {
  const k = findKubectl();
  if (!k) return 'no kubectl on this machine (scripts/ensure-kubectl.mjs installs one)';
  return k.minor < minor
    ? `kubectl 1.${k.minor} is older than 1.${minor}, which this test needs (aggregated discovery, WebSocket streams)`
    : false;
}

/** One client's files: its own kubeconfig (from `podctl kubeconfig`) and discovery cache dir. */
export interface KubeClient {
  kubectl: Kubectl;
  kubeconfig: string;
  cacheDir: string;
  run(
    args: string[],
    opts?: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
  ): { code: number; stdout: string; stderr: string };
  runAsync(
    args: string[],
    opts?: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  spawn(args: string[], opts?: { env?: NodeJS.ProcessEnv }): ChildProcess;
}

/** A kubectl client for the agent on rootDir, its kubeconfig written under dir. */
export function kubeClient(rootDir: string, dir: string, kubectl = findKubectl()): KubeClient {
  if (!kubectl) throw new Error('no kubectl');
  mkdirSync(dir, { recursive: true });
  const cfg = podctl(['kubeconfig', '--root-dir', rootDir]);
  if (cfg.code !== 0) throw new Error(`podctl kubeconfig failed: ${cfg.stderr}`);
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, cfg.stdout, { mode: 0o600 });
  const cacheDir = join(dir, 'kube-cache');
  const argv = (args: string[]) => ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args];
  const env = (extra?: NodeJS.ProcessEnv) => ({ ...process.env, KUBECONFIG: kubeconfig, ...extra });
  return {
    kubectl,
    kubeconfig,
    cacheDir,
    run: (args, opts = {}) => {
      const r = spawnSync(kubectl.path, argv(args), {
        input: opts.input,
        env: env(opts.env),
        encoding: 'utf8',
        timeout: opts.timeoutMs ?? 120_000,
      });
      return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
    },
    runAsync: (args, opts = {}) =>
      new Promise((resolve) => {
        const child = spawn(kubectl.path, argv(args), { env: env(opts.env), stdio: ['pipe', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code: code ?? -1, stdout, stderr });
        });
        child.stdin.end(opts.input ?? '');
      }),
    spawn: (args, opts = {}) => spawn(kubectl.path, argv(args), { env: env(opts.env), stdio: ['pipe', 'pipe', 'pipe'] }),
  };
}

/** An agent a test started in the foreground on its own root dir, its Kubernetes API up. */
export interface KubeAgentHandle extends RunningPodctl {
  /** Ends it, and whatever still holds its root dir's lock (stopOnRoot); safe to call again. */
  stop(): Promise<void>;
}

/**
 * `podctl agent` on root with its Kubernetes API on a free port, resolved once it says where. When
 * it does not come up, it is stopped before the error is thrown: no caller is left without a handle
 * to an agent still running.
 */
export async function startKubeAgent(opts: { root: string; logs: string; args?: string[]; timeoutMs?: number }): Promise<KubeAgentHandle> {
  const args = ['agent', '--root-dir', opts.root, '--log-root', opts.logs, '--kube-api-port', '0', ...(opts.args ?? [])];
  const agent = startPodctl(args, { timeoutMs: opts.timeoutMs });
  const handle: KubeAgentHandle = { ...agent, stop: () => stopOnRoot(agent, opts.root) };
  try {
    await agent.waitFor(/Kubernetes API on https:\/\/\S+/, 60_000);
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
}

/**
 * Interrupts p and awaits its end, then SIGKILLs by PID a holder of root's lock still there: root
 * is this test's own dir, so the holder is an agent the test started (readStateLock checks its
 * command line, so a reused PID is not taken for it). Once p has ended, the interrupt is a no-op.
 */
export async function stopOnRoot(p: RunningPodctl, root: string): Promise<void> {
  p.interrupt();
  await p.done;
  const holder = readStateLock(root);
  if (!holder) return;
  try {
    process.kill(holder.pid, 'SIGKILL');
  } catch {
    // Ended between the read and the kill.
  }
}
