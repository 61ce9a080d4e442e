import type { IncomingMessage } from 'node:http';
import { readBodyBytes } from '../api/server.js';
import { KubeStatusError, badRequest } from './status.js';

/** The API server's bound on a request body. */
export const MAX_BODY_BYTES = 3 << 20;

/** A resource path split as the API server splits it: /api/v1/namespaces/NS/pods/NAME/log. */
export interface ResourcePath {
  group: string;
  version: string;
  namespace?: string;
  resource: string;
  name?: string;
  subresource?: string;
  /** The deprecated /api/v1/watch/... form: a watch of the collection, or of the one named object. */
  watch?: boolean;
}

/** Parses /api/v1/... and /apis/G/V/...; undefined for any other path (discovery, openapi, version). */
export function parseResourcePath(pathname: string): ResourcePath | undefined {
  const parts = pathname.split('/').filter(Boolean).map(decode);
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) [group, version, rest] = ['', parts[1]!, parts.slice(2)];
  else if (parts[0] === 'apis' && parts.length >= 4) [group, version, rest] = [parts[1]!, parts[2]!, parts.slice(3)];
  else return undefined;
  const watch = rest[0] === 'watch';
  if (watch) rest = rest.slice(1);
  const flag = watch ? { watch } : {};
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const [, namespace, resource, name, subresource, ...more] = rest;
    if (more.length || (watch && subresource)) return undefined;
    return { group, version, namespace, resource: resource!, name, subresource, ...flag };
  }
  const [resource, name, subresource, ...more] = rest;
  if (more.length || !resource || (watch && subresource)) return undefined;
  return { group, version, resource, name, subresource, ...flag };
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw badRequest(`bad escape in the path: ${JSON.stringify(s)}`);
  }
}

/** A write's body: its text (JSON, or YAML for an apply patch), its bytes as they came (protobuf), its media type. */
export interface ObjectBody {
  text: string;
  bytes: Buffer;
  contentType: string;
}

/** The body of a write, bounded as the API server bounds it. */
export async function readObjectBody(req: IncomingMessage): Promise<ObjectBody> {
  let bytes: Buffer;
  try {
    bytes = await readBodyBytes(req, MAX_BODY_BYTES);
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 413) throw new KubeStatusError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${MAX_BODY_BYTES}`);
    throw err;
  }
  const contentType = (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  return { text: bytes.toString('utf8'), bytes, contentType };
}

/** A JSON body parsed into an object, or the API server's 400 for one that is not. */
export function parseJSONObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw badRequest(
      `the body of the request was in an unknown format - accepted media types include: application/json: ${(err as Error).message}`,
    );
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw badRequest('the body of the request must be a JSON object');
  return value as Record<string, unknown>;
}

/** The Accept header asks for a Table (kubectl get's server-side printing). */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((t) => /as=Table/.test(t) && /g=meta\.k8s\.io/.test(t) && /v=v1\b/.test(t));
}

/** ?watch=true|1 (as the API server takes it). */
export function isWatch(url: URL): boolean {
  const w = url.searchParams.get('watch');
  return w === 'true' || w === '1';
}

/** A query parameter that must be a whole number of seconds (gracePeriodSeconds, timeoutSeconds). */
export function secondsParam(url: URL, name: string): number | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw badRequest(`${name}: expected a whole number of seconds, got ${JSON.stringify(v)}`);
  return n;
}

/** dryRun=All: validated, answered, changed nothing. Any other value is refused as the API server refuses it. */
export function isDryRun(url: URL): boolean {
  const values = url.searchParams.getAll('dryRun');
  for (const v of values) if (v !== 'All') throw badRequest(`Invalid dryRun value: unsupported dry run value ${JSON.stringify(v)}`);
  return values.length > 0;
}
