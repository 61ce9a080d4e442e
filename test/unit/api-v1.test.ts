import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { IPod } from 'kubernetes-models/v1';
import { serveV1 } from '../../src/core/api/v1.js';
import { Metrics } from '../../src/core/metrics.js';
import { ApiError, type NodeAgent } from '../../src/core/node/agent.js';
import { exchange } from '../../src/core/status/client.js';
import { scratchDir } from '../support/e2e.js';

/** A NodeAgent that says what it was asked: the /v1 API must reach it only through these methods. */
function recordingAgent(): { agent: NodeAgent; calls: [string, ...unknown[]][] } {
  const calls: [string, ...unknown[]][] = [];
  const pod: IPod = { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'default', name: 'web', uid: 'u1' } };
  const agent: NodeAgent = {
    pods: () => [pod],
    watchPods: () => () => undefined,
    events: () => [],
    watchEvents: () => () => undefined,
    view: async (q) => (calls.push(['view', q]), { runtimeEndpoint: 'unix:///x', items: [] }),
    apply: (files) => (calls.push(['apply', files]), [{ namespace: 'default', name: 'web', uid: 'u1', generation: 1 }]),
    applyManifests: async (req) => (calls.push(['applyManifests', req]), { pods: [], warnings: [] }),
    delete: async (namespace, name, grace) => {
      calls.push(['delete', namespace, name, grace]);
      if (name === 'nosuch') throw new ApiError(404, `pod "${name}" not found in namespace ${namespace}`);
      return { namespace, name, uid: 'u1' };
    },
    plan: async (req) => (calls.push(['plan', req]), { runtimeEndpoint: 'unix:///x', plan: { pods: [], changes: false } as never }),
    planManifests: async (req) => (calls.push(['planManifests', req]), { runtimeEndpoint: '', plan: {} as never, pods: 0, warnings: [] }),
    setCondition: (namespace, name, c) => (calls.push(['setCondition', namespace, name, c]), pod),
    addEphemeralContainer: async (namespace, name, c) => (calls.push(['addEphemeralContainer', namespace, name, c]), pod),
    setApiObjects: () => undefined,
    health: () => ({ ok: true, checks: [{ name: 'pleg', ok: true, message: '' }] }),
    info: () => ({ pid: 1 }),
  };
  return { agent, calls };
}

/** An answer's status and its JSON body (message, items, and the rest). */
type Reply = { status: number; json: { message?: string; items?: { metadata: { name: string } }[] } & Record<string, unknown> };

/** The /v1 API on a socket of its own over a recording agent, for fn's time; what the agent was asked. */
async function withV1(fn: (call: (method: string, path: string, body?: string) => Promise<Reply>) => Promise<void>) {
  const scratch = scratchDir('unit-api-v1');
  const socket = join(scratch.dir, 'podctl.sock');
  const { agent, calls } = recordingAgent();
  const server: Server = await serveV1(socket, agent, new Metrics());
  try {
    await fn(async (method, path, body) => {
      const r = await exchange(socket, { method, path, body, timeoutMs: 10_000 });
      return { status: r.status, json: JSON.parse(r.body) as Reply['json'] };
    });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    scratch.cleanup();
  }
  return calls;
}

test("the /v1 API parses each body into the agent interface's arguments and wraps its answers in the v1 kinds", async () => {
  const calls = await withV1(async (call) => {
    const applied = await call('POST', '/v1/pods', 'kind: Pod\n');
    assert.deepEqual(applied, {
      status: 200,
      json: { apiVersion: 'v1', kind: 'Applied', pods: [{ namespace: 'default', name: 'web', uid: 'u1', generation: 1 }] },
    });
    assert.equal((await call('POST', '/v1/plan', '{"pods": [{"kind": "Pod"}], "prune": true}')).status, 200);
    const deleted = await call('DELETE', '/v1/pods/default/web?gracePeriodSeconds=3');
    assert.deepEqual(deleted, { status: 200, json: { apiVersion: 'v1', kind: 'Deleted', namespace: 'default', name: 'web', uid: 'u1' } });
    const missing = await call('DELETE', '/v1/pods/default/nosuch');
    assert.equal(missing.status, 404);
    assert.equal(missing.json.message, 'pod "nosuch" not found in namespace default');
    assert.equal((await call('POST', '/v1/pods/default/web/conditions', '{"type": "example.com/lb", "status": "True"}')).status, 200);
    assert.equal((await call('GET', '/v1/pods')).json.items?.[0]?.metadata.name, 'web');
  });
  assert.deepEqual(calls, [
    ['apply', [{ file: '<request>', text: 'kind: Pod\n' }]],
    ['plan', { pods: [{ kind: 'Pod' }], prune: true }],
    ['delete', 'default', 'web', 3],
    ['delete', 'default', 'nosuch', undefined],
    ['setCondition', 'default', 'web', { type: 'example.com/lb', status: 'True', reason: undefined, message: undefined }],
  ]);
});

test('a body of the wrong shape is a 400 naming what is expected, and the agent is not asked', async () => {
  const calls = await withV1(async (call) => {
    const bad: [string, string, RegExp][] = [
      ['/v1/plan', '{"pods": 1}', /^plan: expected \{"pods": \[/],
      ['/v1/manifests/plan', '{"nodeName": "n"}', /^plan: expected \{"manifests": \{"entries"/],
      ['/v1/manifests/apply', '{"manifests": {"entries": []}, "nodeName": "n"}', /^apply: expected "admission"/],
      ['/v1/pods', '{"files": [{"file": 1}]}', /^expected \{"files": \[\{"file": NAME, "text": MANIFEST\}\]\}$/],
      ['/v1/pods/default/web/conditions', 'not json', /^expected a JSON condition/],
      [
        '/v1/pods/default/web/conditions',
        '{"type": "example.com/lb", "status": "yes"}',
        /^status: expected True, False or Unknown, got "yes"$/,
      ],
    ];
    for (const [path, body, message] of bad) {
      const answer = await call('POST', path, body);
      assert.equal(answer.status, 400, path);
      assert.match(answer.json.message ?? '', message, path);
    }
  });
  assert.deepEqual(calls, []);
});

test('GET /v1/pods/NS/NAME answers the one pod as the agent lists it, and a pod it does not keep is a 404 NotFound Status', async () => {
  const calls = await withV1(async (call) => {
    const one = await call('GET', '/v1/pods/default/web');
    assert.deepEqual(one, {
      status: 200,
      json: { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'default', name: 'web', uid: 'u1' } },
    });
    const other = await call('GET', '/v1/pods/lab/web');
    assert.equal(other.status, 404);
    assert.deepEqual(other.json, {
      kind: 'Status',
      status: 'Failure',
      code: 404,
      message: 'pod "web" not found in namespace lab',
      reason: 'NotFound',
    });
  });
  assert.deepEqual(calls, [], 'a read asks the agent for nothing but its pods');
});
