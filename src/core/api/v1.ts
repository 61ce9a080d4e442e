import type { Server } from 'node:http';
import type { Metrics } from '../metrics.js';
import { errorMessage } from '../errors.js';
import {
  ApiError,
  type ApplyManifestsRequest,
  type ManifestsRequest,
  type ManifestText,
  type NodeAgent,
  type PodConditionInput,
} from '../node/agent.js';
import { startStatusServer, type ServerLimits, type StatusSource } from './server.js';

/** podctl's /v1 API over the agent, on a unix socket private to the user (startStatusServer). */
export function serveV1(socket: string, agent: NodeAgent, metrics: Metrics, limits: ServerLimits = {}): Promise<Server> {
  return startStatusServer(socket, v1Routes(agent, metrics), limits);
}

/**
 * podctl's own /v1 API over a NodeAgent: each request's body parsed into the agent's arguments (a body
 * of the wrong shape is a 400 naming what is expected, before the agent is asked) and its answer
 * wrapped in the v1 kinds the clients read (Applied, Deleted).
 */
export function v1Routes(agent: NodeAgent, metrics: Metrics): StatusSource {
  return {
    pods: () => agent.pods(),
    pod: (namespace, name) => agent.pods().find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name),
    health: () => agent.health(),
    metrics,
    events: () => agent.events(),
    agent: () => agent.info(),
    view: (q) => agent.view(q),
    watchPods: (listener) => agent.watchPods(listener),
    apply: async (body, contentType) => ({ apiVersion: 'v1', kind: 'Applied', pods: agent.apply(applyBody(body, contentType)) }),
    plan: async (body) => agent.plan(planBody(body)),
    planManifests: async (body) => agent.planManifests(manifestsBody(body, 'plan')),
    applyManifests: async (body) => {
      const { pods, warnings } = await agent.applyManifests(applyManifestsBody(body));
      return { apiVersion: 'v1', kind: 'Applied', pods, warnings };
    },
    setCondition: async (namespace, name, body) =>
      agent.setCondition(namespace, name, conditionBody(body)) as unknown as Record<string, unknown>,
    remove: async (namespace, name, grace) => ({ apiVersion: 'v1', kind: 'Deleted', ...(await agent.delete(namespace, name, grace)) }),
  };
}

/** POST /v1/pods: JSON {files: [{file, text}]} or manifest text (YAML or JSON) as the body. */
function applyBody(body: string, contentType: string): ManifestText[] {
  if (!(contentType.includes('json') && body.trimStart().startsWith('{') && body.includes('"files"')))
    return [{ file: '<request>', text: body }];
  let files: ManifestText[];
  try {
    files = (JSON.parse(body) as { files: ManifestText[] }).files;
  } catch (err) {
    throw new ApiError(400, `the request body is not valid JSON: ${errorMessage(err)}`);
  }
  if (!Array.isArray(files) || files.some((f) => typeof f?.file !== 'string' || typeof f?.text !== 'string')) {
    throw new ApiError(400, 'expected {"files": [{"file": NAME, "text": MANIFEST}]}');
  }
  // A file's name only says where the pods came from (escaped in their applied files' comment); a path's length at most.
  const long = files.findIndex((f) => Buffer.byteLength(f.file) > 4096);
  if (long >= 0)
    throw new ApiError(
      400,
      `files[${long}].file: expected a file name of at most 4096 bytes (PATH_MAX), got ${Buffer.byteLength(files[long]!.file)}`,
    );
  return files;
}

/** POST /v1/plan: {pods, prune}; each pod is the agent's to validate. */
function planBody(body: string): { pods: unknown[]; prune: boolean } {
  const req = parseJSON(body) as { pods?: unknown; prune?: unknown } | undefined;
  if (req === null || typeof req !== 'object' || !Array.isArray(req.pods)) {
    throw new ApiError(
      400,
      'plan: expected {"pods": [v1 Pods with metadata.name, metadata.uid and spec.containers, defaulted], "prune": true|false}',
    );
  }
  return { pods: req.pods as unknown[], prune: req.prune === true };
}

/** The body of POST /v1/manifests/*: {manifests: {entries: [{kind, path, display, text} | {problem}]}, nodeName, ...}. */
function manifestsBody(body: string, what: string): ManifestsRequest & { admission?: unknown } {
  const req = parseJSON(body) as (Partial<ManifestsRequest> & { prune?: unknown; admission?: unknown }) | undefined;
  const entryOK = (e: unknown): boolean => {
    const x = e as Record<string, unknown> | null;
    if (typeof x !== 'object' || x === null) return false;
    if ('problem' in x) return typeof (x.problem as { file?: unknown; message?: unknown } | null)?.message === 'string';
    return (
      (x.kind === 'file' || x.kind === 'stdin') && typeof x.path === 'string' && typeof x.display === 'string' && typeof x.text === 'string'
    );
  };
  if (
    !req ||
    typeof req.nodeName !== 'string' ||
    !req.nodeName ||
    !Array.isArray(req.manifests?.entries) ||
    !req.manifests.entries.every(entryOK)
  ) {
    throw new ApiError(
      400,
      `${what}: expected {"manifests": {"entries": [{"kind": "file"|"stdin", "path", "display", "text"} | {"problem"}]}, "nodeName"}`,
    );
  }
  return { manifests: req.manifests, nodeName: req.nodeName, prune: req.prune === true, admission: req.admission };
}

/** POST /v1/manifests/apply: the manifests, and the command's own admission settings. */
function applyManifestsBody(body: string): ApplyManifestsRequest {
  const { admission, ...req } = manifestsBody(body, 'apply');
  const a = admission as Partial<ApplyManifestsRequest['admission']> | undefined;
  if (!a || typeof a.node?.name !== 'string' || typeof a.node.allocatable !== 'object' || a.node.allocatable === null) {
    throw new ApiError(400, 'apply: expected "admission": {"allowPrivileged": true|false, "node": {name, labels, allocatable}}');
  }
  return { ...req, admission: { allowPrivileged: (a.allowPrivileged as unknown) === true, node: a.node } };
}

/** POST /v1/pods/NS/NAME/conditions: {type, status, reason?, message?}; which types may be set is the agent's rule. */
function conditionBody(body: string): PodConditionInput {
  const c = parseJSON(body) as { type?: unknown; status?: unknown; reason?: unknown; message?: unknown } | undefined;
  if (c === undefined)
    throw new ApiError(400, 'expected a JSON condition: {"type": "...", "status": "True" | "False" | "Unknown", "reason"?, "message"?}');
  if (typeof c !== 'object' || c === null || typeof c.type !== 'string') {
    throw new ApiError(400, 'type: expected a condition type, e.g. example.com/feature-1 (a qualified name)');
  }
  if (c.status !== 'True' && c.status !== 'False' && c.status !== 'Unknown')
    throw new ApiError(400, `status: expected True, False or Unknown, got ${JSON.stringify(c.status)}`);
  for (const f of ['reason', 'message'] as const)
    if (c[f] !== undefined && typeof c[f] !== 'string') throw new ApiError(400, `${f}: expected a string`);
  return { type: c.type, status: c.status, reason: c.reason as string | undefined, message: c.message as string | undefined };
}

/** The body as JSON; undefined when it is not. */
function parseJSON(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}
