import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Clock, TimerHandle } from '../clock.js';
import type { RuntimeService } from '../cri/client.js';
import type { ContainerSummary } from '../cri/types.js';

/** The kubelet's defaults (--container-log-max-size, --container-log-max-files, containerLogMonitorInterval). */
export const DEFAULT_CONTAINER_LOG_MAX_SIZE = 10 * 1024 * 1024;
export const DEFAULT_CONTAINER_LOG_MAX_FILES = 5;
export const DEFAULT_CONTAINER_LOG_MONITOR_INTERVAL_MS = 10_000;
/** Log files stat'ed between two turns of the event loop (each stat is a few microseconds). */
const STAT_BATCH = 500;

export interface ContainerLogPolicy {
  /** Rotate once the current file reaches this many bytes. */
  maxSizeBytes: number;
  /** Files kept per container instance, the current one included (at least 2). */
  maxFiles: number;
}

export interface ContainerLogManagerOptions extends Partial<ContainerLogPolicy> {
  runtime: Pick<RuntimeService, 'listContainerSummaries' | 'containerStatus' | 'reopenContainerLog'>;
  clock: Clock;
  /** Which running containers this agent looks after (its own pods). */
  owns: (c: ContainerSummary) => boolean;
  monitorIntervalMs?: number;
  onError?: (containerId: string, err: unknown) => void;
  /**
   * Where a container's log is by the kubelet's layout (its pod's log directory, name/attempt.log):
   * used when that file exists, so a pass over thousands of new containers needs no ContainerStatus each.
   */
  logPathOf?: (c: ContainerSummary) => string | undefined;
  /**
   * The running containers and their log paths when the caller knows them current (the PLEG's pod
   * cache): a pass then lists nothing. Undefined: not known, the runtime is listed.
   */
  runningContainers?: () => { id: string; path: string }[] | undefined;
}

const ROTATED = /^(.+)\.(\d{8}-\d{6}(?:\.\d{3})?)(\.gz)?$/;

/** `0.log.20261123-101530.123`: the kubelet's timestamp suffix (UTC), with milliseconds so two rotations in a second stay apart. */
export function rotatedName(path: string, at: number): string {
  const iso = new Date(at).toISOString(); // 2026-11-23T10:15:30.123Z
  const stamp = `${iso.slice(0, 10).replace(/-/g, '')}-${iso.slice(11, 19).replace(/:/g, '')}.${iso.slice(20, 23)}`;
  return `${path}.${stamp}`;
}

/** The rotated files of one log path, oldest first (compressed ones end in .gz). */
export async function rotatedLogFiles(path: string): Promise<string[]> {
  const base = basename(path);
  let names: string[];
  try {
    names = await readdir(dirname(path));
  } catch {
    return [];
  }
  return names
    .map((n) => ({ n, m: ROTATED.exec(n) }))
    .filter((x) => x.m && x.m[1] === base && !x.n.endsWith('.tmp'))
    .sort((a, b) => a.m![2]!.localeCompare(b.m![2]!))
    .map((x) => join(dirname(path), x.n));
}

async function gzipFile(path: string): Promise<void> {
  const tmp = `${path}.gz.tmp`;
  // zlib loads when a file is first compressed, not with everything that imports this module.
  const { createGzip } = await import('node:zlib');
  await pipeline(createReadStream(path), createGzip(), createWriteStream(tmp));
  await rename(tmp, `${path}.gz`);
  await rm(path, { force: true });
}

/**
 * The kubelet's container log manager: every monitor interval, a running
 * container whose log reached maxSize has it renamed with a timestamp and
 * the runtime told to reopen it (CRI ReopenContainerLog); rotated files but
 * the newest are gzipped, and at most maxFiles files are kept per instance.
 */
export class ContainerLogManager {
  readonly maxSizeBytes: number;
  readonly maxFiles: number;
  private readonly monitorIntervalMs: number;
  /** A container's log path does not change over its life: one ContainerStatus each. */
  private readonly logPaths = new Map<string, string>();
  private timer?: TimerHandle;
  private running?: Promise<string[]>;

  constructor(private readonly opts: ContainerLogManagerOptions) {
    this.maxSizeBytes = opts.maxSizeBytes ?? DEFAULT_CONTAINER_LOG_MAX_SIZE;
    this.maxFiles = Math.max(2, opts.maxFiles ?? DEFAULT_CONTAINER_LOG_MAX_FILES);
    this.monitorIntervalMs = opts.monitorIntervalMs ?? DEFAULT_CONTAINER_LOG_MONITOR_INTERVAL_MS;
  }

  start(): void {
    if (this.timer || this.maxSizeBytes <= 0) return;
    const tick = () => {
      this.timer = this.opts.clock.setTimeout(() => {
        // A pass that failed (the runtime slow or gone) is tried again at the next interval; it must
        // never end the process as an unhandled rejection.
        void this.rotateLogs()
          .catch((err: unknown) => this.opts.onError?.('', err))
          .finally(() => this.timer && tick());
      }, this.monitorIntervalMs);
    };
    tick();
  }

  stop(): void {
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One pass over the running containers; returns the log paths rotated. Never two passes at once. */
  rotateLogs(): Promise<string[]> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<string[]> {
    const targets = this.opts.runningContainers?.() ?? (await this.listed());
    // The kubelet stats every running container's log each interval: at 10,000 containers an async
    // stat each (a promise, a thread-pool hop, an Error for a missing file) was most of an idle watch's
    // CPU. A synchronous stat of a local file is microseconds; batches keep the loop responsive.
    const due: { id: string; path: string }[] = [];
    for (let i = 0; i < targets.length; i++) {
      if (i > 0 && i % STAT_BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
      const t = targets[i]!;
      if (t.path && this.sizeOf(t.path) >= this.maxSizeBytes) due.push({ id: t.id, path: t.path });
    }
    const rotated: string[] = [];
    for (const { id, path } of due) {
      try {
        if (await this.rotate(id, path)) rotated.push(path);
      } catch (err) {
        this.opts.onError?.(id, err);
      }
    }
    return rotated;
  }

  /** The running containers this agent owns, listed, with their log paths (one ContainerStatus each, once). */
  private async listed(): Promise<{ id: string; path: string | undefined }[]> {
    const containers = (await this.opts.runtime.listContainerSummaries({ state: { state: 'CONTAINER_RUNNING' } })).filter(
      (c) => c.state === 'CONTAINER_RUNNING' && this.opts.owns(c),
    );
    const live = new Set(containers.map((c) => c.id));
    for (const id of this.logPaths.keys()) if (!live.has(id)) this.logPaths.delete(id);
    const out: { id: string; path: string | undefined }[] = [];
    for (const c of containers) {
      try {
        out.push({ id: c.id, path: await this.logPath(c) });
      } catch (err) {
        this.opts.onError?.(c.id, err);
      }
    }
    return out;
  }

  private sizeOf(path: string): number {
    try {
      return statSync(path, { throwIfNoEntry: false })?.size ?? 0;
    } catch {
      return 0;
    }
  }

  private async logPath(c: ContainerSummary): Promise<string | undefined> {
    let path = this.logPaths.get(c.id);
    if (path === undefined) {
      const guess = this.opts.logPathOf?.(c);
      path =
        guess && (await stat(guess).catch(() => undefined))?.isFile()
          ? guess
          : ((await this.opts.runtime.containerStatus(c.id)).status?.logPath ?? '');
      this.logPaths.set(c.id, path);
    }
    return path || undefined;
  }

  /** Renames a log that reached its size (it is checked again: a pass may have waited), and has the runtime reopen it. */
  private async rotate(id: string, path: string): Promise<boolean> {
    const size = (await stat(path).catch(() => undefined))?.size ?? 0;
    if (size < this.maxSizeBytes) return false;
    // Room for the file this rotation adds: rotated files + the current one stay within maxFiles.
    let rotated = await rotatedLogFiles(path);
    for (const old of rotated.slice(0, Math.max(0, rotated.length - (this.maxFiles - 2)))) await rm(old, { force: true });
    rotated = await rotatedLogFiles(path);
    // Everything rotated before gets compressed; the file this rotation makes stays plain until
    // the next one (a `logs -f` still draining an older file holds it open, so removal is safe).
    for (const f of rotated) if (!f.endsWith('.gz')) await gzipFile(f);
    const target = rotatedName(path, this.opts.clock.now());
    await rename(path, target);
    try {
      await this.opts.runtime.reopenContainerLog(id);
    } catch (err) {
      // The runtime still writes to the renamed file: give it its name back, as the kubelet does.
      await rename(target, path).catch(() => undefined);
      throw err;
    }
    return true;
  }
}
