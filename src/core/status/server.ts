import { chmodSync, existsSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { IPod } from 'kubernetes-models/v1';
import { toV1Event, type PodEvent } from '../events.js';
import type { Metrics } from '../metrics.js';

export interface StatusSource {
  /** Desired pods with their last status, as a v1 PodList would carry them. */
  pods(): IPod[];
  /** Sync loop and PLEG health: every check that failed, with why. */
  health(): { ok: boolean; checks: { name: string; ok: boolean; message: string }[] };
  metrics: Metrics;
  /** The kubelet's events (a v1 EventList on /events; ?uid= for one pod's). */
  events?: () => PodEvent[];
}

/**
 * The kubelet's read-only endpoints on a unix socket private to the user
 * (0600): /healthz, /pods (a v1 PodList), /events (a v1 EventList), /metrics (Prometheus text).
 */
export async function startStatusServer(socket: string, source: StatusSource): Promise<Server> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://podctl');
    if (req.method !== 'GET') {
      res.writeHead(405, { 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    if (url.pathname === '/healthz') {
      const h = source.health();
      const body = h.checks.map((c) => `[${c.ok ? '+' : '-'}]${c.name} ${c.ok ? 'ok' : `failed: ${c.message}`}`).join('\n');
      res.writeHead(h.ok ? 200 : 500, { 'content-type': 'text/plain' }).end(`${body}\n${h.ok ? 'healthz check passed' : 'healthz check failed'}\n`);
    } else if (url.pathname === '/pods') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: source.pods() }));
    } else if (url.pathname === '/events' && source.events) {
      const uid = url.searchParams.get('uid');
      const items = source.events().filter((e) => !uid || e.uid === uid).map((e) => toV1Event(e));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'EventList', apiVersion: 'v1', metadata: {}, items }));
    } else if (url.pathname === '/metrics') {
      source.metrics.registry
        .metrics()
        .then((text) => res.writeHead(200, { 'content-type': source.metrics.registry.contentType }).end(text))
        .catch((err: Error) => res.writeHead(500).end(`${err.message}\n`));
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /healthz, /pods, /events or /metrics\n');
    }
  });
  if (existsSync(socket)) rmSync(socket);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  chmodSync(socket, 0o600);
  return server;
}
