import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import type { IEphemeralContainer, IPod, IPodStatus } from 'kubernetes-models/v1';
import { updateEphemeralContainers, validateEphemeralContainers, type EphemeralContext } from '../../src/core/kubeapi/ephemeral.js';
import { KubeStatusError } from '../../src/core/kubeapi/status.js';
import { WatchCache } from '../../src/core/kubeapi/store.js';
import { ephemeralSpecs } from '../../src/core/kuberuntime/ephemeral.js';
import { ApiError, type NodeAgent } from '../../src/core/node/agent.js';
import { statusSummary } from '../../src/core/status/phase.js';
import type { RuntimePodStatus } from '../../src/core/container/types.js';

const livePod = (ephemeral: IEphemeralContainer[] = []): IPod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default', uid: 'u-1' },
  spec: {
    containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }],
    initContainers: [{ name: 'setup', image: 'busybox:1.36', command: ['true'] }],
    volumes: [{ name: 'data', emptyDir: {} }],
    ...(ephemeral.length ? { ephemeralContainers: ephemeral } : {}),
  },
  status: { phase: 'Running', containerStatuses: [] },
});

/** What kubectl 1.32's debug adds (its EphemeralContainer marshalled: an empty resources object included). */
const debugger1: IEphemeralContainer = {
  name: 'debugger-abcde',
  image: 'busybox:1.36',
  command: ['sh'],
  stdin: true,
  tty: true,
  terminationMessagePolicy: 'File',
  resources: {},
  targetContainerName: 'app',
};

const fields = (errs: { field: string; message: string }[]) => errs.map((e) => `${e.field}: ${e.message}`);

test('kubectl debug’s container is valid: an empty resources object is no resources', () => {
  assert.deepEqual(validateEphemeralContainers(livePod(), [debugger1], 'node'), []);
});

test('the fields an ephemeral container may not set are refused in the API server’s words, each at its place', () => {
  const bad = {
    ...debugger1,
    ports: [{ containerPort: 80 }],
    resources: { limits: { cpu: '1' } },
    readinessProbe: { exec: { command: ['true'] } },
    lifecycle: { postStart: { exec: { command: ['true'] } } },
    volumeMounts: [{ name: 'data', mountPath: '/d', subPath: 'x' }],
  } as IEphemeralContainer;
  assert.deepEqual(fields(validateEphemeralContainers(livePod(), [bad], 'node')), [
    'spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container',
    'spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container',
    'spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container',
    'spec.ephemeralContainers[0].lifecycle: Forbidden: cannot be set for an Ephemeral Container',
    'spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container',
  ]);
});

test('a name another container has (app, init or ephemeral) is a Duplicate; a target must be a container of the pod, not an ephemeral one', () => {
  const errs = fields(
    validateEphemeralContainers(
      livePod([debugger1]),
      [debugger1, { name: 'app', image: 'busybox:1.36' }, { name: 'setup', image: 'busybox:1.36', targetContainerName: 'debugger-abcde' }],
      'node',
    ),
  );
  assert.deepEqual(errs, [
    'spec.ephemeralContainers[1].name: Duplicate value: "app"',
    'spec.ephemeralContainers[2].name: Duplicate value: "setup"',
    'spec.ephemeralContainers[2].targetContainerName: Not found: "debugger-abcde"',
  ]);
});

test('an existing ephemeral container may be neither removed nor changed', () => {
  assert.deepEqual(fields(validateEphemeralContainers(livePod([debugger1]), [], 'node')), [
    'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger-abcde" may not be removed',
  ]);
  assert.deepEqual(fields(validateEphemeralContainers(livePod([debugger1]), [{ ...debugger1, image: 'busybox:latest' }], 'node')), [
    'spec.ephemeralContainers[debugger-abcde]: Forbidden: existing ephemeral containers "debugger-abcde" may not be changed',
  ]);
});

test('an added container is checked as any container of the pod: its image, its mounts of the pod’s volumes', () => {
  const errs = validateEphemeralContainers(
    livePod(),
    [{ name: 'dbg', volumeMounts: [{ name: 'nosuch', mountPath: '/x' }] } as IEphemeralContainer],
    'node',
  );
  assert.ok(
    errs.some((e) => e.field === 'spec.ephemeralContainers[0].image'),
    JSON.stringify(errs),
  );
  assert.ok(
    errs.some((e) => e.field.startsWith('spec.ephemeralContainers[0].volumeMounts[0]')),
    JSON.stringify(errs),
  );
  assert.ok(errs.every((e) => e.field.startsWith('spec.ephemeralContainers[0]')));
});

function context(agentAnswer?: (ec: IEphemeralContainer) => IPod) {
  const cache = new WatchCache({ startVersion: 100 });
  cache.put('pods', livePod() as never);
  const calls: IEphemeralContainer[] = [];
  const agent = {
    addEphemeralContainer: async (_ns: string, _name: string, ec: IEphemeralContainer) => {
      calls.push(ec);
      if (!agentAnswer) throw new ApiError(409, 'pod default/web has completed (phase Succeeded): no ephemeral container can start in it');
      return agentAnswer(ec);
    },
  } as unknown as NodeAgent;
  const ctx: EphemeralContext = { agent, cache, nodeName: 'node', now: () => Date.parse('2026-01-01T00:00:00Z') };
  return { ctx, cache, calls };
}

const request = (method: string) =>
  ({ method, headers: { 'user-agent': 'kubectl/v1.32.0 (linux/amd64) kubernetes/abc' } }) as IncomingMessage;
const path = { group: '', version: 'v1', namespace: 'default', resource: 'pods', name: 'web', subresource: 'ephemeralcontainers' };
const smp = (ecs: IEphemeralContainer[]) => ({
  text: JSON.stringify({ spec: { ephemeralContainers: ecs } }),
  contentType: 'application/strategic-merge-patch+json',
});

test('the strategic merge patch kubectl debug sends: the container handed to the agent, the pod answered with it in spec and status', async () => {
  const running = { name: debugger1.name, image: 'busybox:1.36', imageID: '', ready: false, restartCount: 0, state: { running: {} } };
  const { ctx, cache, calls } = context((ec) => ({
    ...livePod([ec]),
    status: { phase: 'Running', ephemeralContainerStatuses: [running] },
  }));
  const answer = await updateEphemeralContainers(ctx, request('PATCH'), path, new URL('https://x/'), smp([debugger1]));
  assert.equal(answer.code, 200);
  assert.deepEqual(calls, [debugger1]);
  const pod = answer.object as IPod;
  assert.deepEqual(pod.spec?.ephemeralContainers, [debugger1]);
  assert.equal(pod.status?.ephemeralContainerStatuses?.[0]?.name, debugger1.name);
  assert.deepEqual((cache.get('pods', 'default', 'web') as IPod).spec?.ephemeralContainers, [debugger1]);
});

test('dryRun and an invalid patch change nothing; the agent’s refusal is a 409 Conflict', async () => {
  const { ctx, calls, cache } = context();
  const before = cache.get('pods', 'default', 'web');
  const dry = await updateEphemeralContainers(ctx, request('PATCH'), path, new URL('https://x/?dryRun=All'), smp([debugger1]));
  assert.deepEqual((dry.object as IPod).spec?.ephemeralContainers, [debugger1]);
  await assert.rejects(
    updateEphemeralContainers(ctx, request('PATCH'), path, new URL('https://x/'), smp([{ ...debugger1, ports: [{ containerPort: 1 }] }])),
    (err: KubeStatusError) =>
      err.code === 422 &&
      err.message === 'Pod "web" is invalid: spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container',
  );
  assert.deepEqual(calls, []);
  assert.deepEqual(cache.get('pods', 'default', 'web'), before);
  await assert.rejects(
    updateEphemeralContainers(ctx, request('PATCH'), path, new URL('https://x/'), smp([debugger1])),
    (err: KubeStatusError) => err.code === 409 && err.reason === 'Conflict' && /has completed \(phase Succeeded\)/.test(err.message),
  );
});

test('PUT takes the list from a whole pod, refused from a stale resourceVersion', async () => {
  const { ctx, cache, calls } = context((ec) => livePod([ec]));
  const live = cache.get('pods', 'default', 'web') as IPod;
  const stale = {
    ...live,
    metadata: { ...live.metadata, resourceVersion: '1' },
    spec: { ...live.spec!, ephemeralContainers: [debugger1] },
  };
  await assert.rejects(
    updateEphemeralContainers(ctx, request('PUT'), path, new URL('https://x/'), {
      text: JSON.stringify(stale),
      contentType: 'application/json',
    }),
    (err: KubeStatusError) => err.code === 409,
  );
  const fresh = { ...stale, metadata: live.metadata };
  const answer = await updateEphemeralContainers(ctx, request('PUT'), path, new URL('https://x/'), {
    text: JSON.stringify(fresh),
    contentType: 'application/json',
  });
  assert.equal(answer.code, 200);
  assert.deepEqual(calls, [debugger1]);
});

test('the kubelet lists ephemeral containers from their runtime records, oldest first; their states are part of the status summary', () => {
  const rec = (name: string, createdAt: number, spec?: object) =>
    ({ id: name, name, createdAt, image: 'busybox:1.36', specJSON: spec ? JSON.stringify(spec) : undefined }) as never;
  const runtime = {
    ephemeral: [rec('b', 20, { name: 'b', image: 'busybox:1.36', targetContainerName: 'app' }), rec('a', 10)],
  } as unknown as RuntimePodStatus;
  assert.deepEqual(ephemeralSpecs(runtime), [
    { name: 'a', image: 'busybox:1.36' },
    { name: 'b', image: 'busybox:1.36', targetContainerName: 'app' },
  ]);
  const status = (state: object): IPodStatus => ({
    phase: 'Running',
    ephemeralContainerStatuses: [{ name: 'a', image: '', imageID: '', ready: false, restartCount: 0, state }],
  });
  assert.notEqual(statusSummary(status({ running: {} })), statusSummary(status({ terminated: { exitCode: 0 } })));
});
