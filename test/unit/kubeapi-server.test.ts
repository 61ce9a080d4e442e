import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type RequestOptions } from 'node:https';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import protobuf from 'protobufjs/light.js';
import type { Root } from 'protobufjs';
import kubePb from '../../src/generated/kube/kube-pb.js';
import type { CriClient } from '../../src/core/cri/client.js';
import type { PodEvent } from '../../src/core/events.js';
import { readKubeCredentials, type KubeCredentials } from '../../src/core/kubeapi/certs.js';
import { documentType } from '../../src/core/kubeapi/openapi/v2.js';
import { kubeApiDir, startKubeApi, type RunningKubeApi } from '../../src/core/kubeapi/index.js';
import { ApiError, type ApplyManifestsRequest, type NodeAgent, type PodWatchEvent } from '../../src/core/node/agent.js';
import { PodctlError } from '../../src/core/errors.js';
import type { SourceObjects } from '../../src/core/objects.js';
import { scratchDir } from '../support/e2e.js';

const NS = 'team';
const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

/**
 * A NodeAgent in memory: its pods are what the test puts and what the API hands over (applyManifests
 * keeps the pods of the text, Pending), each change sent to its watchers as the agent sends them.
 */
class FakeAgent {
  readonly applied: ApplyManifestsRequest[] = [];
  readonly deleted: { namespace: string; name: string; grace?: number }[] = [];
  /** What the API last handed the agent's kubelet of its ConfigMaps and Secrets. */
  apiObjects?: SourceObjects;
  private readonly byKey = new Map<string, IPod>();
  private readonly listeners = new Set<(e: PodWatchEvent) => void>();

  put(pod: IPod): void {
    const key = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
    const type = this.byKey.has(key) ? 'MODIFIED' : 'ADDED';
    this.byKey.set(key, pod);
    for (const l of this.listeners) l({ type, object: pod });
  }

  get(namespace: string, name: string): IPod | undefined {
    return this.byKey.get(`${namespace}/${name}`);
  }

  /** The pod's containers have stopped and its sandbox is gone: the agent's watch says DELETED. */
  terminated(namespace: string, name: string): void {
    const pod = this.byKey.get(`${namespace}/${name}`);
    if (!pod) return;
    this.byKey.delete(`${namespace}/${name}`);
    for (const l of this.listeners) l({ type: 'DELETED', object: pod });
  }

  readonly agent: NodeAgent = {
    pods: () => [...this.byKey.values()],
    watchPods: (listener) => {
      this.listeners.add(listener);
      return () => this.listeners.delete(listener);
    },
    events: (): PodEvent[] => [],
    watchEvents: () => () => undefined,
    view: () => Promise.reject(new Error('not used')),
    apply: () => {
      throw new Error('not used');
    },
    applyManifests: async (req) => {
      this.applied.push(req);
      const pods = [];
      for (const entry of req.manifests.entries) {
        for (const doc of (entry as { text: string }).text.split('\n---\n')) {
          const obj = JSON.parse(doc) as IPod;
          if (obj.kind !== 'Pod') continue;
          const live = this.get(obj.metadata!.namespace!, obj.metadata!.name!);
          const uid = live?.metadata?.uid ?? randomUUID();
          const generation = (live?.metadata?.generation ?? 0) + 1;
          this.put({ ...obj, metadata: { ...obj.metadata, uid, generation }, status: live?.status ?? { phase: 'Pending' } });
          pods.push({ namespace: obj.metadata!.namespace!, name: obj.metadata!.name!, uid, generation });
        }
      }
      return { pods, warnings: [] };
    },
    delete: async (namespace, name, grace) => {
      this.deleted.push({ namespace, name, grace });
      const pod = this.get(namespace, name);
      if (!pod) throw new ApiError(404, `pod "${name}" not found in namespace ${namespace}`);
      return { namespace, name, uid: pod.metadata!.uid };
    },
    plan: () => Promise.reject(new Error('not used')),
    planManifests: () => Promise.reject(new Error('not used')),
    setCondition: () => {
      throw new Error('not used');
    },
    addEphemeralContainer: () => Promise.reject(new Error('not used')),
    setApiObjects: (objects) => (this.apiObjects = objects),
    health: () => ({ ok: true, checks: [] }),
    info: () => ({ pid: process.pid }),
  };
}

function runningPod(name: string, labels: Record<string, string>, phase: 'Running' | 'Pending'): IPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: NS, name, uid: randomUUID(), generation: 1, labels },
    spec: { nodeName: 'node-1', containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
    status: {
      phase,
      startTime: new Date().toISOString(),
      containerStatuses: [
        {
          name: 'app',
          image: 'busybox:1.36',
          imageID: '',
          ready: phase === 'Running',
          restartCount: 0,
          started: phase === 'Running',
          state: phase === 'Running' ? { running: { startedAt: new Date().toISOString() } } : { waiting: { reason: 'ContainerCreating' } },
        },
      ],
    },
  };
}

const podBody = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { app: name } },
  spec: { containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }], ...extra },
});

let scratch: ReturnType<typeof scratchDir>;
let fake: FakeAgent;
let api: RunningKubeApi;
let creds: KubeCredentials;

before(async () => {
  scratch = scratchDir('unit-kubeapi-server');
  fake = new FakeAgent();
  fake.put(runningPod('web-1', { app: 'web', tier: 'front' }, 'Running'));
  fake.put(runningPod('db-1', { app: 'db' }, 'Pending'));
  const cri = { listContainerStats: async () => [] } as unknown as CriClient;
  api = await startKubeApi({
    agent: fake.agent,
    rootDir: scratch.dir,
    nodeName: 'node-1',
    host: '127.0.0.1',
    port: 0,
    admission: {
      allowPrivileged: false,
      node: { name: 'node-1', labels: {}, allocatable: { cpu: 4, memory: 8 << 30, 'ephemeral-storage': 100 << 30, pods: 110 } },
    },
    cri,
    podctlVersion: '0.1.0',
    now: () => Date.now(),
    node: () => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-1', labels: { 'kubernetes.io/hostname': 'node-1' } },
      status: {},
    }),
    log: () => undefined,
  });
  creds = readKubeCredentials(kubeApiDir(scratch.dir));
});

after(async () => {
  await api?.stop();
  scratch?.cleanup();
});

/** The answers' JSON, read field by field as the API server writes it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
  /** The body's bytes (a protobuf answer's). */
  raw: Buffer;
  json: Record<string, Json>;
}

/** One request over TLS, with the admin's client certificate unless anonymous. */
function call(
  method: string,
  path: string,
  opts: { body?: unknown; contentType?: string; accept?: string; anonymous?: boolean; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const url = new URL(path, api.url);
  const body =
    opts.body === undefined
      ? undefined
      : typeof opts.body === 'string' || Buffer.isBuffer(opts.body)
        ? opts.body
        : JSON.stringify(opts.body);
  const options: RequestOptions = {
    method,
    host: url.hostname,
    port: url.port,
    path: `${url.pathname}${url.search}`,
    ca: creds.caCert,
    ...(opts.anonymous ? {} : { cert: creds.clientCert, key: creds.clientKey }),
    headers: {
      ...(opts.accept ? { accept: opts.accept } : {}),
      // Node's client sends a DELETE's body without a length unless told one, as no Kubernetes client does.
      ...(body !== undefined ? { 'content-type': opts.contentType ?? 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
      ...opts.headers,
    },
  };
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = raw.toString('utf8');
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // not JSON: the test reads text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, raw, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Watch {
  /** The first event (from the watch's start) that matches; waits for it when none has yet. */
  first(what: string, match: (e: { type: string; object: Record<string, Json> }) => boolean): Promise<{ type: string; object: Json }>;
  close(): void;
}

/** A watch as a client reads one: a JSON event per line, kept from the first. */
function watch(path: string): Promise<Watch> {
  const url = new URL(path, api.url);
  return new Promise((resolve, reject) => {
    const events: { type: string; object: { metadata?: { name?: string } } & Record<string, unknown> }[] = [];
    const waiters = new Set<() => void>();
    let ended = false;
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        ca: creds.caCert,
        cert: creds.clientCert,
        key: creds.clientKey,
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`watch answered ${res.statusCode}`));
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buf += d;
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            events.push(JSON.parse(buf.slice(0, i)) as (typeof events)[number]);
            buf = buf.slice(i + 1);
          }
          for (const w of waiters) w();
        });
        res.on('close', () => {
          ended = true;
          for (const w of waiters) w();
        });
        resolve({
          first: (what, match) =>
            new Promise((ok, fail) => {
              const sent = () => JSON.stringify(events.map((x) => [x.type, x.object.metadata?.name]));
              // A bound on the wait only, so that a missing event fails the test instead of hanging it.
              const timer = setTimeout(() => {
                waiters.delete(check);
                fail(new Error(`no ${what} on the watch; it sent ${sent()}`));
              }, 20_000);
              const check = () => {
                const e = events.find(match);
                if (e) {
                  waiters.delete(check);
                  clearTimeout(timer);
                  ok(e);
                } else if (ended) {
                  waiters.delete(check);
                  clearTimeout(timer);
                  fail(new Error(`the watch ended before ${what}; it sent ${sent()}`));
                }
              };
              waiters.add(check);
              check();
            }),
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', (err) => {
      if (!ended) reject(err);
    });
    req.end();
  });
}

test('a port asked for that another process holds: a clear error that says what to do, and nothing left listening', async () => {
  const taken = Number(new URL(api.url).port);
  const other = scratchDir('unit-kubeapi-port-taken');
  try {
    await assert.rejects(
      startKubeApi({
        agent: fake.agent,
        rootDir: other.dir,
        nodeName: 'node-1',
        host: '127.0.0.1',
        port: taken,
        admission: {
          allowPrivileged: false,
          node: { name: 'node-1', labels: {}, allocatable: { cpu: 1, memory: 1, 'ephemeral-storage': 1, pods: 1 } },
        },
        cri: { listContainerStats: async () => [] } as unknown as CriClient,
        podctlVersion: '0.1.0',
        now: () => Date.now(),
        node: () => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' }, status: {} }),
        log: () => undefined,
      }),
      (err: unknown) => {
        assert.ok(err instanceof PodctlError, String(err));
        assert.equal(
          err.describe(),
          `the Kubernetes API cannot listen on 127.0.0.1:${taken}: the address is in use by another process; ` +
            'pass another --kube-api-port (0 picks a free one), or --no-kube-api to serve none',
        );
        return true;
      },
    );
    assert.ok(!existsSync(join(kubeApiDir(other.dir), 'endpoint.json')), 'no endpoint written for a server that never listened');
    // The first server still answers.
    assert.equal((await call('GET', '/version')).status, 200);
  } finally {
    other.cleanup();
  }
});

test('without credentials every request is answered a 401 Status, an upgrade request too', async () => {
  const plain = await call('GET', '/api/v1/pods', { anonymous: true });
  assert.equal(plain.status, 401);
  assert.deepEqual(plain.json, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Unauthorized',
    reason: 'Unauthorized',
    code: 401,
  });
  const upgrade = await call('GET', `/api/v1/namespaces/${NS}/pods/web-1/exec?command=true&stdout=1`, {
    anonymous: true,
    headers: {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    },
  });
  assert.equal(upgrade.status, 401);
  assert.equal(upgrade.json.reason, 'Unauthorized');
  assert.equal((await call('GET', '/version', { headers: { authorization: 'Bearer not-the-token' }, anonymous: true })).status, 401);
  assert.equal((await call('GET', '/version', { headers: { authorization: `Bearer ${creds.token}` }, anonymous: true })).status, 200);
});

test('discovery: /api, /apis and /api/v1, plain and aggregated; /version', async () => {
  const api1 = await call('GET', '/api');
  assert.equal(api1.json.kind, 'APIVersions');
  assert.deepEqual(api1.json.versions, ['v1']);
  const apis = await call('GET', '/apis');
  assert.equal(apis.json.kind, 'APIGroupList');
  assert.deepEqual(
    apis.json.groups.map((g: { name: string }) => g.name),
    ['metrics.k8s.io', 'authorization.k8s.io', 'authentication.k8s.io', 'apiextensions.k8s.io'],
  );
  const v1 = await call('GET', '/api/v1');
  assert.equal(v1.json.kind, 'APIResourceList');
  assert.equal(v1.json.groupVersion, 'v1');
  const names = v1.json.resources.map((r: { name: string }) => r.name);
  for (const r of ['pods', 'pods/log', 'pods/exec', 'configmaps', 'secrets', 'events', 'nodes', 'namespaces'])
    assert.ok(names.includes(r), r);

  const accept = `${AGGREGATED},application/json`;
  const aggregated = await call('GET', '/api', { accept });
  assert.equal(aggregated.headers['content-type'], AGGREGATED);
  assert.equal(aggregated.json.kind, 'APIGroupDiscoveryList');
  assert.equal(aggregated.json.apiVersion, 'apidiscovery.k8s.io/v2');
  const core = aggregated.json.items[0].versions[0];
  assert.equal(core.version, 'v1');
  const pods = core.resources.find((r: { resource: string }) => r.resource === 'pods');
  assert.deepEqual(pods.responseKind, { group: '', version: 'v1', kind: 'Pod' });
  assert.equal(pods.scope, 'Namespaced');
  assert.ok(pods.subresources.some((s: { subresource: string }) => s.subresource === 'log'));
  const groups = await call('GET', '/apis', { accept });
  assert.equal(groups.headers['content-type'], AGGREGATED);
  assert.equal(groups.json.items[0].metadata.name, 'metrics.k8s.io');

  const version = await call('GET', '/version');
  assert.equal(version.status, 200);
  assert.equal(version.json.major, '1');
  assert.match(version.json.minor, /^\d+$/);
  assert.match(version.json.gitVersion, /^v1\.\d+\.\d+\+podctl-0\.1\.0$/);
});

test('namespaces: one appears with its first pod, stays while another pod is in it, and goes with its last; default stays', async () => {
  const inTeam = (name: string): IPod => {
    const p = runningPod(name, {}, 'Running');
    return { ...p, metadata: { ...p.metadata, namespace: 'team-x' } };
  };
  const names = async () => ((await call('GET', '/api/v1/namespaces')).json.items as Json[]).map((n) => n.metadata.name);
  assert.equal((await call('GET', '/api/v1/namespaces/team-x')).status, 404);
  fake.put(inTeam('x-1'));
  fake.put(inTeam('x-2'));
  const ns = await call('GET', '/api/v1/namespaces/team-x');
  assert.equal(ns.status, 200);
  assert.equal(ns.json.status.phase, 'Active');
  assert.ok((await names()).includes('team-x'));
  fake.terminated('team-x', 'x-1');
  assert.equal((await call('GET', '/api/v1/namespaces/team-x')).status, 200, 'x-2 is still in it');
  fake.terminated('team-x', 'x-2');
  assert.equal((await call('GET', '/api/v1/namespaces/team-x')).status, 404);
  assert.ok((await names()).includes('default'));
});

test('a Namespace a client makes: created, 409 again, patched, kept with nothing in it; deleted with its content, Terminating until its pods are gone', async () => {
  const made = await call('POST', '/api/v1/namespaces', {
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'a' } } },
  });
  assert.equal(made.status, 201, made.text);
  assert.deepEqual(made.json.metadata.labels, { team: 'a', 'kubernetes.io/metadata.name': 'shop' });
  assert.deepEqual([made.json.spec, made.json.status], [{ finalizers: ['kubernetes'] }, { phase: 'Active' }]);
  assert.equal(made.json.metadata.namespace, undefined);
  assert.equal((await call('POST', '/api/v1/namespaces', { body: { metadata: { name: 'shop' } } })).status, 409);
  const bad = await call('POST', '/api/v1/namespaces', { body: { metadata: { name: 'Shop.one' } } });
  assert.equal(bad.status, 422);
  assert.match(bad.json.message, /a lowercase RFC 1123 label must consist of/);
  const patched = await call('PATCH', '/api/v1/namespaces/shop', {
    contentType: 'application/merge-patch+json',
    body: { metadata: { annotations: { owner: 'me' } } },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.json.metadata.annotations.owner, 'me');
  assert.equal(patched.json.metadata.uid, made.json.metadata.uid);
  const names = async () => ((await call('GET', '/api/v1/namespaces')).json.items as Json[]).map((n) => n.metadata.name);
  assert.ok((await names()).includes('shop'), 'listed with nothing in it');
  assert.ok(existsSync(join(kubeApiDir(scratch.dir), 'objects', 'namespaces', 'shop.json')), 'kept across restarts');

  assert.equal(
    (await call('POST', '/api/v1/namespaces/shop/configmaps', { body: { metadata: { name: 'cfg' }, data: { a: '1' } } })).status,
    201,
  );
  const p = runningPod('cart', {}, 'Running');
  fake.put({ ...p, metadata: { ...p.metadata, namespace: 'shop' } });
  const before = fake.deleted.length;
  const deleted = await call('DELETE', '/api/v1/namespaces/shop');
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal(deleted.json.kind, 'Namespace');
  assert.equal(deleted.json.status.phase, 'Terminating');
  assert.ok(deleted.json.metadata.deletionTimestamp);
  assert.deepEqual(fake.deleted.slice(before), [{ namespace: 'shop', name: 'cart', grace: undefined }], 'its pod deleted');
  assert.equal((await call('GET', '/api/v1/namespaces/shop/configmaps/cfg')).status, 404, 'its ConfigMap deleted');
  assert.equal(existsSync(join(kubeApiDir(scratch.dir), 'objects', 'namespaces', 'shop.json')), false);
  assert.equal((await call('GET', '/api/v1/namespaces/shop')).json.status.phase, 'Terminating', 'while its pod terminates');
  const refused = await call('POST', '/api/v1/namespaces/shop/configmaps', { body: { metadata: { name: 'late' } } });
  assert.equal(refused.status, 403);
  assert.equal(
    refused.json.message,
    'configmaps "late" is forbidden: unable to create new content in namespace shop because it is being terminated',
  );
  const relabelled = await call('PATCH', '/api/v1/namespaces/shop', {
    contentType: 'application/merge-patch+json',
    body: { metadata: { labels: { late: 'yes' } } },
  });
  assert.equal(relabelled.status, 200, relabelled.text);
  assert.equal(relabelled.json.status.phase, 'Terminating', 'a write on it does not bring it back');
  assert.equal(existsSync(join(kubeApiDir(scratch.dir), 'objects', 'namespaces', 'shop.json')), false, 'nor keeps it');
  fake.terminated('shop', 'cart');
  assert.equal((await call('GET', '/api/v1/namespaces/shop')).status, 404, 'gone with its last pod');

  const keep = await call('DELETE', '/api/v1/namespaces/default');
  assert.equal(keep.status, 403);
  assert.equal(keep.json.message, 'namespaces "default" is forbidden: this namespace may not be deleted');
  assert.ok((await names()).includes('default'));
});

test("the reviews: can-i is allowed (with its reason), the rules are every rule, whoami is the request's user; only POST", async () => {
  const access = await call('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace: NS, verb: 'create', resource: 'pods' } },
    },
  });
  assert.equal(access.status, 201, access.text);
  assert.equal(access.json.kind, 'SelfSubjectAccessReview');
  assert.deepEqual(access.json.spec, { resourceAttributes: { namespace: NS, verb: 'create', resource: 'pods' } });
  assert.equal(access.json.status.allowed, true);
  assert.match(access.json.status.reason, /every user this node authenticates may do everything/);
  const rules = await call('POST', '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', { body: { spec: { namespace: NS } } });
  assert.equal(rules.status, 201, rules.text);
  assert.deepEqual(rules.json.status.resourceRules, [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }]);
  const who = await call('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { body: { apiVersion: 'authentication.k8s.io/v1' } });
  assert.equal(who.status, 201, who.text);
  assert.deepEqual(who.json.status.userInfo, { username: 'podctl-admin', groups: ['system:masters', 'system:authenticated'] });
  assert.equal((await call('GET', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews')).status, 405);
  assert.equal((await call('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { body: {} })).status, 404);
  assert.equal((await call('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { body: '{' })).status, 400);
  const groups = ((await call('GET', '/apis')).json.groups as Json[]).map((g) => g.name);
  assert.deepEqual(groups.sort(), ['apiextensions.k8s.io', 'authentication.k8s.io', 'authorization.k8s.io', 'metrics.k8s.io']);
  assert.equal(
    (await call('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { body: { spec: {} }, anonymous: true })).status,
    401,
  );
});

test('services: listed, got and watched, and never any; a write is refused 405 saying why, a DELETE of one is 404', async () => {
  const list = await call('GET', `/api/v1/namespaces/${NS}/services`);
  assert.equal(list.status, 200, list.text);
  assert.deepEqual([list.json.kind, list.json.items], ['ServiceList', []]);
  assert.deepEqual((await call('GET', '/api/v1/services', { accept: TABLE })).json.rows, []);
  const one = await call('GET', `/api/v1/namespaces/${NS}/services/web`);
  assert.equal(one.status, 404);
  assert.equal(one.json.message, 'services "web" not found');
  const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } };
  const created = await call('POST', `/api/v1/namespaces/${NS}/services`, { body: service });
  assert.equal(created.status, 405, created.text);
  assert.match(created.json.message, /^this node keeps no Services: podctl runs pods, with no Service proxy/);
  assert.equal((await call('PUT', `/api/v1/namespaces/${NS}/services/web`, { body: service })).status, 405);
  assert.equal((await call('DELETE', `/api/v1/namespaces/${NS}/services/web`)).status, 404);
  assert.equal((await call('GET', `/api/v1/namespaces/${NS}/services`)).json.items.length, 0, 'still none');
  const v1 = (await call('GET', '/api/v1')).json.resources as Json[];
  const svc = v1.find((r) => r.name === 'services')!;
  assert.deepEqual([svc.kind, svc.namespaced, svc.verbs, svc.shortNames], ['Service', true, ['get', 'list', 'watch'], ['svc']]);
});

test('/openapi/v2: the JSON document, or as client-go asks for it gnostic protobuf; 304 on its ETag', async () => {
  const json = await call('GET', '/openapi/v2', { accept: 'application/json' });
  assert.equal(json.status, 200);
  assert.equal(json.headers['content-type'], 'application/json');
  assert.equal(json.json.swagger, '2.0');
  assert.deepEqual(json.json.definitions['io.k8s.api.core.v1.Pod']['x-kubernetes-group-version-kind'], [
    { group: '', kind: 'Pod', version: 'v1' },
  ]);
  const pb = await call('GET', '/openapi/v2', { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
  assert.equal(pb.status, 200);
  assert.equal(pb.headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
  const doc = documentType().toObject(documentType().decode(pb.raw)) as Json;
  assert.equal(doc.swagger, '2.0');
  assert.equal(doc.definitions.additionalProperties.length, Object.keys(json.json.definitions).length);
  assert.equal(doc.paths.path.length, Object.keys(json.json.paths).length);
  const again = await call('GET', '/openapi/v2', {
    accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf',
    headers: { 'if-none-match': String(pb.headers.etag) },
  });
  assert.equal(again.status, 304);
  assert.notEqual(pb.headers.etag, json.headers.etag, 'each form its own ETag');
});

test('apiextensions.k8s.io: no CustomResourceDefinitions, as a List or a Table; one asked for by name is a 404; only GET and watch', async () => {
  const list = await call('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions');
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(
    [list.json.kind, list.json.apiVersion, list.json.items],
    ['CustomResourceDefinitionList', 'apiextensions.k8s.io/v1', []],
  );
  const table = await call('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { accept: TABLE });
  assert.equal(table.headers['content-type'], TABLE);
  assert.deepEqual([table.json.kind, table.json.rows], ['Table', []]);
  const one = await call('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com');
  assert.equal(one.status, 404);
  assert.equal(one.json.message, 'customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" not found');
  assert.equal((await call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: {} })).status, 405);
  const resources = (await call('GET', '/apis/apiextensions.k8s.io/v1')).json.resources as Json[];
  assert.deepEqual(
    resources.map((r) => [r.name, r.namespaced, r.verbs]),
    [['customresourcedefinitions', false, ['get', 'list', 'watch']]],
  );

  // kubectl get crd -w: a watch from the list's version, open until its timeout with nothing to say (none ever changes).
  const rv = String(table.json.metadata.resourceVersion);
  const quiet = await call(
    'GET',
    `/apis/apiextensions.k8s.io/v1/customresourcedefinitions?watch=true&resourceVersion=${rv}&timeoutSeconds=1`,
    {
      accept: TABLE,
    },
  );
  assert.equal(quiet.status, 200, quiet.text);
  assert.equal(quiet.text, '');
  // A watch-list client's initial events: none, then the bookmark that ends them, of the group's kind.
  const w = await watch(
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan',
  );
  try {
    const end = await w.first('the initial-events-end bookmark', (e) => e.type === 'BOOKMARK');
    assert.deepEqual(
      [end.object.kind, end.object.apiVersion, end.object.metadata.annotations],
      ['CustomResourceDefinition', 'apiextensions.k8s.io/v1', { 'k8s.io/initial-events-end': 'true' }],
    );
  } finally {
    w.close();
  }
  // metrics.k8s.io is get and list only, as metrics-server's: a watch of it is refused.
  assert.equal((await call('GET', '/apis/metrics.k8s.io/v1beta1/pods?watch=true')).status, 405);
});

test('a pod that is not there is a 404 NotFound Status with its details', async () => {
  const r = await call('GET', `/api/v1/namespaces/${NS}/pods/x`);
  assert.equal(r.status, 404);
  assert.deepEqual(r.json, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'pods "x" not found',
    reason: 'NotFound',
    details: { name: 'x', kind: 'pods' },
    code: 404,
  });
});

test('lists by label and field selector; a Table when the Accept header asks for one', async () => {
  const names = async (query: string) =>
    ((await call('GET', `/api/v1/namespaces/${NS}/pods${query}`)).json.items as IPod[]).map((p) => p.metadata!.name).sort();
  assert.deepEqual(await names(''), ['db-1', 'web-1']);
  assert.deepEqual(await names('?labelSelector=app%3Dweb'), ['web-1']);
  assert.deepEqual(await names('?labelSelector=app%20in%20(web,db),tier'), ['web-1']);
  assert.deepEqual(await names('?labelSelector=app!%3Dweb'), ['db-1']);
  assert.deepEqual(await names('?fieldSelector=status.phase%3DPending'), ['db-1']);
  assert.deepEqual(await names('?fieldSelector=metadata.name%3Dweb-1'), ['web-1']);
  const list = await call('GET', `/api/v1/namespaces/${NS}/pods`);
  assert.equal(list.json.kind, 'PodList');
  assert.match(list.json.metadata.resourceVersion, /^\d+$/);
  const page1 = await call('GET', `/api/v1/namespaces/${NS}/pods?limit=1`);
  assert.deepEqual(
    page1.json.items.map((p: IPod) => p.metadata!.name),
    ['db-1'],
  );
  assert.equal(page1.json.metadata.remainingItemCount, 1);
  const page2 = await call('GET', `/api/v1/namespaces/${NS}/pods?limit=1&continue=${encodeURIComponent(page1.json.metadata.continue)}`);
  assert.deepEqual(
    page2.json.items.map((p: IPod) => p.metadata!.name),
    ['web-1'],
  );
  assert.equal(page2.json.metadata.continue, undefined);
  const bad = await call('GET', `/api/v1/namespaces/${NS}/pods?fieldSelector=spec.foo%3Dx`);
  assert.equal(bad.status, 400);
  assert.equal(bad.json.reason, 'BadRequest');

  const table = await call('GET', `/api/v1/namespaces/${NS}/pods?labelSelector=app%3Dweb`, { accept: `${TABLE},application/json` });
  assert.equal(table.status, 200);
  assert.equal(table.json.kind, 'Table');
  assert.equal(table.json.apiVersion, 'meta.k8s.io/v1');
  assert.deepEqual(
    table.json.columnDefinitions.slice(0, 5).map((c: { name: string }) => c.name),
    ['Name', 'Ready', 'Status', 'Restarts', 'Age'],
  );
  assert.equal(table.json.rows.length, 1);
  assert.deepEqual(table.json.rows[0].cells.slice(0, 4), ['web-1', '1/1', 'Running', '0']);
});

test('a watch from the listed version gets MODIFIED when the agent changes a pod; one from an expired version gets 410 Expired', async () => {
  const list = await call('GET', `/api/v1/namespaces/${NS}/pods`);
  const w = await watch(`/api/v1/namespaces/${NS}/pods?watch=true&resourceVersion=${list.json.metadata.resourceVersion}`);
  try {
    const db = fake.get(NS, 'db-1')!;
    fake.put({ ...db, metadata: { ...db.metadata, labels: { ...db.metadata!.labels, changed: 'yes' } } });
    const e = await w.first('db-1 MODIFIED', (x) => x.object.metadata?.name === 'db-1');
    assert.equal(e.type, 'MODIFIED');
    assert.equal(e.object.metadata.labels.changed, 'yes');
    assert.ok(Number(e.object.metadata.resourceVersion) > Number(list.json.metadata.resourceVersion));
  } finally {
    w.close();
  }
  // From no version or "0": an ADDED for each pod there is first, as the API server's watch cache sends them.
  for (const from of ['', '&resourceVersion=0']) {
    const fresh = await watch(`/api/v1/namespaces/${NS}/pods?watch=true${from}`);
    try {
      for (const name of ['db-1', 'web-1']) {
        const e = await fresh.first(`${name} ADDED`, (x) => x.object.metadata?.name === name);
        assert.equal(e.type, 'ADDED', `${name} from ${from || 'no version'}`);
      }
    } finally {
      fresh.close();
    }
  }
  const expired = await call('GET', `/api/v1/namespaces/${NS}/pods?watch=true&resourceVersion=1`);
  assert.equal(expired.status, 410);
  assert.equal(expired.json.kind, 'Status');
  assert.equal(expired.json.reason, 'Expired');
  assert.match(expired.json.message, /^too old resource version: 1 \(\d+\)$/);
});

test('the deprecated /api/v1/watch/ paths: the collection, one namespace, and one object by its name', async () => {
  const list = await call('GET', `/api/v1/namespaces/${NS}/pods`);
  const rv = list.json.metadata.resourceVersion;
  const all = await watch(`/api/v1/watch/pods?resourceVersion=${rv}`);
  const inNs = await watch(`/api/v1/watch/namespaces/${NS}/pods?resourceVersion=${rv}`);
  const one = await watch(`/api/v1/watch/namespaces/${NS}/pods/web-1?resourceVersion=${rv}`);
  try {
    for (const name of ['db-1', 'web-1']) {
      const p = fake.get(NS, name)!;
      fake.put({ ...p, metadata: { ...p.metadata, labels: { ...p.metadata!.labels, watched: 'old-path' } } });
    }
    for (const w of [all, inNs]) {
      for (const name of ['db-1', 'web-1']) {
        const e = await w.first(
          `${name} MODIFIED`,
          (x) => x.object.metadata?.name === name && x.object.metadata.labels?.watched === 'old-path',
        );
        assert.equal(e.type, 'MODIFIED');
      }
    }
    const e = await one.first('web-1 MODIFIED', (x) => x.object.metadata?.labels?.watched === 'old-path');
    assert.equal(e.object.metadata.name, 'web-1');
    // The named watch sends that object's events only: db-1 changed first, and its event is not the first there.
    const first = await one.first('its first event', () => true);
    assert.equal(first.object.metadata.name, 'web-1');
  } finally {
    for (const w of [all, inNs, one]) w.close();
  }
  assert.equal((await call('GET', `/api/v1/watch/namespaces/${NS}/pods/web-1/log`)).status, 404);
  assert.equal((await call('DELETE', `/api/v1/watch/namespaces/${NS}/pods`)).status, 405);
});

test('POST of a pod: 201 and handed to the agent; again: 409 AlreadyExists', async () => {
  const before = fake.applied.length;
  const made = await call('POST', `/api/v1/namespaces/${NS}/pods`, { body: podBody('x') });
  assert.equal(made.status, 201, made.text);
  assert.equal(made.json.metadata.name, 'x');
  assert.equal(made.json.metadata.namespace, NS);
  assert.ok(made.json.metadata.uid);
  assert.ok(made.json.metadata.creationTimestamp);
  assert.equal(fake.applied.length, before + 1);
  const handed = fake.applied.at(-1)!;
  assert.equal(handed.nodeName, 'node-1');
  const text = (handed.manifests.entries[0] as { text: string }).text;
  const sent = JSON.parse(text) as IPod;
  assert.equal(sent.metadata!.name, 'x');
  assert.equal(sent.metadata!.namespace, NS);
  assert.deepEqual(sent.spec!.containers[0]!.command, ['sleep', '3600']);
  assert.equal(sent.status, undefined, 'no status goes to the agent');
  assert.equal(fake.get(NS, 'x')?.metadata?.uid, made.json.metadata.uid);

  const again = await call('POST', `/api/v1/namespaces/${NS}/pods`, { body: podBody('x') });
  assert.equal(again.status, 409);
  assert.equal(again.json.reason, 'AlreadyExists');
  assert.equal(again.json.message, 'pods "x" already exists');
  assert.deepEqual(again.json.details, { name: 'x', kind: 'pods' });
  assert.equal(fake.applied.length, before + 1, 'nothing handed over');
});

test('an unknown field: 400 strict decoding error under fieldValidation=Strict, 201 and a Warning header under Warn', async () => {
  const before = fake.applied.length;
  const body = podBody('strict', { foo: 1 });
  const strict = await call('POST', `/api/v1/namespaces/${NS}/pods?fieldValidation=Strict`, { body });
  assert.equal(strict.status, 400);
  assert.equal(strict.json.reason, 'BadRequest');
  assert.match(strict.json.message, /strict decoding error: unknown field "spec\.foo"/);
  assert.equal(fake.applied.length, before, 'nothing handed over');
  assert.equal((await call('GET', `/api/v1/namespaces/${NS}/pods/strict`)).status, 404);

  const warned = await call('POST', `/api/v1/namespaces/${NS}/pods?fieldValidation=Warn`, { body });
  assert.equal(warned.status, 201, warned.text);
  assert.match(String(warned.headers.warning), /^299 - "unknown field \\"spec\.foo\\""/);
  assert.equal(warned.json.spec.foo, undefined, 'the unknown field dropped');
  const sent = JSON.parse((fake.applied.at(-1)!.manifests.entries[0] as { text: string }).text) as { spec: Record<string, unknown> };
  assert.equal(sent.spec.foo, undefined);
});

/** A Pod as client-go's protobuf serializer sends it (kubectl debug): the magic, the runtime.Unknown, the Pod's message. */
function protobufPod(name: string, containerExtra: Buffer = Buffer.alloc(0)): Buffer {
  const kube = kubePb as unknown as Root;
  const bytes = (type: string, o: Record<string, unknown>) => {
    const t = kube.lookupType(`kube.${type}`);
    return Buffer.from(t.encode(t.fromObject(o)).finish());
  };
  const field = (id: number, b: Uint8Array) =>
    Buffer.from(
      protobuf.Writer.create()
        .uint32((id << 3) | 2)
        .bytes(b)
        .finish(),
    );
  const container = Buffer.concat([
    bytes('Container', { name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'], tty: false }),
    containerExtra,
  ]);
  // Pod.spec (2) holding PodSpec.containers (2).
  const pod = Buffer.concat([bytes('Pod', { metadata: { name, labels: { app: name } } }), field(2, field(2, container))]);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), bytes('Unknown', { typeMeta: { apiVersion: 'v1', kind: 'Pod' }, raw: pod })]);
}

test('a Pod in protobuf (kubectl debug): created as its JSON is; a field a newer client set: 400 under Strict, a warning under Warn', async () => {
  const before = fake.applied.length;
  const path = `/api/v1/namespaces/${NS}/pods`;
  const contentType = 'application/vnd.kubernetes.protobuf';
  const made = await call('POST', path, { body: protobufPod('typed'), contentType });
  assert.equal(made.status, 201, made.text);
  assert.match(String(made.headers['content-type']), /^application\/json/);
  assert.equal(made.json.metadata.name, 'typed');
  assert.deepEqual(made.json.spec.containers[0].command, ['sleep', '3600']);
  assert.equal(made.json.spec.containers[0].tty, undefined, 'a zero non-pointer field is no field');
  assert.equal(made.headers.warning, undefined);
  const sent = JSON.parse((fake.applied.at(-1)!.manifests.entries[0] as { text: string }).text) as IPod;
  assert.deepEqual(sent.metadata!.labels, { app: 'typed' });
  assert.equal(sent.spec!.containers[0]!.image, 'busybox:1.36');

  // Container field 99 (a string), which Kubernetes 1.35's Container does not have.
  const newer = Buffer.from(
    protobuf.Writer.create()
      .uint32((99 << 3) | 2)
      .string('x')
      .finish(),
  );
  const strict = await call('POST', `${path}?fieldValidation=Strict`, { body: protobufPod('newer', newer), contentType });
  assert.equal(strict.status, 400);
  assert.equal(
    strict.json.message,
    'Pod in version "v1" cannot be handled as a Pod: strict decoding error: ' +
      `unknown field "spec.containers[0]: field 99 of Container" (not in Kubernetes 1.35's protobuf messages)`,
  );
  assert.equal(fake.applied.length, before + 1, 'nothing handed over');
  const warned = await call('POST', path, { body: protobufPod('newer', newer), contentType });
  assert.equal(warned.status, 201, warned.text);
  assert.match(String(warned.headers.warning), /^299 - "unknown field \\"spec\.containers\[0\]: field 99 of Container\\"/);
  assert.equal(fake.applied.length, before + 2);
  for (const name of ['typed', 'newer']) await call('DELETE', `${path}/${name}?gracePeriodSeconds=0`);
});

test('PUT that changes a command is refused 422; a strategic merge patch of the image is handed over', async () => {
  const live = (await call('GET', `/api/v1/namespaces/${NS}/pods/x`)).json as IPod;
  const changed = structuredClone(live);
  changed.spec!.containers[0]!.command = ['sleep', '7200'];
  const before = fake.applied.length;
  const put = await call('PUT', `/api/v1/namespaces/${NS}/pods/x`, { body: changed });
  assert.equal(put.status, 422, put.text);
  assert.equal(put.json.reason, 'Invalid');
  assert.match(put.json.message, /^Pod "x" is invalid: spec: Forbidden: pod updates may not change fields other than/);
  assert.equal(fake.applied.length, before, 'nothing handed over');

  const patch = await call('PATCH', `/api/v1/namespaces/${NS}/pods/x`, {
    contentType: 'application/strategic-merge-patch+json',
    body: { spec: { containers: [{ name: 'app', image: 'busybox:latest' }] } },
  });
  assert.equal(patch.status, 200, patch.text);
  assert.equal(patch.json.spec.containers[0].image, 'busybox:latest');
  assert.equal(fake.applied.length, before + 1);
  const sent = JSON.parse((fake.applied.at(-1)!.manifests.entries[0] as { text: string }).text) as IPod;
  assert.equal(sent.spec!.containers[0]!.image, 'busybox:latest');
  assert.deepEqual(sent.spec!.containers[0]!.command, ['sleep', '3600'], 'the rest of the container kept');
  assert.equal(fake.get(NS, 'x')?.metadata?.generation, 2);

  const apply = await call('PATCH', `/api/v1/namespaces/${NS}/pods/x`, {
    contentType: 'application/apply-patch+yaml',
    body: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n',
  });
  assert.equal(apply.status, 422);
  assert.equal(apply.json.reason, 'Invalid');
  assert.match(apply.json.message, /fieldManager: Required value: is required for apply patch/);
  assert.equal(fake.applied.length, before + 1, 'nothing handed over');
});

test('a ConfigMap: create, get, update, an update from a stale version is a 409 Conflict, delete', async () => {
  const base = `/api/v1/namespaces/${NS}/configmaps`;
  const made = await call('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' }, data: { a: '1' } } });
  assert.equal(made.status, 201, made.text);
  const rv1 = made.json.metadata.resourceVersion as string;
  assert.match(rv1, /^\d+$/);
  const got = await call('GET', `${base}/cm`);
  assert.deepEqual(got.json.data, { a: '1' });
  assert.equal(got.json.metadata.resourceVersion, rv1);

  const updated = await call('PUT', `${base}/cm`, { body: { ...got.json, data: { a: '2' } } });
  assert.equal(updated.status, 200, updated.text);
  assert.deepEqual(updated.json.data, { a: '2' });
  assert.ok(Number(updated.json.metadata.resourceVersion) > Number(rv1));

  const stale = await call('PUT', `${base}/cm`, { body: { ...got.json, data: { a: '3' } } });
  assert.equal(stale.status, 409);
  assert.equal(stale.json.reason, 'Conflict');
  assert.equal(
    stale.json.message,
    'Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the latest version and try again',
  );
  assert.deepEqual((await call('GET', `${base}/cm`)).json.data, { a: '2' }, 'the stale update changed nothing');

  const deleted = await call('DELETE', `${base}/cm`);
  assert.equal(deleted.status, 200);
  assert.equal(deleted.json.kind, 'Status');
  assert.equal(deleted.json.status, 'Success');
  assert.equal((await call('GET', `${base}/cm`)).status, 404);
});

test("the agent's kubelet reads the API's ConfigMaps and Secrets as they are after each write: created, patched, deleted", async () => {
  const handed = (ns: string, name: string) => ({
    configMap: fake.apiObjects?.configMaps.find((c) => c.metadata?.namespace === ns && c.metadata?.name === name)?.data,
    secret: fake.apiObjects?.secrets.find((c) => c.metadata?.namespace === ns && c.metadata?.name === name)?.data,
  });
  const base = `/api/v1/namespaces/objs`;
  assert.equal((await call('POST', `${base}/configmaps`, { body: { metadata: { name: 'app' }, data: { mode: 'one' } } })).status, 201);
  assert.deepEqual(handed('objs', 'app'), { configMap: { mode: 'one' }, secret: undefined });
  const patched = await call('PATCH', `${base}/configmaps/app`, {
    contentType: 'application/merge-patch+json',
    body: { data: { mode: 'two' } },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(handed('objs', 'app').configMap, { mode: 'two' });
  // Dated by its file, so that after a restart a pod's copy written since is still the newer.
  const live = fake.apiObjects!.configMaps.find((c) => c.metadata?.name === 'app')!;
  const file = join(kubeApiDir(scratch.dir), 'objects', 'configmaps', 'objs', 'app.json');
  assert.equal(fake.apiObjects!.writtenAt?.(live), statSync(file).mtimeMs);
  assert.equal((await call('POST', `${base}/secrets`, { body: { metadata: { name: 'app' }, stringData: { pass: 'x' } } })).status, 201);
  assert.deepEqual(handed('objs', 'app').secret, { pass: Buffer.from('x').toString('base64') });
  const dry = await call('PATCH', `${base}/configmaps/app?dryRun=All`, {
    contentType: 'application/merge-patch+json',
    body: { data: { mode: 'three' } },
  });
  assert.equal(dry.status, 200, dry.text);
  assert.deepEqual(handed('objs', 'app').configMap, { mode: 'two' }, 'a dry run hands nothing over');
  assert.equal((await call('DELETE', `${base}/configmaps/app`)).status, 200);
  assert.equal((await call('DELETE', `${base}/secrets/app`)).status, 200);
  assert.deepEqual(handed('objs', 'app'), { configMap: undefined, secret: undefined });
});

test('deletecollection: the pods a label selector matches are deleted as one DELETE each would be, and listed; the rest stay', async () => {
  const inBatch = (name: string, batch: string): IPod => {
    const p = runningPod(name, { batch }, 'Running');
    return { ...p, metadata: { ...p.metadata, namespace: 'batch' } };
  };
  fake.put(inBatch('b-1', 'one'));
  fake.put(inBatch('b-2', 'one'));
  fake.put(inBatch('b-3', 'two'));
  const before = fake.deleted.length;
  const r = await call('DELETE', '/api/v1/namespaces/batch/pods?labelSelector=batch%3Done', { body: { gracePeriodSeconds: 3 } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.kind, 'PodList');
  assert.deepEqual(
    (r.json.items as Json[]).map((p) => [p.metadata.name, p.metadata.deletionGracePeriodSeconds, !!p.metadata.deletionTimestamp]),
    [
      ['b-1', 3, true],
      ['b-2', 3, true],
    ],
  );
  assert.deepEqual(fake.deleted.slice(before), [
    { namespace: 'batch', name: 'b-1', grace: 3 },
    { namespace: 'batch', name: 'b-2', grace: 3 },
  ]);
  const dry = await call('DELETE', '/api/v1/namespaces/batch/pods?labelSelector=batch%3Dtwo&dryRun=All');
  assert.deepEqual(
    (dry.json.items as Json[]).map((p) => p.metadata.name),
    ['b-3'],
  );
  assert.equal(fake.deleted.length, before + 2, 'a dry run deletes nothing');
  for (const name of ['b-1', 'b-2', 'b-3']) fake.terminated('batch', name);
  // ConfigMaps likewise: the collection's, gone from GET, answered as they were.
  for (const name of ['c-1', 'c-2'])
    assert.equal(
      (await call('POST', '/api/v1/namespaces/batch/configmaps', { body: { metadata: { name }, data: { k: name } } })).status,
      201,
    );
  const maps = await call('DELETE', '/api/v1/namespaces/batch/configmaps');
  assert.equal(maps.status, 200, maps.text);
  assert.equal(maps.json.kind, 'ConfigMapList');
  assert.deepEqual(
    (maps.json.items as Json[]).map((c) => [c.metadata.name, c.data.k]),
    [
      ['c-1', 'c-1'],
      ['c-2', 'c-2'],
    ],
  );
  assert.equal((await call('GET', '/api/v1/namespaces/batch/configmaps/c-1')).status, 404);
  assert.equal((await call('DELETE', '/api/v1/pods')).status, 405, 'not across namespaces');
});

test("a Secret's stringData is merged into its data, base64-encoded", async () => {
  const made = await call('POST', `/api/v1/namespaces/${NS}/secrets`, {
    body: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's' },
      data: { kept: Buffer.from('old').toString('base64'), user: Buffer.from('someone').toString('base64') },
      stringData: { user: 'admin', pass: 'p@ss' },
    },
  });
  assert.equal(made.status, 201, made.text);
  assert.equal(made.json.type, 'Opaque');
  assert.equal(made.json.stringData, undefined);
  assert.deepEqual(made.json.data, {
    kept: Buffer.from('old').toString('base64'),
    user: Buffer.from('admin').toString('base64'),
    pass: Buffer.from('p@ss').toString('base64'),
  });
  const got = await call('GET', `/api/v1/namespaces/${NS}/secrets/s`);
  assert.deepEqual(got.json.data, made.json.data);
  assert.equal(got.json.stringData, undefined);
  assert.equal((await call('DELETE', `/api/v1/namespaces/${NS}/secrets/s`)).status, 200);
});

test('DELETE of a pod: 200 with its deletionTimestamp, then DELETED on the watch once the agent says it terminated', async () => {
  const list = await call('GET', `/api/v1/namespaces/${NS}/pods?fieldSelector=metadata.name%3Dx`);
  const w = await watch(
    `/api/v1/namespaces/${NS}/pods?watch=true&fieldSelector=metadata.name%3Dx&resourceVersion=${list.json.metadata.resourceVersion}`,
  );
  try {
    const r = await call('DELETE', `/api/v1/namespaces/${NS}/pods/x`, { body: { gracePeriodSeconds: 5 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.kind, 'Pod');
    assert.equal(r.json.metadata.name, 'x');
    assert.match(r.json.metadata.deletionTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(r.json.metadata.deletionGracePeriodSeconds, 5);
    const generation = (list.json.items as Json[])[0]!.metadata.generation as number;
    assert.equal(r.json.metadata.generation, generation + 1, 'the first graceful deletion is a new generation');
    assert.deepEqual(fake.deleted.at(-1), { namespace: NS, name: 'x', grace: 5 });
    const terminating = await w.first(
      'x with its deletionTimestamp',
      (e) => e.type === 'MODIFIED' && !!e.object.metadata?.deletionTimestamp,
    );
    assert.equal(terminating.object.metadata.deletionTimestamp, r.json.metadata.deletionTimestamp);
    // Still there until the agent says it is gone; a status the agent sends meanwhile keeps the deletion and its generation.
    const agentPod = fake.get(NS, 'x')!;
    fake.put({ ...agentPod, status: { ...agentPod.status, phase: 'Running', message: 'stopping' } });
    const during = await call('GET', `/api/v1/namespaces/${NS}/pods/x`);
    assert.equal(during.status, 200);
    assert.equal(during.json.status.message, 'stopping');
    assert.deepEqual(
      [during.json.metadata.deletionTimestamp, during.json.metadata.generation],
      [r.json.metadata.deletionTimestamp, generation + 1],
    );
    fake.terminated(NS, 'x');
    const gone = await w.first('x DELETED', (e) => e.type === 'DELETED');
    assert.equal(gone.object.metadata.name, 'x');
    assert.equal((await call('GET', `/api/v1/namespaces/${NS}/pods/x`)).status, 404);
  } finally {
    w.close();
  }
  const missing = await call('DELETE', `/api/v1/namespaces/${NS}/pods/x`);
  assert.equal(missing.status, 404);
  assert.equal(missing.json.message, 'pods "x" not found');
});
