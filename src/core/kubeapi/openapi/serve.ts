import type { IncomingMessage, ServerResponse } from 'node:http';
import { KubeStatusError } from '../status.js';
import { openapiV3Served } from './index.js';
import { openapiV2Served } from './v2.js';

/** GET of /openapi/v2 or /openapi/v3[/<group-version>]: answered here, and true; false for any other path. */
export function serveOpenapi(p: string, req: IncomingMessage, res: ServerResponse): boolean {
  if (p === '/openapi/v2') {
    const doc = openapiV2Served(req.headers.accept ?? '');
    if (req.headers['if-none-match'] === doc.etag) res.writeHead(304, { etag: doc.etag }).end();
    else res.writeHead(200, { 'content-type': doc.contentType, etag: doc.etag, 'cache-control': 'no-cache, private' }).end(doc.body);
    return true;
  }
  if (p !== '/openapi/v3' && !p.startsWith('/openapi/v3/')) return false;
  const doc = openapiV3Served(p.slice('/openapi/v3'.length));
  if (!doc) throw new KubeStatusError(404, 'NotFound', `the server could not find the requested resource`);
  // The documents are addressed by their hash: a client may keep them (kubectl's cache does).
  const cache = p === '/openapi/v3' ? 'no-cache, private' : 'public, immutable';
  res.writeHead(200, { 'content-type': 'application/json', etag: doc.etag, 'cache-control': cache }).end(doc.body);
  return true;
}
