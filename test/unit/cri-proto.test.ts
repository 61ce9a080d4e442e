import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as protoLoader from '@grpc/proto-loader';
import { criServices } from '../../src/core/cri/proto.js';
import { criProtoFile } from '../../src/core/paths.js';

// The static module generated at build time must mean what the hand-written .proto means: the
// same bytes on the wire and the same objects back as @grpc/proto-loader made
// from the source, with the options the client used with it.
const fromSource = protoLoader.loadSync(criProtoFile(), { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
const sourceService = (name: string) => fromSource[`runtime.v1.${name}`] as protoLoader.ServiceDefinition;

const createContainer = {
  podSandboxId: 'sb1',
  config: {
    metadata: { name: 'app', attempt: 3 },
    image: { image: 'docker.io/library/busybox:1.36' },
    command: ['sh', '-c'],
    args: ['echo hi'],
    envs: [{ key: 'A', value: 'b' }],
    mounts: [{ containerPath: '/data', hostPath: '/var/lib/x', readonly: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' }],
    labels: { 'io.kubernetes.pod.uid': 'u1' },
    annotations: { 'io.kubernetes.container.hash': '42' },
    linux: {
      resources: { cpuPeriod: 100000, cpuQuota: 25000, cpuShares: 256, memoryLimitInBytes: 67108864, oomScoreAdj: 999 },
      securityContext: { runAsUser: { value: 1000 }, readonlyRootfs: true, namespaceOptions: { network: 'POD', pid: 'CONTAINER' } },
    },
  },
  sandboxConfig: {
    metadata: { name: 'p', uid: 'u1', namespace: 'default', attempt: 0 },
    portMappings: [{ protocol: 'UDP', containerPort: 53, hostPort: 5353 }],
  },
};

const containerStatus = {
  status: {
    id: 'c1',
    metadata: { name: 'app', attempt: 3 },
    state: 'CONTAINER_EXITED',
    createdAt: 1_790_000_000_123_456,
    finishedAt: 1_790_000_001_000_000,
    exitCode: 137,
    reason: 'OOMKilled',
    labels: { a: 'b' },
    mounts: [],
  },
  info: { info: '{"pid":1}' },
};

test('each CRI method has the path and streaming of the .proto source', () => {
  for (const name of ['RuntimeService', 'ImageService'] as const) {
    const ours = criServices()[name];
    const theirs = sourceService(name);
    assert.deepEqual(
      Object.keys(ours).sort(),
      Object.keys(theirs)
        .filter((k) => /^[A-Z]/.test(k))
        .sort(),
      name,
    );
    for (const [method, def] of Object.entries(ours)) {
      const src = theirs[method]!;
      assert.deepEqual([def.path, def.requestStream, def.responseStream], [src.path, src.requestStream, src.responseStream], method);
    }
  }
});

test('requests and responses encode to the same bytes and decode to the same objects as from the .proto', () => {
  const ours = criServices().RuntimeService;
  const theirs = sourceService('RuntimeService');
  const cases: [string, 'request' | 'response', object][] = [
    ['CreateContainer', 'request', createContainer],
    ['ContainerStatus', 'response', containerStatus],
    ['ListContainers', 'request', { filter: { labelSelector: { 'io.kubernetes.pod.uid': 'u1' }, state: { state: 'CONTAINER_RUNNING' } } }],
    ['Version', 'response', { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: 'v1.6.20', runtimeApiVersion: 'v1' }],
  ];
  for (const [method, side, value] of cases) {
    const o = ours[method]!;
    const s = theirs[method]!;
    const [ourSer, ourDe, srcSer, srcDe] =
      side === 'request'
        ? [o.requestSerialize, o.requestDeserialize, s.requestSerialize, s.requestDeserialize]
        : [o.responseSerialize, o.responseDeserialize, s.responseSerialize, s.responseDeserialize];
    const bytes = ourSer(value);
    assert.deepEqual(bytes, srcSer(value), `${method} ${side} bytes`);
    assert.deepEqual(ourDe(bytes), srcDe(bytes), `${method} ${side} decoded`);
  }
  // An empty answer decodes with every default filled in, as the client reads it.
  const empty = ours.ContainerStatus!.responseDeserialize(Buffer.alloc(0)) as { status: unknown; info: object };
  assert.deepEqual(empty, sourceService('RuntimeService').ContainerStatus!.responseDeserialize(Buffer.alloc(0)));
  assert.deepEqual(empty.info, {});
});

test("the CRI error codes are gRPC's own", async () => {
  const { status } = await import('@grpc/grpc-js');
  const { GrpcStatus } = await import('../../src/core/cri/errors.js');
  for (const [name, code] of Object.entries(GrpcStatus)) assert.equal(code, status[name as keyof typeof status], name);
  assert.equal(Object.keys(GrpcStatus).length, Object.keys(status).filter((k) => Number.isNaN(Number(k))).length);
});
