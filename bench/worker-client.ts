import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkerInit, WorkerRequest } from './watch-worker.js';

export interface WorkerHandle {
  pid: number;
  request<T>(req: WorkerRequest): Promise<T>;
  /** SIGTERM, then SIGKILL after 5 s; resolves once it has exited. */
  stop(): Promise<void>;
}

/** Forks the watch worker (see watch-worker.ts) and waits until it is ready. */
export async function startWorker(opts: Omit<WorkerInit, 'logRoot' | 'rootDir'>): Promise<WorkerHandle> {
  const init: WorkerInit = {
    ...opts,
    logRoot: mkdtempSync(join(tmpdir(), 'podctl-bench-logs-')),
    rootDir: mkdtempSync(join(tmpdir(), 'podctl-bench-root-')),
  };
  const child = fork(join(import.meta.dirname, 'watch-worker.js'), [JSON.stringify(init)], {
    execArgv: ['--expose-gc', ...(process.env.PODCTL_BENCH_WORKER_NODE_OPTIONS?.split(' ').filter(Boolean) ?? [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let next = 1;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      rmSync(init.logRoot, { recursive: true, force: true });
      rmSync(init.rootDir, { recursive: true, force: true });
      resolve();
    }),
  );
  const ready = new Promise<void>((resolve, reject) => {
    pending.set(0, { resolve: () => resolve(), reject });
  });
  child.on('message', (msg: { id: number; result?: unknown; error?: string }) => {
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(msg.error));
    else p.resolve(msg.result);
  });
  void exited.then(() => {
    for (const p of pending.values()) p.reject(new Error(`the watch worker exited (code ${child.exitCode})`));
    pending.clear();
  });
  await ready;
  return {
    pid: child.pid!,
    request: <T>(req: WorkerRequest) =>
      new Promise<T>((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, req });
      }),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
