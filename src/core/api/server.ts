import { chmodSync, existsSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { IPod } from 'kubernetes-models/v1';
import { toV1Event, type PodEvent } from '../events.js';
import type { Metrics } from '../metrics.js';
import type { PlanAnswer } from '../plan.js';
import type { PodQuery, PodViewAnswer } from '../podview/index.js';
import { ApiError, MAX_REQUEST_BODY_BYTES, type PodWatchEvent } from '../node/agent.js';
import { WatchWriter } from './watch-writer.js';

export { ApiError, type PodWatchEvent };

/**
 * The /v1 API's routes, each a handler of a request's raw body (v1Routes makes them of a NodeAgent):
 * this module routes, bounds and reads requests and writes answers; what a body means is the handler's.
 */
export interface StatusSource {
  /** Desired pods with their last status, as a v1 PodList would carry them. */
  pods(): IPod[];
  /** GET /v1/pods/NS/NAME: the desired pod of that namespace/name with its last status; undefined: none (404). */
  pod?: (namespace: string, name: string) => IPod | undefined;
  /** Sync loop and PLEG health: every check that failed, with why. */
  health(): { ok: boolean; checks: { name: string; ok: boolean; message: string }[] };
  metrics: Metrics;
  /** The kubelet's events (a v1 EventList on /events; ?uid= for one pod's). */
  events?: () => PodEvent[];
  /** Who serves: pid, root dir, log (GET /v1/agent). */
  agent?: () => Record<string, unknown>;
  /** GET /v1/podview?namespace=&name=: every podctl pod on the agent's runtime, its own first-hand and the rest read from the runtime. */
  view?: (q: PodQuery) => Promise<PodViewAnswer>;
  /** Every change of a pod from now on; returns the unsubscribe (GET /v1/pods?watch=1). */
  watchPods?: (listener: (e: PodWatchEvent) => void) => () => void;
  /** POST /v1/pods: manifest documents handed to the agent; the keys (namespace/name) of its pods. Throws ApiError. */
  apply?: (body: string, contentType: string) => Promise<Record<string, unknown>>;
  /**
   * POST /v1/plan: {pods, prune}, pods validated and defaulted by the caller; what SyncPod would do to them, changing nothing. Throws
   * ApiError.
   */
  plan?: (body: string) => Promise<PlanAnswer>;
  /**
   * POST /v1/manifests/plan: manifests as a command read them, read and planned here. Throws ApiError (400 with the manifests' problems).
   */
  planManifests?: (body: string) => Promise<Record<string, unknown> | PlanAnswer>;
  /**
   * POST /v1/manifests/apply: manifests as a command read them, read, admitted and kept here. Throws ApiError (400 problems, 403 rejected,
   * 409).
   */
  applyManifests?: (body: string) => Promise<Record<string, unknown>>;
  /** POST /v1/pods/NS/NAME/conditions: sets a pod condition (a readiness gate's); the pod. Throws ApiError. */
  setCondition?: (namespace: string, name: string, body: string) => Promise<Record<string, unknown>>;
  /** DELETE /v1/pods/NS/NAME: the agent forgets the pod and terminates it. Throws ApiError. */
  remove?: (namespace: string, name: string, gracePeriodSeconds?: number) => Promise<Record<string, unknown>>;
}

export interface ServerLimits {
  /** How long a client may take to send a request's headers (node's headersTimeout). */
  headersTimeoutMs?: number;
  /** How long a client may take to send a whole request (node's requestTimeout; a watch's response is not bounded). */
  requestTimeoutMs?: number;
  /** A request body's bound (default MAX_REQUEST_BODY_BYTES, 32 MiB): a larger one is answered 413. */
  maxBodyBytes?: number;
  /**
   * Request bodies read or handled at once (default 4); more wait their turn unread, up to bodiesQueued (default 64), and beyond are
   * answered 429.
   */
  bodiesInFlight?: number;
  bodiesQueued?: number;
  /** What a watcher may leave unread before it is closed (WatchWriter's bound). */
  watchUnreadBytes?: number;
  /** The agent's log: a watcher closed for not reading. */
  log?: (message: string) => void;
}

/** The API version every path under /v1 speaks; the unversioned read paths stay for older clients. */
export const API_VERSION = 'v1';

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify(body)}\n`);
}

const tooLarge = (size: number, limit: number) =>
  new ApiError(
    413,
    `request body too large: ${size} bytes; the limit is ${limit} bytes ` +
      `(${limit >= 1 << 20 ? `${+(limit / (1 << 20)).toFixed(1)} MiB` : `${+(limit / 1024).toFixed(1)} KiB`})`,
  );

/**
 * The request's body, at most limit bytes kept. A larger one is read to its end and dropped, then
 * refused (413): the client, which sends its whole body before it reads, gets the answer, not a reset.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return readBodyBytes(req, limit).then((b) => b.toString('utf8'));
}

/** readBody's bytes as they came (a protobuf body is not text). */
export function readBodyBytes(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (req.destroyed) return reject(new Error('the client went away before its request body was read'));
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => {
      size += d.length;
      if (size <= limit) chunks.push(d);
      else chunks.length = 0;
    });
    req.on('end', () => (size > limit ? reject(tooLarge(size, limit)) : resolve(Buffer.concat(chunks))));
    req.on('error', reject);
    req.on('close', () => {
      if (!req.complete) reject(new Error('the client went away before its request body was read'));
    });
  });
}

/**
 * Turns for the request bodies the agent reads and handles at once: a body is read only in its turn,
 * so that bodies in parallel cost at most `inFlight` of them in memory and parsing, and /healthz
 * and the reads answer meanwhile. A request waiting its turn is not read (its bytes stay in the
 * kernel's buffer); beyond `queued` of them, take() says no.
 */
class BodyTurns {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly inFlight: number,
    private readonly queued: number,
  ) {}

  /** Runs fn in its turn, now or once one ends; false when too many wait already. */
  take(fn: () => Promise<void>): boolean {
    const run = () => {
      this.running++;
      void fn().finally(() => {
        this.running--;
        this.waiting.shift()?.();
      });
    };
    if (this.running < this.inFlight) run();
    else if (this.waiting.length < this.queued) this.waiting.push(run);
    else return false;
    return true;
  }
}

function fail(res: ServerResponse, err: unknown): void {
  if (res.headersSent) return void res.end();
  if (err instanceof ApiError)
    json(res, err.status, { kind: 'Status', status: 'Failure', code: err.status, message: err.message, ...err.details });
  else json(res, 500, { kind: 'Status', status: 'Failure', code: 500, message: err instanceof Error ? err.message : String(err) });
}

/**
 * The pod list answer, or with ?watch=1 a stream of JSON lines (the list as ADDED, then each change),
 * through a WatchWriter: a watcher that stops reading is closed past its bound.
 */
function servePods(req: IncomingMessage, res: ServerResponse, url: URL, source: StatusSource, limits: ServerLimits): void {
  const watch = url.searchParams.get('watch');
  if (!watch || watch === '0' || watch === 'false' || !source.watchPods) {
    json(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: source.pods() });
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  const writer = new WatchWriter(res, { what: 'GET /v1/pods?watch=1', limitBytes: limits.watchUnreadBytes, log: limits.log });
  writer.begin(source.pods().map((object) => `${JSON.stringify({ type: 'ADDED', object })}\n`));
  let stopped = false;
  const unsubscribe = source.watchPods((e) => {
    if (!stopped && !writer.write(`${JSON.stringify(e)}\n`)) stop();
  });
  function stop(): void {
    if (stopped) return;
    stopped = true;
    unsubscribe();
  }
  res.on('close', stop);
  req.on('close', stop);
}

/**
 * The agent's API on a unix socket private to the user (0600). Versioned under /v1: GET healthz, pods
 * (a v1 PodList; ?watch=1 streams JSON lines), events (a v1 EventList), metrics, agent; POST pods,
 * pods/NS/NAME/conditions, plan, and manifests/plan and manifests/apply (manifests as a command read them);
 * DELETE pods/NS/NAME. The unversioned GET /healthz, /pods, /events and /metrics answer as before.
 */
export async function startStatusServer(socket: string, source: StatusSource, limits: ServerLimits = {}): Promise<Server> {
  const headersTimeout = limits.headersTimeoutMs ?? 10_000;
  const server = createServer({ connectionsCheckingInterval: Math.min(1000, headersTimeout) }, (req, res) => {
    // A request a handler cannot take (a path no URL parser accepts, a bad escape) is the client's
    // fault: 400, and the agent stays up. Anything else a handler throws is a 500.
    try {
      handle(req, res);
    } catch (err) {
      const invalidURL = err instanceof TypeError && (err as NodeJS.ErrnoException).code === 'ERR_INVALID_URL';
      if (invalidURL || err instanceof URIError) fail(res, new ApiError(400, `bad request: ${(err as Error).message}`));
      else fail(res, err);
    }
  });
  // Half-sent requests are cut off: a client that sends its headers slowly holds a socket at most this long.
  server.headersTimeout = headersTimeout;
  server.requestTimeout = Math.max(headersTimeout, limits.requestTimeoutMs ?? 30_000);
  server.on('clientError', (_err, sock) => {
    if (sock.writable) sock.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else sock.destroy();
  });
  const maxBody = limits.maxBodyBytes ?? MAX_REQUEST_BODY_BYTES;
  const turns = new BodyTurns(limits.bodiesInFlight ?? 4, limits.bodiesQueued ?? 64);
  /** A request with a body: read in its turn, bounded, handled, answered. */
  const withBody = (req: IncomingMessage, res: ServerResponse, handleBody: (body: string) => Promise<unknown>, limit = maxBody): void => {
    const answer = (body: Promise<string>) =>
      body
        .then(handleBody)
        .then((r) => json(res, 200, r))
        .catch((err: unknown) => fail(res, err));
    const declared = Number(req.headers['content-length']);
    // Said too large by its own length: dropped as it comes, without waiting for a turn.
    if (declared > limit) return void answer(readBody(req, limit));
    const taken = turns.take(() => answer(readBody(req, limit)));
    if (!taken) {
      res.setHeader('retry-after', '1');
      fail(res, new ApiError(429, 'too many requests: the agent is reading other request bodies; try again later'));
    }
  };
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://podctl');
    const versioned = url.pathname.startsWith(`/${API_VERSION}/`);
    const path = versioned ? url.pathname.slice(API_VERSION.length + 1) : url.pathname;
    const podPath = /^\/pods\/([^/]+)\/([^/]+)$/.exec(path);
    if (versioned && req.method === 'POST' && path === '/pods' && source.apply) {
      return withBody(req, res, (body) => source.apply!(body, req.headers['content-type'] ?? ''));
    }
    if (versioned && req.method === 'POST' && path === '/plan' && source.plan) {
      return withBody(req, res, (body) => source.plan!(body));
    }
    const manifests = /^\/manifests\/(plan|apply)$/.exec(path);
    const onManifests = manifests?.[1] === 'plan' ? source.planManifests : manifests?.[1] === 'apply' ? source.applyManifests : undefined;
    if (versioned && req.method === 'POST' && onManifests) {
      return withBody(req, res, (body) => onManifests(body));
    }
    const conditionsPath = /^\/pods\/([^/]+)\/([^/]+)\/conditions$/.exec(path);
    if (versioned && req.method === 'POST' && conditionsPath && source.setCondition) {
      const [namespace, name] = [decodeURIComponent(conditionsPath[1]!), decodeURIComponent(conditionsPath[2]!)];
      return withBody(req, res, (body) => source.setCondition!(namespace, name, body), 64 << 10);
    }
    if (versioned && req.method === 'DELETE' && podPath && source.remove) {
      const grace = url.searchParams.get('gracePeriodSeconds');
      const seconds = grace === null ? undefined : Number(grace);
      if (seconds !== undefined && (!Number.isInteger(seconds) || seconds < 0))
        throw new ApiError(400, `gracePeriodSeconds: expected a whole number of seconds, got ${JSON.stringify(grace)}`);
      source
        .remove(decodeURIComponent(podPath[1]!), decodeURIComponent(podPath[2]!), seconds)
        .then((r) => json(res, 200, r))
        .catch((err: unknown) => fail(res, err));
      return;
    }
    if (req.method !== 'GET') {
      res.writeHead(405, { 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    if (path === '/healthz') {
      const h = source.health();
      const body = h.checks.map((c) => `[${c.ok ? '+' : '-'}]${c.name} ${c.ok ? 'ok' : `failed: ${c.message}`}`).join('\n');
      res
        .writeHead(h.ok ? 200 : 500, { 'content-type': 'text/plain' })
        .end(`${body}\n${h.ok ? 'healthz check passed' : 'healthz check failed'}\n`);
    } else if (path === '/pods') {
      servePods(req, res, url, source, limits);
    } else if (podPath && versioned && source.pod) {
      const [namespace, name] = [decodeURIComponent(podPath[1]!), decodeURIComponent(podPath[2]!)];
      const pod = source.pod(namespace, name);
      if (pod) json(res, 200, pod);
      else fail(res, new ApiError(404, `pod "${name}" not found in namespace ${namespace}`, { reason: 'NotFound' }));
    } else if (path === '/events' && source.events) {
      const uid = url.searchParams.get('uid');
      const items = source
        .events()
        .filter((e) => !uid || e.uid === uid)
        .map((e) => toV1Event(e));
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ kind: 'EventList', apiVersion: 'v1', metadata: {}, items }));
    } else if (path === '/podview' && versioned && source.view) {
      const q = { namespace: url.searchParams.get('namespace') ?? undefined, name: url.searchParams.get('name') ?? undefined };
      source.view(q).then(
        (answer) => json(res, 200, answer),
        (err: unknown) => fail(res, err),
      );
    } else if (path === '/agent' && versioned && source.agent) {
      json(res, 200, { apiVersion: API_VERSION, ...source.agent() });
    } else if (path === '/metrics') {
      source.metrics.registry
        .metrics()
        .then((text) => res.writeHead(200, { 'content-type': source.metrics.registry.contentType }).end(text))
        .catch((err: Error) => res.writeHead(500).end(`${err.message}\n`));
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /v1/healthz, /v1/pods, /v1/events, /v1/agent or /metrics\n');
    }
  };
  if (existsSync(socket)) rmSync(socket);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  chmodSync(socket, 0o600);
  return server;
}
