import type { ServerResponse } from 'node:http';
import { WatchWriter } from '../api/watch-writer.js';
import type { ResourceInfo } from './discovery.js';
import { isWatch, secondsParam, wantsTable, type ResourcePath } from './request.js';
import { sendJSON } from './server.js';
import { notFound } from './status.js';
import type { WatchCache } from './store.js';
import { tableRowEvent, toTable, type TableResource } from './table.js';

type KubeObject = Record<string, unknown> & { metadata?: { name?: string; namespace?: string } };

export interface ReadContext {
  cache: WatchCache;
  now: () => number;
  log?: (message: string) => void;
}

export const TABLE_CONTENT_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

function includeObject(url: URL): 'None' | 'Object' | 'Metadata' {
  const v = url.searchParams.get('includeObject');
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

/** GET of a collection: a v1 List, or a Table when asked; with ?watch, the watch. */
export function serveCollection(
  ctx: ReadContext,
  info: ResourceInfo,
  path: ResourcePath,
  url: URL,
  accept: string | undefined,
  res: ServerResponse,
): void {
  const q = url.searchParams;
  const selectors = {
    namespace: path.namespace,
    labelSelector: q.get('labelSelector') ?? undefined,
    fieldSelector: q.get('fieldSelector') ?? undefined,
  };
  if (isWatch(url)) return serveWatch(ctx, info, url, accept, res, selectors);
  const limit = q.get('limit') ? Number(q.get('limit')) : undefined;
  const list = ctx.cache.list(info.name, {
    ...selectors,
    limit: limit && limit > 0 ? limit : undefined,
    continue: q.get('continue') ?? undefined,
  });
  const listMeta = {
    resourceVersion: list.resourceVersion,
    ...(list.continue ? { continue: list.continue } : {}),
    ...(list.remainingItemCount !== undefined ? { remainingItemCount: list.remainingItemCount } : {}),
  };
  if (wantsTable(accept)) {
    const table = toTable(info.name as TableResource, list.items, { now: ctx.now(), includeObject: includeObject(url), listMeta });
    return sendJSON(res, 200, table, TABLE_CONTENT_TYPE);
  }
  const apiVersion = path.group ? `${path.group}/${path.version}` : path.version;
  sendJSON(res, 200, { kind: `${info.kind}List`, apiVersion, metadata: listMeta, items: list.items });
}

/** GET of one object (or a Table of it); 404 NotFound as the API server words it. */
export function serveObject(
  ctx: ReadContext,
  info: ResourceInfo,
  path: ResourcePath,
  url: URL,
  accept: string | undefined,
  res: ServerResponse,
): void {
  const object = ctx.cache.get(info.name, path.namespace, path.name!);
  if (!object) throw notFound(info.name, path.name!);
  if (wantsTable(accept)) {
    const table = toTable(info.name as TableResource, [object], {
      now: ctx.now(),
      includeObject: includeObject(url),
      listMeta: { resourceVersion: String((object as KubeObject).metadata?.['resourceVersion' as never] ?? '') },
    });
    return sendJSON(res, 200, table, TABLE_CONTENT_TYPE);
  }
  sendJSON(res, 200, object);
}

/**
 * A watch as the API server streams one: a JSON object per event, each on its line, from the version
 * asked (410 Expired when it is older than the history kept), in Table form when asked. It ends at
 * timeoutSeconds, or when the client goes; a client that stops reading is closed past the bound.
 */
function serveWatch(
  ctx: ReadContext,
  info: ResourceInfo,
  url: URL,
  accept: string | undefined,
  res: ServerResponse,
  selectors: { namespace?: string; labelSelector?: string; fieldSelector?: string },
): void {
  const q = url.searchParams;
  const table = wantsTable(accept);
  const events: string[] = [];
  const writer = new WatchWriter(res, { what: `watch ${info.name}`, log: ctx.log });
  let live = false;
  let first = true;
  const line = (e: { type: string; object: unknown }) => {
    const event = table
      ? tableRowEvent(e.type as 'ADDED', e.object as Record<string, unknown>, {
          now: ctx.now(),
          resource: info.name as TableResource,
          includeObject: includeObject(url),
          columns: first,
        })
      : e;
    first = false;
    return `${JSON.stringify(event)}\n`;
  };
  // The watch is opened before the headers go: a version too old is a 410 Status, not a stream.
  const watch = ctx.cache.watch(
    info.name,
    {
      ...selectors,
      resourceVersion: q.get('resourceVersion') ?? undefined,
      // Absent, the store's default: initial ADDED events for a watch from no version (or "0"), as the API server sends them.
      sendInitialEvents: q.has('sendInitialEvents') ? q.get('sendInitialEvents') === 'true' : undefined,
      allowBookmarks: q.get('allowWatchBookmarks') === 'true',
    },
    (e) => {
      if (!live) return void events.push(line(e));
      if (!writer.write(line(e))) stop();
    },
  );
  res.writeHead(200, { 'content-type': table ? TABLE_CONTENT_TYPE : 'application/json', 'transfer-encoding': 'chunked' });
  live = true;
  writer.begin(events);
  res.flushHeaders();
  const timeout = secondsParam(url, 'timeoutSeconds');
  const timer = timeout && timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
  let stopped = false;
  function stop(): void {
    if (stopped) return;
    stopped = true;
    watch.stop();
    if (timer) clearTimeout(timer);
  }
  res.on('close', stop);
}
