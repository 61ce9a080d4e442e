import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs/light.js';
import type { MethodDefinition } from '@grpc/grpc-js';
import { criServices } from '../../src/core/cri/proto.js';
import { criDescriptor } from '../../src/core/cri/generated/descriptor.js';
import { criCodecs } from '../../src/core/cri/generated/codecs.js';
import { rootWithPrebuiltCodecs, usePrebuiltCodecs } from '../../src/core/cri/codecs.js';

// cri-proto.test.ts checks that the messages mean what the .proto means (bytes and objects); this, that
// no process generates their code at run time: protobufjs's code generation is never called.

test('the CRI message types use the functions compiled at build time: protobufjs generates none when they are used', () => {
  const util = protobuf.util as unknown as { codegen: (...args: unknown[]) => unknown };
  const codegen = util.codegen;
  let generated = 0;
  util.codegen = Object.assign((...args: unknown[]) => (generated++, codegen(...args)), codegen);
  try {
    const sample = { podSandboxId: 'sb', config: { metadata: { name: 'app', attempt: 1 }, image: { image: 'busybox' }, envs: [{ key: 'A', value: 'b' }], linux: { resources: { cpuShares: 2 } } } };
    for (const service of Object.values(criServices())) {
      for (const [name, m] of Object.entries(service as Record<string, MethodDefinition<object, object>>)) {
        assert.ok(m.requestDeserialize(m.requestSerialize(sample)), name);
        assert.ok(m.responseDeserialize(m.responseSerialize({})), name);
      }
    }
    assert.equal(generated, 0, 'no code generated at run time');
    // The same descriptor set up by protobufjs itself does generate it (the counter sees that).
    protobuf.Root.fromJSON(criDescriptor).lookupType('runtime.v1.VersionRequest').encode({ version: 'x' });
    assert.ok(generated > 0);
  } finally {
    util.codegen = codegen;
  }
});

test('every message type of the descriptor has its prebuilt functions, the same protobufjs generates from it', () => {
  const root = protobuf.Root.fromJSON(criDescriptor);
  const types: protobuf.Type[] = [];
  const walk = (ns: protobuf.NamespaceBase) => ns.nestedArray.forEach((x) => (x instanceof protobuf.Type && types.push(x), x instanceof protobuf.Namespace && walk(x)));
  walk(root);
  assert.equal(usePrebuiltCodecs(protobuf.Root.fromJSON(criDescriptor), criCodecs), types.length);
  root.resolveAll();
  for (const t of types) {
    // As source, once the compiler has printed it again: without spaces and semicolons.
    const bare = (text: string) => text.replace(/[\s;]/g, '');
    const prebuilt = criCodecs[t.fullName.slice(1)]!;
    const source = bare(`${prebuilt.ctor.toString()}${prebuilt.codecs.toString()}`);
    const generators = [(protobuf.Type as unknown as { generateConstructor(t: protobuf.Type): object }).generateConstructor(t), protobuf.encoder(t), protobuf.decoder(t), protobuf.converter.fromObject(t), protobuf.converter.toObject(t)];
    for (const gen of generators) assert.ok(source.includes(bare(gen.toString())), t.fullName);
  }
});

test('the root resolves a message type when it is first used, not every type when it is built', () => {
  const root = rootWithPrebuiltCodecs(criDescriptor, criCodecs);
  const resolved = (name: string) => root.lookupType(name).fieldsArray.every((f) => f.resolved);
  assert.equal(resolved('runtime.v1.ListContainersResponse'), false);
  assert.equal(resolved('runtime.v1.PodSandboxStatusResponse'), false);
  const t = root.lookupType('runtime.v1.ListContainersResponse');
  const bytes = t.encode(t.fromObject({ containers: [{ id: 'c1', labels: { a: 'b' }, state: 'CONTAINER_RUNNING' }] })).finish();
  assert.deepEqual(t.toObject(t.decode(bytes), { enums: String }), { containers: [{ id: 'c1', labels: { a: 'b' }, state: 'CONTAINER_RUNNING' }] });
  assert.equal(resolved('runtime.v1.ListContainersResponse'), true, 'used, and resolved');
  assert.equal(resolved('runtime.v1.Container'), true, 'with the types of its fields that were used');
  assert.equal(resolved('runtime.v1.PodSandboxStatusResponse'), false, 'a type never used stays as it was');
});
