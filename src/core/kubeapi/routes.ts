import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeAgent } from '../node/agent.js';
import {
  AGGREGATED_DISCOVERY,
  CORE_RESOURCES,
  aggregatedDiscovery,
  apiGroupList,
  apiResourceList,
  apiVersions,
  versionInfo,
  wantsAggregated,
  type GroupInfo,
  type ResourceInfo,
} from './discovery.js';
import { createObject, deleteObject, isObjectResource, patchObjectWrite, replaceObject, type ObjectWriteContext } from './objects.js';
import { updateEphemeralContainers } from './ephemeral.js';
import { serveOpenapi } from './openapi/serve.js';
import { createPod, deletePod, patchPod, replacePod, type PodWriteContext, type WriteAnswer } from './pods.js';
import { serveCollection, serveObject, TABLE_CONTENT_TYPE, type ReadContext } from './reads.js';
import { unsupportedPatchType } from './patch/index.js';
import { decodeKubeProtobuf, PROTOBUF_CONTENT_TYPE } from './protobuf.js';
import { isDryRun, isWatch, parseResourcePath, readObjectBody, type ObjectBody, type ResourcePath } from './request.js';
import { sendJSON, socketStatus, type KubeHandler, type KubeRequest } from './server.js';
import { KubeStatusError, methodNotAllowed, notFound, SERVICES_NOT_KEPT } from './status.js';
import { deleteOptions } from './writes.js';
import type { KubeObject, WatchCache } from './store.js';
import { handlePodUpgrade, servePodLog, type PodStreamContext } from './streams/index.js';
import type { Duplex } from 'node:stream';

/** An extra API group the node serves (metrics.k8s.io, the reviews): its discovery, and its own GETs or creates. */
export interface ExtraGroup extends GroupInfo {
  /** A GET of one of its resources; accept says whether a Table is asked for (an answer of kind Table is sent as one). */
  get?(path: ResourcePath, url: URL, accept: string | undefined): Promise<unknown>;
  /** POST to one of its resources (a review): the answer's code and object. */
  create?(path: ResourcePath, body: ObjectBody, user: KubeRequest['user']): Promise<{ code: number; object: unknown }>;
}

export interface KubeRoutesOptions {
  agent: NodeAgent;
  cache: WatchCache;
  pods: PodWriteContext;
  objects: ObjectWriteContext;
  reads: ReadContext;
  streams: Omit<PodStreamContext, 'pod'>;
  groups: ExtraGroup[];
  podctlVersion: string;
  startedAt: number;
  serverAddress: () => string;
  /** After a write that may change the namespaces in use. */
  changed: () => void;
}

const byName = new Map(CORE_RESOURCES.map((r) => [r.name, r]));

/**
 * The Kubernetes API's routes over the node: discovery, openapi, /version, and the core resources
 * (pods, configmaps, secrets, events, nodes, namespaces) with their verbs, plus the extra groups.
 */
export class KubeRoutes implements KubeHandler {
  constructor(private readonly o: KubeRoutesOptions) {}

  async handle({ req, res, url, user }: KubeRequest): Promise<void> {
    const p = url.pathname.replace(/\/+$/, '') || '/';
    const accept = req.headers.accept;
    if (req.method === 'GET' || req.method === 'HEAD') {
      switch (p) {
        case '/version':
          return sendJSON(res, 200, versionInfo(this.o.podctlVersion, new Date(this.o.startedAt)));
        case '/healthz':
        case '/livez':
        case '/readyz':
          return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        case '/api':
          if (wantsAggregated(accept))
            return sendJSON(res, 200, aggregatedDiscovery([{ group: '', version: 'v1', resources: CORE_RESOURCES }]), AGGREGATED_DISCOVERY);
          return sendJSON(res, 200, apiVersions(this.o.serverAddress()));
        case '/apis':
          if (wantsAggregated(accept)) return sendJSON(res, 200, aggregatedDiscovery(this.o.groups), AGGREGATED_DISCOVERY);
          return sendJSON(res, 200, apiGroupList(this.o.groups));
        case '/api/v1':
          return sendJSON(res, 200, apiResourceList('v1', CORE_RESOURCES));
      }
      if (serveOpenapi(p, req, res)) return;
      const group = this.o.groups.find((g) => p === `/apis/${g.group}` || p === `/apis/${g.group}/${g.version}`);
      if (group) {
        if (p === `/apis/${group.group}`) {
          const gv = { groupVersion: `${group.group}/${group.version}`, version: group.version };
          return sendJSON(res, 200, { kind: 'APIGroup', apiVersion: 'v1', name: group.group, versions: [gv], preferredVersion: gv });
        }
        return sendJSON(res, 200, apiResourceList(`${group.group}/${group.version}`, group.resources));
      }
    }
    const path = parseResourcePath(p);
    if (!path) throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    if (path.group) {
      const g = this.o.groups.find((x) => x.group === path.group && x.version === path.version);
      if (!g?.resources.some((r) => r.name === path.resource))
        throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
      const info = g.resources.find((r) => r.name === path.resource)!;
      // A watch of a group's resource is the store's, as every watch here: CRDs, which never change, one that stays quiet.
      if (req.method === 'GET' && isWatch(url)) {
        if (!info.verbs.includes('watch')) throw methodNotAllowed();
        return serveCollection(this.o.reads, info, path, url, accept, res);
      }
      if (req.method === 'GET' && g.get) {
        const answer = await g.get(path, url, accept);
        return sendJSON(res, 200, answer, (answer as { kind?: string } | undefined)?.kind === 'Table' ? TABLE_CONTENT_TYPE : undefined);
      }
      if (req.method === 'POST' && g.create && !path.name && !path.subresource) {
        const answer = await g.create(path, await readObjectBody(req), user);
        return sendJSON(res, answer.code, answer.object);
      }
      throw methodNotAllowed();
    }
    if (path.version !== 'v1') throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    const info = byName.get(path.resource);
    if (!info) throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    // A namespaced resource asked for without one lists across namespaces; a cluster one never has one.
    if (!info.namespaced && path.namespace) throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    return this.resource(info, path, req, res, url, user.user);
  }

  private async resource(
    info: ResourceInfo,
    path: ResourcePath,
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    user: string,
  ): Promise<void> {
    const accept = req.headers.accept;
    const method = req.method ?? 'GET';
    if (path.subresource) return this.subresource(info, path, req, res, url);
    if (path.watch) {
      if (method !== 'GET') throw methodNotAllowed();
      // The deprecated /watch/ paths: the same watch as ?watch=true, one object's by its name.
      const watchURL = new URL(url);
      watchURL.searchParams.set('watch', 'true');
      const fields = [url.searchParams.get('fieldSelector'), path.name && `metadata.name=${path.name}`].filter(Boolean);
      if (fields.length) watchURL.searchParams.set('fieldSelector', fields.join(','));
      return serveCollection(this.o.reads, info, { ...path, name: undefined }, watchURL, accept, res);
    }
    if (method === 'GET') {
      if (path.name) return serveObject(this.o.reads, info, path, url, accept, res);
      return serveCollection(this.o.reads, info, path, url, accept, res);
    }
    if (info.name === 'services') {
      // None is here to delete, as GET says; anything else would write one.
      if (method === 'DELETE' && path.name) throw notFound('services', path.name);
      throw methodNotAllowed(SERVICES_NOT_KEPT);
    }
    if (!info.verbs.includes(verbOf(method, path)) || (info.namespaced && !path.namespace)) throw methodNotAllowed();
    const body = protobufAsJSON(await readObjectBody(req), method, info, url);
    setWarnings(res, body.warnings);
    if (method === 'DELETE' && !path.name) return sendJSON(res, 200, await this.deleteCollection(info, path, url, body.text));
    if (method === 'DELETE' && info.name === 'namespaces') return sendJSON(res, 200, await this.deleteNamespace(path, url, body.text));
    if (method === 'POST' && info.namespaced) this.refuseInTerminating(info, path.namespace!, body.text);
    let answer: WriteAnswer;
    if (info.name === 'pods') {
      const ctx = this.o.pods;
      if (method === 'POST') answer = await createPod(ctx, req, path, url, body.text, user);
      else if (method === 'PUT') answer = await replacePod(ctx, req, path, url, body.text, user);
      else if (method === 'PATCH') answer = await patchPod(ctx, req, path, url, body, user);
      else if (method === 'DELETE') answer = await deletePod(ctx, path, url, body.text);
      else throw methodNotAllowed();
      this.o.changed();
    } else if (isObjectResource(info.name)) {
      const ctx = this.o.objects;
      if (method === 'POST') answer = createObject(ctx, info.name, req, path, url, body.text);
      else if (method === 'PUT') answer = replaceObject(ctx, info.name, req, path, url, body.text);
      else if (method === 'PATCH') answer = patchObjectWrite(ctx, info.name, req, path, url, body);
      else if (method === 'DELETE') answer = deleteObject(ctx, info.name, path, url, body.text);
      else throw methodNotAllowed();
    } else throw methodNotAllowed();
    setWarnings(res, [...body.warnings, ...answer.warnings]);
    sendJSON(res, answer.code, answer.object);
  }

  /**
   * deletecollection: each object of the namespace the selectors match, deleted as one DELETE of it would be (the same
   * DeleteOptions and dryRun), answered with the list of them as deleted. One that cannot be deleted stops it there.
   */
  private async deleteCollection(info: ResourceInfo, path: ResourcePath, url: URL, text: string): Promise<KubeObject> {
    const { items } = this.o.cache.list(info.name, {
      namespace: path.namespace,
      labelSelector: url.searchParams.get('labelSelector') ?? undefined,
      fieldSelector: url.searchParams.get('fieldSelector') ?? undefined,
    });
    const deleted: KubeObject[] = [];
    try {
      for (const item of items) {
        const one = { ...path, name: item.metadata!.name! };
        if (info.name === 'pods') deleted.push((await deletePod(this.o.pods, one, url, text)).object as KubeObject);
        else if (isObjectResource(info.name)) {
          // Its answer is a Status; the list holds the object as it was.
          deleteObject(this.o.objects, info.name, one, url, text);
          deleted.push(item);
        }
      }
    } finally {
      if (info.name === 'pods' && deleted.length) this.o.changed();
    }
    return { kind: `${info.kind}List`, apiVersion: 'v1', metadata: { resourceVersion: this.o.cache.resourceVersion }, items: deleted };
  }

  /** New content in a namespace being deleted is refused, as the API server's NamespaceLifecycle admission refuses it. */
  private refuseInTerminating(info: ResourceInfo, namespace: string, text: string): void {
    if (!this.o.cache.get('namespaces', undefined, namespace)?.metadata?.deletionTimestamp) return;
    let name = '';
    try {
      name = String((JSON.parse(text) as { metadata?: { name?: unknown } }).metadata?.name ?? '');
    } catch {
      // The create itself says what is wrong with its body; the refusal stands either way.
    }
    throw new KubeStatusError(
      403,
      'Forbidden',
      `${info.name}${name ? ` ${JSON.stringify(name)}` : ''} is forbidden: ` +
        `unable to create new content in namespace ${namespace} because it is being terminated`,
      { name, kind: info.name, causes: [{ reason: 'NamespaceTerminating', field: 'metadata.namespace' }] },
    );
  }

  /**
   * DELETE /api/v1/namespaces/NAME, as the API server and its namespace controller do it: the namespace is Terminating at
   * once, everything in it is deleted (pods with their grace period), and it goes once its pods are gone. A pod that
   * cannot be deleted here (a watch file's) keeps it Terminating. default and the kube- ones may not be deleted.
   */
  private async deleteNamespace(path: ResourcePath, url: URL, text: string): Promise<KubeObject> {
    const name = path.name!;
    const live = this.o.cache.get('namespaces', undefined, name);
    if (!live) throw notFound('namespaces', name);
    if (['default', 'kube-system', 'kube-public', 'kube-node-lease'].includes(name))
      throw new KubeStatusError(403, 'Forbidden', `namespaces "${name}" is forbidden: this namespace may not be deleted`, {
        name,
        kind: 'namespaces',
      });
    deleteOptions(text, live);
    if (isDryRun(url)) return live;
    const objects = this.o.objects;
    const since = new Date(objects.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    objects.declared?.delete(name);
    objects.files.delete('namespaces', undefined, name);
    const terminating = this.o.cache.put('namespaces', {
      ...live,
      metadata: { ...live.metadata, deletionTimestamp: live.metadata?.deletionTimestamp ?? since },
      status: { phase: 'Terminating' },
    });
    try {
      for (const resource of ['configmaps', 'secrets'] as const)
        for (const o of this.o.cache.list(resource, { namespace: name }).items)
          deleteObject(objects, resource, { ...path, resource, namespace: name, name: o.metadata!.name! }, url);
      for (const pod of this.o.cache.list('pods', { namespace: name }).items) {
        if (pod.metadata?.deletionTimestamp) continue;
        await deletePod(this.o.pods, { ...path, resource: 'pods', namespace: name, name: pod.metadata!.name! }, url, '').catch(
          (err: Error) => this.o.reads.log?.(`namespace ${name}: pod ${pod.metadata!.name!} stays: ${err.message}`),
        );
      }
    } finally {
      this.o.changed();
    }
    return terminating;
  }

  /** pods/status (read-only here), pods/log, pods/ephemeralcontainers; the streams come as upgrades. */
  private async subresource(info: ResourceInfo, path: ResourcePath, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const sub = info.subresources?.find((s) => s.name === path.subresource);
    if (!sub || !path.name) throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    const pod = this.o.cache.get('pods', path.namespace!, path.name);
    if (!pod) throw notFound('pods', path.name);
    if (sub.name === 'status' && req.method === 'GET') return sendJSON(res, 200, pod);
    if (sub.name === 'log' && req.method === 'GET') return servePodLog(req, res, url, { ...this.o.streams, pod: pod as never });
    if (sub.name === 'ephemeralcontainers' && req.method === 'GET') return sendJSON(res, 200, pod);
    if (sub.name === 'ephemeralcontainers' && (req.method === 'PATCH' || req.method === 'PUT')) {
      const answer = await updateEphemeralContainers(this.o.pods, req, path, url, await readObjectBody(req));
      this.o.changed();
      return sendJSON(res, answer.code, answer.object);
    }
    if (['exec', 'attach', 'portforward'].includes(sub.name)) throw new KubeStatusError(400, 'BadRequest', `Upgrade request required`);
    throw methodNotAllowed();
  }

  async upgrade({ req, url, socket, head }: { req: IncomingMessage; url: URL; socket: Duplex; head: Buffer }): Promise<void> {
    const path = parseResourcePath(url.pathname);
    const kind = path?.subresource;
    if (
      !path ||
      path.resource !== 'pods' ||
      !path.name ||
      !path.namespace ||
      (kind !== 'exec' && kind !== 'attach' && kind !== 'portforward')
    )
      return socketStatus(socket, new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource'));
    const pod = this.o.cache.get('pods', path.namespace, path.name) as { status?: { phase?: string } } | undefined;
    if (!pod) return socketStatus(socket, notFound('pods', path.name));
    const phase = pod.status?.phase;
    if (kind === 'exec' && (phase === 'Succeeded' || phase === 'Failed'))
      return socketStatus(socket, badRequest400(`cannot exec into a container in a completed pod; current phase is ${phase}`));
    if (kind === 'portforward' && phase !== 'Running')
      return socketStatus(socket, badRequest400(`pod ${path.name} is not running (phase ${phase ?? 'unknown'})`));
    handlePodUpgrade(kind, req, socket, head, url, { ...this.o.streams, pod: pod as never });
  }
}

/**
 * A protobuf body (client-go's typed clients: kubectl create configmap|secret, kubectl debug) as the JSON
 * text the handlers take; a patch is JSON or YAML whatever the client, so a protobuf one is refused (415).
 * Fields with a value that the node's messages lack are dropped, as the API server drops them, and
 * fieldValidation says what the client hears of it: a 400 under Strict, a warning under Warn (the default).
 */
function protobufAsJSON(body: ObjectBody, method: string, info: ResourceInfo, url: URL): ObjectBody & { warnings: string[] } {
  if (body.contentType !== PROTOBUF_CONTENT_TYPE) return { ...body, warnings: [] };
  if (method === 'PATCH') throw unsupportedPatchType();
  // A DELETE without options has no body at all.
  if (method === 'DELETE' && body.bytes.length === 0) return { ...body, text: '', contentType: 'application/json', warnings: [] };
  const into = method === 'DELETE' ? { apiVersion: 'v1', kind: 'DeleteOptions' } : { apiVersion: 'v1', kind: info.kind };
  const { kind, object, unknownFields } = decodeKubeProtobuf(body.bytes, into);
  const unknown = unknownFields.map((f) => `unknown field "${f}" (not in Kubernetes 1.35's protobuf messages)`);
  const mode = url.searchParams.get('fieldValidation') ?? 'Warn';
  if (unknown.length && mode === 'Strict')
    throw badRequest400(`${kind} in version "v1" cannot be handled as a ${kind}: strict decoding error: ${unknown.join(', ')}`);
  const text = JSON.stringify(object);
  return { text, bytes: Buffer.from(text), contentType: 'application/json', warnings: mode === 'Warn' ? unknown : [] };
}

/** The Warning headers of a write's answer, as the API server sends them. */
function setWarnings(res: ServerResponse, warnings: string[]): void {
  if (warnings.length)
    res.setHeader(
      'warning',
      warnings.map((w) => `299 - ${JSON.stringify(w)}`),
    );
}

function badRequest400(message: string): KubeStatusError {
  return new KubeStatusError(400, 'BadRequest', message);
}

function verbOf(method: string, path: ResourcePath): string {
  switch (method) {
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return path.name ? 'delete' : 'deletecollection';
    default:
      return 'get';
  }
}
