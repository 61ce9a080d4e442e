import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { CriClient } from '../../src/core/cri/client.js';
import { CriLogParser } from '../../src/core/logs/index.js';
import { embeddedEndpoint } from '../../src/core/embedded/index.js';
import { realClock } from '../../src/core/clock.js';
import type { RuntimeService } from '../../src/core/cri/client.js';
import type { Kubelet, KubeletOptions } from '../../src/core/kubelet.js';
import type { SyncLoop } from '../../src/core/loop.js';
import { wireNode } from '../../src/core/node/wire.js';
import { readStateLock } from '../../src/core/lock.js';
import { MANAGED_BY_LABEL, POD_NAMESPACE_LABEL } from '../../src/core/kuberuntime/labels.js';

/** The endpoint end-to-end tests run against: the embedded containerd unless told otherwise. */
export const E2E_ENDPOINT = process.env.PODCTL_E2E_ENDPOINT ?? embeddedEndpoint();

/**
 * Every e2e pod lives in this namespace, so cleanup can find all of them.
 * PODCTL_E2E_NAMESPACE lets two suites share one runtime without removing each other's pods.
 */
export const E2E_NAMESPACE = process.env.PODCTL_E2E_NAMESPACE ?? 'podctl-e2e';

export function e2eClient(): CriClient {
  return new CriClient({ runtimeEndpoint: E2E_ENDPOINT, timeoutMs: 60_000, pullTimeoutMs: 120_000 });
}

/** Stops and removes every sandbox an e2e test made (by namespace label). */
export async function removeE2EPods(client: CriClient, namespace = E2E_NAMESPACE): Promise<number> {
  const sandboxes = await client.listPodSandbox({ labelSelector: { [POD_NAMESPACE_LABEL]: namespace } });
  for (const s of sandboxes) {
    // containerd can fail a stop while a shim goes away under it ("ttrpc: closed", seen in CI after
    // a test restarted containerd): the kubelet retries, and so does the clean-up.
    for (let attempt = 1; ; attempt++) {
      try {
        await client.stopPodSandbox(s.id);
        await client.removePodSandbox(s.id);
        break;
      } catch (err) {
        if (attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 500 * attempt));
      }
    }
  }
  return sandboxes.length;
}

export function scratchDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `podctl-${prefix}-`));
  return {
    dir,
    cleanup: () => {
      stopAgentsUnder(dir);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The safety net behind each test's own `agent stop`: an agent that `run --detach` or `get`
 * started on a root dir under this scratch dir is ended by the PID in its lock (checked against
 * its command line by readStateLock), so no test leaves one running after CI.
 */
export function stopAgentsUnder(dir: string, depth = 3): void {
  const holder = readStateLock(dir);
  if (holder) {
    process.stderr.write(`test left an agent (pid ${holder.pid}) on ${dir}: stopping it\n`);
    signal(holder.pid, 'SIGTERM');
    for (let i = 0; i < 100 && readStateLock(dir); i++) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    if (readStateLock(dir)) signal(holder.pid, 'SIGKILL');
  }
  if (depth === 0) return;
  let entries: string[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.isSymbolicLink())
      .map((e) => e.name);
  } catch {
    return;
  }
  for (const name of entries) stopAgentsUnder(join(dir, name), depth - 1);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

/** Runs the podctl CLI as a user would; never throws. */
export function podctl(
  args: string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    input: opts.input,
    env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT, ...opts.env },
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 180_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export const managedSelector = { [MANAGED_BY_LABEL]: 'podctl' };

/** Resolves with the first status of the pod that satisfies cond (already current, or reported later). */
export function waitForStatus(kubelet: Kubelet, p: IPod, cond: (s: IPodStatus) => boolean, timeoutMs: number): Promise<IPodStatus> {
  return new Promise((resolve, reject) => {
    const current = kubelet.statusManager.get(p.metadata!.uid!);
    if (current && cond(current)) return resolve(current);
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`timed out; last status of ${p.metadata!.name}: ${JSON.stringify(kubelet.statusManager.get(p.metadata!.uid!))}`));
    }, timeoutMs);
    const stop = kubelet.observe({
      onStatus: ({ pod, status }) => {
        if (pod.metadata!.uid !== p.metadata!.uid || !cond(status)) return;
        clearTimeout(timer);
        stop();
        resolve(status);
      },
    });
  });
}

/** Every status a pod reported from the moment recording began, in order. */
export interface StatusRecorder {
  readonly history: IPodStatus[];
  /** The first recorded status matching cond (already seen, or to come), with every status seen before it. */
  first(cond: (s: IPodStatus) => boolean, timeoutMs: number): Promise<{ status: IPodStatus; before: IPodStatus[] }>;
  stop(): void;
}

/**
 * Records a pod's statuses from now on, so a test asserts on what was first observed (the
 * history), not on a snapshot read after waiting for something else. Start it before the pod
 * is added.
 */
export function recordStatuses(kubelet: Kubelet, p: IPod): StatusRecorder {
  const uid = p.metadata!.uid!;
  const history: IPodStatus[] = [];
  const waiters = new Set<() => void>();
  const stop = kubelet.observe({
    onStatus: ({ pod, status }) => {
      if (pod.metadata!.uid !== uid) return;
      history.push(status);
      for (const w of waiters) w();
    },
  });
  return {
    history,
    stop,
    first: (cond, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const i = history.findIndex(cond);
          if (i < 0) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve({ status: history[i]!, before: history.slice(0, i) });
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `timed out; statuses of ${p.metadata!.name} seen: ${JSON.stringify(history.map((s) => s.containerStatuses?.map((c) => ({ state: Object.keys(c.state ?? {})[0], ready: c.ready, started: c.started }))))}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

/** The messages of a container instance's CRI log (partial lines joined); [] when there is none yet. */
export function containerLogLines(logRoot: string, p: IPod, container: string, restartCount = 0): string[] {
  const m = p.metadata!;
  return logFileLines(join(logRoot, `${m.namespace}_${m.name}_${m.uid}`, container, `${restartCount}.log`));
}

/** The lines of a CRI log file; none when it does not exist. */
export function logFileLines(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return new CriLogParser().push(text).map((r) => r.text);
}

/** Runs the podctl CLI without blocking the event loop (an in-process kubelet keeps syncing meanwhile). */
export function podctlAsync(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = startPodctl(args, opts);
  return p.done;
}

export interface RunningPodctl {
  pid: number;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout matches. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** SIGINT, as Ctrl-C. */
  interrupt(): void;
  /** Any signal, to this process only (by its PID), e.g. SIGKILL for crash tests. */
  kill(signal: NodeJS.Signals): void;
  done: Promise<{ code: number; stdout: string; stderr: string }>;
}

/** Starts the podctl CLI in the background (follow and watch modes); the caller interrupts it. */
export function startPodctl(args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): RunningPodctl {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: E2E_ENDPOINT, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters) w();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 180_000);
  const done = new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      for (const w of waiters) w();
      resolve({ code: code ?? -1, stdout: out, stderr: err });
    });
  });
  return {
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    interrupt: () => child.kill('SIGINT'),
    kill: (signal) => child.kill(signal),
    done,
    waitFor: (pattern, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            waiters.delete(check);
            clearTimeout(t);
            resolve(m[0]);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            waiters.delete(check);
            clearTimeout(t);
            reject(new Error(`podctl ${args.join(' ')} ended before printing ${pattern}; stdout: ${out}; stderr: ${err}`));
          }
        };
        const t = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${pattern} from podctl ${args.join(' ')}; stdout: ${out}; stderr: ${err}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

/** An in-process kubelet and its sync loop on the e2e runtime (the e2e namespace cleared first). */
export interface E2ENode {
  client: CriClient;
  kubelet: Kubelet;
  loop: SyncLoop;
  /** Removes the pods through the loop and resolves once they are gone from the runtime. */
  remove(...pods: IPod[]): Promise<void>;
  /** Stops the loop and removes every pod of the e2e namespace. */
  stop(): Promise<void>;
}

export async function startE2ENode(
  opts: Omit<KubeletOptions, 'runtime' | 'images' | 'clock' | 'nodeName'>,
  wrap?: (c: CriClient) => RuntimeService,
): Promise<E2ENode> {
  const client = e2eClient();
  await removeE2EPods(client);
  const { kubelet, loop } = wireNode({
    runtime: wrap ? wrap(client) : client,
    images: client,
    clock: realClock,
    nodeName: 'e2e',
    ...opts,
    relistPeriodMs: 200,
  });
  loop.start();
  const remove = async (...pods: IPod[]): Promise<void> => {
    const left = new Set(pods.map((p) => p.metadata!.uid!));
    const done = new Promise<void>((resolve) => {
      const stop = kubelet.observe({
        onTerminated: (p) => {
          left.delete(p.metadata!.uid!);
          if (left.size === 0) {
            stop();
            resolve();
          }
        },
      });
    });
    loop.removePods([...left]);
    await done;
  };
  return {
    client,
    kubelet,
    loop,
    remove,
    async stop() {
      // Through the kubelet first, so that volumes are torn down even when a test failed half-way.
      const left = [...kubelet.pods.values()];
      if (left.length) await Promise.race([remove(...left), new Promise((r) => setTimeout(r, 30_000).unref())]);
      await loop.stop();
      await kubelet.workers.waitIdle();
      await removeE2EPods(client);
      client.close();
    },
  };
}

/** Polls `fn` every 200 ms until it returns a value; fails naming `what` after `timeoutMs`. */
export async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
