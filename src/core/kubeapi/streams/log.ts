import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import type { IContainerStatus } from 'kubernetes-models/v1';
import {
  followContainerLog,
  readContainerLogTail,
  restartCountOfLog,
  selectRecords,
  streamContainerLog,
  type LogRecord,
  type LogSelection,
} from '../../logs/index.js';
import { KubeStatusError, type StatusCause } from '../status.js';
import type { PodStreamContext } from './context.js';
import { containerStatusOf, resolveContainer, runtimeId } from './container.js';

/** PodLogOptions from the query (the API server's names). */
export interface PodLogOptions {
  container?: string;
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  /** sinceTime as epoch ms. */
  sinceTimeMs?: number;
  limitBytes?: number;
}

const badRequest = (message: string) => new KubeStatusError(400, 'BadRequest', message);

function boolParam(url: URL, name: string): boolean {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return false;
  if (/^(1|t|true)$/i.test(v)) return true;
  if (/^(0|f|false)$/i.test(v)) return false;
  throw badRequest(`${name}: invalid boolean value "${v}" (expected true or false)`);
}

function intParam(url: URL, name: string): number | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return undefined;
  if (!/^[-+]?\d+$/.test(v)) throw badRequest(`${name}: invalid integer "${v}"`);
  return Number(v);
}

/** The query of GET pods/NAME/log, validated as ValidatePodLogOptions does (422 naming each field). */
export function parsePodLogOptions(url: URL, podName: string): PodLogOptions {
  const sinceTime = url.searchParams.get('sinceTime');
  let sinceTimeMs: number | undefined;
  if (sinceTime) {
    sinceTimeMs = Date.parse(sinceTime);
    if (!/^\d{4}-\d\d-\d\dT/.test(sinceTime) || Number.isNaN(sinceTimeMs))
      throw badRequest(`sinceTime: invalid time "${sinceTime}" (expected RFC3339, e.g. 2024-01-02T15:04:05Z)`);
  }
  const opts: PodLogOptions = {
    container: url.searchParams.get('container') || undefined,
    follow: boolParam(url, 'follow'),
    previous: boolParam(url, 'previous'),
    timestamps: boolParam(url, 'timestamps'),
    tailLines: intParam(url, 'tailLines'),
    sinceSeconds: intParam(url, 'sinceSeconds'),
    sinceTimeMs,
    limitBytes: intParam(url, 'limitBytes'),
  };
  const causes: StatusCause[] = [];
  const invalid = (field: string, value: number, what: string) =>
    causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${value}: ${what}` });
  if (opts.tailLines !== undefined && opts.tailLines < 0) invalid('tailLines', opts.tailLines, 'must be greater than or equal to 0');
  if (opts.limitBytes !== undefined && opts.limitBytes < 1) invalid('limitBytes', opts.limitBytes, 'must be greater than 0');
  if (opts.sinceSeconds !== undefined && opts.sinceTimeMs !== undefined)
    causes.push({
      reason: 'FieldValueForbidden',
      field: '',
      message: 'Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified',
    });
  else if (opts.sinceSeconds !== undefined && opts.sinceSeconds < 1) invalid('sinceSeconds', opts.sinceSeconds, 'must be greater than 0');
  if (causes.length) {
    const texts = causes.map((c) => `${c.field}: ${c.message}`);
    const message = `PodLogOptions "${podName}" is invalid: ${texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`}`;
    throw new KubeStatusError(422, 'Invalid', message, { name: podName, kind: 'PodLogOptions', causes });
  }
  return opts;
}

/** Which instance's log the request reads: the kubelet's validateContainerLogStatus, in its words. */
function logContainerId(status: IContainerStatus | undefined, container: string, pod: string, previous: boolean): string {
  const err = (what: string) => badRequest(`container "${container}" in pod "${pod}" ${what}`);
  if (!status) throw err('is not available');
  const last = status.lastState?.terminated;
  const { running, terminated, waiting } = status.state ?? {};
  if (previous) {
    if (!last?.containerID) throw badRequest(`previous terminated container "${container}" in pod "${pod}" not found`);
    return last.containerID;
  }
  if (running) return status.containerID ?? '';
  if (terminated) {
    const id = terminated.containerID || last?.containerID;
    if (!id) throw err('is terminated');
    return id;
  }
  if (last) {
    if (!last.containerID) throw err('is terminated');
    return last.containerID;
  }
  if (waiting) {
    if (waiting.reason === 'ErrImagePull') throw err("is waiting to start: image can't be pulled");
    if (waiting.reason === 'ImagePullBackOff') throw err('is waiting to start: trying and failing to pull image');
    throw err(`is waiting to start: ${waiting.reason ?? ''}`);
  }
  throw err('is waiting to start - no logs yet');
}

/** The log file of the instance: its CRI status names it; a previous instance removed since is the file before the current one's. */
async function logPathOf(ctx: PodStreamContext, status: IContainerStatus, id: string, container: string): Promise<string> {
  const pod = ctx.pod.metadata?.name ?? '';
  const fromRuntime = async (cid: string | undefined) =>
    cid ? ((await ctx.cri.containerStatus(cid).catch(() => undefined))?.status?.logPath ?? undefined) : undefined;
  const own = await fromRuntime(id);
  if (own) return own;
  const current = await fromRuntime(runtimeId(status.containerID));
  const n = current ? restartCountOfLog(current) : undefined;
  if (current && n !== undefined && n > 0 && id !== runtimeId(status.containerID)) return join(dirname(current), `${n - 1}.log`);
  throw badRequest(`container "${container}" in pod "${pod}" is not available`);
}

/** Writes log lines to the response, at most limitBytes in all; false once the limit is reached. */
class LogWriter {
  private written = 0;
  constructor(
    private readonly res: ServerResponse,
    private readonly opts: PodLogOptions,
  ) {}
  get full(): boolean {
    return this.opts.limitBytes !== undefined && this.written >= this.opts.limitBytes;
  }
  /** true when the response takes more at once (false: wait for its drain, or the limit is reached). */
  write(records: LogRecord[]): boolean {
    if (!records.length || this.full || this.res.destroyed) return !this.full;
    let chunk = Buffer.from(records.map((r) => `${this.opts.timestamps ? `${r.time} ` : ''}${r.text}\n`).join(''));
    if (this.opts.limitBytes !== undefined) chunk = chunk.subarray(0, this.opts.limitBytes - this.written);
    this.written += chunk.length;
    return this.res.write(chunk) && !this.full;
  }
}

/** Polls of the runtime for whether a followed container still runs: at most one a second. */
const RUNNING_CHECK_MS = 1000;

/**
 * GET .../pods/NAME/log: the container's log as plain text, from the CRI log files (rotated and
 * gzipped ones included, as `podctl logs` reads them); with follow, flushed as lines are written,
 * across rotations, until the container stops running or the client goes. An error before the first
 * byte is the kubelet's or API server's Status.
 */
export async function servePodLog(req: IncomingMessage, res: ServerResponse, url: URL, ctx: PodStreamContext): Promise<void> {
  let path: string;
  let id: string;
  let opts: PodLogOptions;
  try {
    const podName = ctx.pod.metadata?.name ?? '';
    opts = parsePodLogOptions(url, podName);
    const container = resolveContainer(ctx.pod, opts.container);
    const status = containerStatusOf(ctx.pod, container);
    id = runtimeId(logContainerId(status, container, podName, opts.previous)) ?? '';
    path = await logPathOf(ctx, status!, id, container);
  } catch (err) {
    const status = err instanceof KubeStatusError ? err : new KubeStatusError(500, 'InternalError', (err as Error).message);
    res.writeHead(status.code, { 'Content-Type': 'application/json' }).end(JSON.stringify(status.toStatus()));
    return;
  }
  const sinceMs = opts.sinceTimeMs ?? (opts.sinceSeconds !== undefined ? Date.now() - opts.sinceSeconds * 1000 : undefined);
  const sel: LogSelection = { tail: opts.tailLines, sinceMs };
  const out = new LogWriter(res, opts);
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.flushHeaders();
  let gone = false;
  res.once('close', () => (gone = true));
  req.once('close', () => (gone = true));
  try {
    if (!opts.follow) {
      if (sel.tail !== undefined) out.write(await readContainerLogTail(path, sel));
      else
        await streamContainerLog(path, async (records) => {
          if (gone || out.full) return;
          if (!out.write(selectRecords(records, { sinceMs })) && !out.full && !gone) await once(res, 'drain');
        });
      return;
    }
    let checkedAt = 0;
    let running = true;
    await followContainerLog({
      path,
      backlog: (records) => out.write(records),
      selection: sel,
      onRecords: (records) => out.write(records),
      shouldStop: async () => {
        if (gone || out.full) return true;
        if (Date.now() - checkedAt >= RUNNING_CHECK_MS) {
          checkedAt = Date.now();
          const state = (await ctx.cri.containerStatus(id).catch(() => undefined))?.status?.state;
          running = state === 'CONTAINER_RUNNING' || state === 'CONTAINER_CREATED';
        }
        return !running;
      },
    });
  } catch (err) {
    ctx.log?.(`kubeapi: log of pod ${ctx.pod.metadata?.name}: ${(err as Error).message}`);
  } finally {
    res.end();
  }
}
