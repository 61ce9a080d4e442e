import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { CriClient } from '../../src/core/cri/client.js';
import { containerSummaryDecoder, decodeContainerSummaries, decodePodSandboxSummaries } from '../../src/core/cri/summaries.js';
import type * as T from '../../src/core/cri/types.js';
import { FakeRuntime } from '../../fakecri/index.js';
import { criProtoFile } from '../../src/core/paths.js';

const BUSYBOX = 'docker.io/library/busybox:1.36';

test('summaries equal the full ListPodSandbox/ListContainers answers without annotations or image, in every state', async () => {
  const fake = await FakeRuntime.start({ images: [BUSYBOX] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 2000, pullTimeoutMs: 2000 });
  try {
    for (let i = 0; i < 3; i++) {
      const pod: T.PodSandboxConfigInput = {
        metadata: { name: `p${i}`, uid: `uid-${i}`, namespace: 'ns', attempt: i },
        labels: { 'io.kubernetes.pod.uid': `uid-${i}`, 'with=odd/chars': 'ü ✓', empty: '' },
        annotations: { 'io.podctl.pod.spec': JSON.stringify({ containers: [{ name: 'a'.repeat(500) }] }) },
      };
      const sandbox = await client.runPodSandbox(pod);
      for (const name of ['running', 'exited', 'created']) {
        const id = await client.createContainer(
          sandbox,
          {
            metadata: { name, attempt: 2 },
            image: { image: BUSYBOX },
            command: ['sleep', '3600'],
            labels: { 'io.kubernetes.container.name': name },
            annotations: { big: 'x'.repeat(2000) },
          },
          pod,
        );
        if (name !== 'created') await client.startContainer(id);
        if (name === 'exited') fake.exitContainer(id, 3);
      }
      if (i === 2) await client.stopPodSandbox(sandbox);
    }
    const [sandboxes, containers, sandboxSummaries, containerSummaries] = await Promise.all([
      client.listPodSandbox(),
      client.listContainers(),
      client.listPodSandboxSummaries(),
      client.listContainerSummaries(),
    ]);
    assert.equal(sandboxes.length, 3);
    assert.equal(containers.length, 9);
    assert.deepEqual(new Set(containers.map((c) => c.state)), new Set(['CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_CREATED']));
    assert.deepEqual(new Set(sandboxes.map((s) => s.state)), new Set(['SANDBOX_READY', 'SANDBOX_NOTREADY']));
    assert.deepEqual(
      sandboxSummaries,
      sandboxes.map(({ annotations: _a, ...rest }) => rest),
    );
    assert.deepEqual(
      containerSummaries,
      containers.map(({ annotations: _a, image: _i, ...rest }) => rest),
    );
    // A filter is sent as with the full call.
    const one = await client.listContainerSummaries({ labelSelector: { 'io.kubernetes.container.name': 'exited' } });
    assert.deepEqual(
      one.map((c) => c.state),
      ['CONTAINER_EXITED', 'CONTAINER_EXITED', 'CONTAINER_EXITED'],
    );
  } finally {
    client.close();
    await fake.stop();
  }
});

test('summaries: nanosecond timestamps past 2^53 and unknown fields decode as the generic decoder does', () => {
  const root = protobuf.loadSync(criProtoFile());
  const List = root.lookupType('runtime.v1.ListContainersResponse');
  const createdAt = '1790000000123456789';
  const bytes = List.encode(
    List.fromObject({
      containers: [
        {
          id: 'c1',
          podSandboxId: 's1',
          metadata: { name: 'app', attempt: 4 },
          state: 'CONTAINER_UNKNOWN',
          createdAt,
          labels: { a: 'b' },
          annotations: { x: 'y' },
          imageId: 'sha256:1',
        },
      ],
    }),
  ).finish();
  // An unknown field (number 99, a string) appended to the response must be skipped.
  const unknown = protobuf.Writer.create()
    .uint32((99 << 3) | 2)
    .string('future')
    .finish();
  const buf = Buffer.concat([bytes, unknown]);
  const def = protoLoader.loadSync(criProtoFile(), { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
  const generic = (def['runtime.v1.RuntimeService'] as protoLoader.ServiceDefinition).ListContainers!.responseDeserialize(buf) as {
    containers: T.Container[];
  };
  const [summary] = decodeContainerSummaries(buf);
  const { annotations: _a, image: _i, ...expected } = generic.containers[0]!;
  assert.deepEqual(summary, expected);
  assert.equal(summary!.createdAt, Number(createdAt));
  assert.deepEqual(decodePodSandboxSummaries(new Uint8Array()), []);
});

test(
  'SummaryDecoder: a record with the same bytes as in the last answer is the summary decoded then; a changed one is ' + 'decoded afresh',
  () => {
    const root = protobuf.loadSync(criProtoFile());
    const List = root.lookupType('runtime.v1.ListContainersResponse');
    const record = (id: string, state: string, labels: Record<string, string> = { 'io.kubernetes.pod.uid': `uid-${id}` }) => ({
      id,
      podSandboxId: `s-${id}`,
      metadata: { name: 'app', attempt: 0 },
      state,
      createdAt: 1,
      labels,
      annotations: { spec: 'x'.repeat(300) },
    });
    const answer = (records: ReturnType<typeof record>[]) => Buffer.from(List.encode(List.fromObject({ containers: records })).finish());
    const decoder = containerSummaryDecoder();
    const first = decoder.decode(
      answer([record('a', 'CONTAINER_RUNNING'), record('b', 'CONTAINER_RUNNING'), record('c', 'CONTAINER_RUNNING')]),
    );
    assert.equal(decoder.reused, 0);
    assert.deepEqual(
      first,
      decodeContainerSummaries(
        answer([record('a', 'CONTAINER_RUNNING'), record('b', 'CONTAINER_RUNNING'), record('c', 'CONTAINER_RUNNING')]),
      ),
    );

    // b exited, c's labels changed (same length), d is new, a is as it was.
    const second = decoder.decode(
      answer([
        record('a', 'CONTAINER_RUNNING'),
        record('b', 'CONTAINER_EXITED'),
        record('c', 'CONTAINER_RUNNING', { 'io.kubernetes.pod.uid': 'uid-C' }),
        record('d', 'CONTAINER_CREATED'),
      ]),
    );
    assert.equal(decoder.reused, 1);
    assert.equal(second[0], first[0], 'the unchanged record is the same object');
    assert.notEqual(second[1], first[1]);
    assert.equal(second[1]!.state, 'CONTAINER_EXITED');
    assert.equal(first[1]!.state, 'CONTAINER_RUNNING', 'an earlier summary is never modified');
    assert.deepEqual(second[2]!.labels, { 'io.kubernetes.pod.uid': 'uid-C' });
    assert.equal(second[3]!.state, 'CONTAINER_CREATED');

    // Only the last answer is remembered: a record absent from it is decoded again when it returns.
    decoder.decode(answer([record('b', 'CONTAINER_EXITED')]));
    assert.equal(decoder.reused, 1);
    const fourth = decoder.decode(answer([record('a', 'CONTAINER_RUNNING'), record('b', 'CONTAINER_EXITED')]));
    assert.equal(decoder.reused, 1);
    assert.notEqual(fourth[0], first[0]);
    assert.deepEqual(fourth[0], first[0]);

    // The decoder keeps copies of the records, not the answer: reusing the answer's memory (as a
    // freed buffer's would be) changes nothing of what the next answer is compared with.
    const fifth = answer([record('a', 'CONTAINER_RUNNING'), record('b', 'CONTAINER_EXITED')]);
    const decoded = decoder.decode(fifth);
    assert.equal(decoder.reused, 2);
    fifth.fill(0);
    const sixth = decoder.decode(answer([record('a', 'CONTAINER_RUNNING'), record('b', 'CONTAINER_EXITED')]));
    assert.equal(decoder.reused, 2);
    assert.equal(sixth[0], decoded[0]);
    assert.equal(sixth[1], decoded[1]);
  },
);
