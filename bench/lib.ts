import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import type { IContainer, IPod } from 'kubernetes-models/v1';
import { applyPodDefaults } from '../src/core/pod/index.js';

/** The repository root: benchmarks run compiled, from dist/bench/. */
export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');
export const PODCTL_BIN = join(REPO_ROOT, 'bin', 'run.js');

/** Every pod a benchmark makes on the real runtime lives here, so cleanup can find all of them. */
export const BENCH_NAMESPACE = process.env.PODCTL_BENCH_NAMESPACE ?? 'podctl-e2e-bench';
/** Housekeeping of an in-process Kubelet touches only sandboxes of its own agent. */
export const BENCH_AGENT = 'bench';
export const BUSYBOX = 'busybox:1.36';
/** Ends at once on SIGTERM (sleep as PID 1 would ignore it and cost the whole grace period on cleanup). */
export const SLEEP_COMMAND = ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'];

export interface BenchContext {
  quick: boolean;
  log: (line: string) => void;
  /** scale-fake: only these pod counts (--pods), and only this PLEG at 5,000 (--pleg). */
  pods?: number[];
  pleg?: 'generic' | 'auto';
}

export interface Row {
  /** What is measured, short. */
  name: string;
  /** The measurement as printed (e.g. "231 ms"). */
  value: string;
  /** The target as printed, when there is one. */
  target?: string;
  /** Whether the target is met; undefined when the row has no target or could not be measured. */
  met?: boolean;
  /** How it was measured, for BENCHMARKS.md. */
  about?: string;
}

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  memoryMB: number;
  node: string;
  platform: string;
  runtime?: string;
  date: string;
  /** 1, 5 and 15 minute load averages when the benchmark ended: others' work on a shared machine shows here. */
  loadavg: number[];
}

export interface BenchResult {
  name: string;
  title: string;
  quick: boolean;
  machine: MachineInfo;
  rows: Row[];
  /** Targets missed, each with what we found. */
  findings: string[];
  notes: string[];
  /** Raw samples and counters, for whoever wants to look again. */
  data: Record<string, unknown>;
  durationS: number;
}

export interface Stats {
  n: number;
  min: number;
  median: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    min: s[0] ?? NaN,
    median: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: s[s.length - 1] ?? NaN,
    mean: s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN,
  };
}

export function ms(v: number): string {
  if (!Number.isFinite(v)) return 'n/a';
  return v >= 100 ? `${Math.round(v)} ms` : `${v.toFixed(1)} ms`;
}

export function msStats(s: Stats): string {
  return s.n === 0 ? 'n/a' : `median ${ms(s.median)}, p90 ${ms(s.p90)} (n=${s.n})`;
}

export function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MB`;
}

export function machineInfo(runtime?: string): MachineInfo {
  return {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryMB: Math.round(totalmem() / 1024 / 1024),
    node: process.version,
    platform: `${process.platform} ${readOsRelease()}`,
    runtime,
    date: new Date().toISOString(),
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

function readOsRelease(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]*)"?/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? '';
  } catch {
    return '';
  }
}

export function renderRows(rows: Row[]): string {
  const plain = !process.stdout.isTTY;
  const table = new Table({
    head: ['measurement', 'value', 'target', 'met'],
    wordWrap: true,
    colWidths: [46, 44, 30, 8],
    style: plain ? { head: [], border: [] } : {},
  });
  for (const r of rows) table.push([r.name, r.value, r.target ?? '', r.met === undefined ? '' : r.met ? 'met' : 'MISSED']);
  return table.toString();
}

export function writeResult(result: BenchResult): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${result.name}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}

/** A defaulted pod in the bench namespace. */
export function benchPod(
  name: string,
  uid: string,
  opts: {
    containers?: IContainer[];
    hostNetwork?: boolean;
    restartPolicy?: 'Always' | 'Never';
    namespace?: string;
    runtimeClassName?: string;
  } = {},
): IPod {
  return applyPodDefaults({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: opts.namespace ?? BENCH_NAMESPACE, uid },
    spec: {
      restartPolicy: opts.restartPolicy ?? 'Always',
      hostNetwork: opts.hostNetwork,
      ...(opts.runtimeClassName ? { runtimeClassName: opts.runtimeClassName } : {}),
      containers: opts.containers ?? [{ name: 'app', image: BUSYBOX, command: SLEEP_COMMAND }],
    },
  });
}

/** The RuntimeClass, named after its handler, a bench pod names to run on that OCI runtime. */
export function runtimeClassYaml(handler: string): string {
  return `apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: ${handler}\nhandler: ${handler}\n---\n`;
}

export function podYaml(name: string, image: string, opts: { namespace?: string; runtimeClassName?: string } = {}): string {
  const command = SLEEP_COMMAND.map((a) => JSON.stringify(a)).join(', ');
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    ...(opts.namespace ? [`  namespace: ${opts.namespace}`] : []),
    'spec:',
    ...(opts.runtimeClassName ? [`  runtimeClassName: ${opts.runtimeClassName}`] : []),
    '  containers:',
    '  - name: app',
    `    image: ${image}`,
    '    imagePullPolicy: IfNotPresent',
    `    command: [${command}]`,
    '',
  ].join('\n');
}

export interface Timed {
  ms: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Processes timeProcess started that have not exited: stopped first on Ctrl-C. */
const activeChildren = new Set<ChildProcess>();

/** Runs a process and times it from spawn to exit (wall clock). */
export function timeProcess(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Timed> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(cmd, args, { env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    activeChildren.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - started, code: -1, stdout, stderr: stderr + String(err) });
    });
    child.on('exit', (code) => {
      const elapsed = performance.now() - started;
      activeChildren.delete(child);
      clearTimeout(timer);
      // Output may still be draining; the time is taken at exit.
      child.on('close', () => resolve({ ms: elapsed, code, stdout, stderr }));
    });
  });
}

/** Cleanups run at the end of a benchmark, and on Ctrl-C (last registered first). */
const cleanups: { label: string; fn: () => Promise<void> | void }[] = [];

export function onCleanup(label: string, fn: () => Promise<void> | void): () => Promise<void> {
  const entry = { label, fn };
  cleanups.push(entry);
  return async () => {
    const i = cleanups.indexOf(entry);
    if (i < 0) return;
    cleanups.splice(i, 1);
    await fn();
  };
}

export async function runCleanups(log: (line: string) => void): Promise<void> {
  // A `podctl run` still under way would make a pod after the sweep.
  await Promise.all(
    [...activeChildren].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  while (cleanups.length) {
    const { label, fn } = cleanups.pop()!;
    try {
      await fn();
    } catch (err) {
      log(`cleanup "${label}" failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

export function sleep(msec: number): Promise<void> {
  return new Promise((r) => setTimeout(r, msec));
}

/** Waits for a condition, polling; false on timeout. */
export async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 20): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await cond()) return true;
    await sleep(everyMs);
  }
  return cond();
}
