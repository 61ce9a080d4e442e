import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs/light.js';
import type { MethodDefinition } from '@grpc/grpc-js';
import { criServices } from '../../src/core/cri/proto.js';
import { criDescriptor } from '../../src/core/cri/generated/descriptor.js';
import { criMethods, criTypes } from '../../src/core/cri/generated/codecs.js';
import type { StaticEnum, StaticType } from '../../src/core/cri/codecs.js';

// cri-proto.test.ts checks that the messages mean what the .proto means (bytes and objects); this, that
// no process generates their code or builds protobufjs's reflection at run time.

const reflected = () => {
  const root = protobuf.Root.fromJSON(criDescriptor);
  root.resolveAll();
  const types: protobuf.Type[] = [];
  const enums: protobuf.Enum[] = [];
  const services: protobuf.Service[] = [];
  const walk = (ns: protobuf.NamespaceBase) =>
    ns.nestedArray.forEach((x) => {
      if (x instanceof protobuf.Type) types.push(x);
      else if (x instanceof protobuf.Enum) enums.push(x);
      else if (x instanceof protobuf.Service) services.push(x);
      if (x instanceof protobuf.Namespace) walk(x);
    });
  walk(root);
  return { types, enums, services };
};

test('a message type is set up when it is first used, with the types of its fields it reaches; the others are not', () => {
  const type = (name: string) => criTypes[name] as StaticType;
  // The first test of this file: nothing in this process used these before.
  assert.equal(type('runtime.v1.ListImagesResponse').setUp, false);
  assert.equal(type('runtime.v1.Image').setUp, false);
  assert.equal(type('runtime.v1.PodSandboxStatsResponse').setUp, false);
  const t = type('runtime.v1.ListImagesResponse');
  const bytes = t.encode(t.fromObject({ images: [{ id: 'sha256:1', repoTags: ['busybox:1.36'], size: 42, pinned: true }] })).finish();
  assert.deepEqual(t.toObject(t.decode(bytes), { longs: Number }), { images: [{ id: 'sha256:1', repoTags: ['busybox:1.36'], size: 42, pinned: true }] });
  assert.equal(type('runtime.v1.ListImagesResponse').setUp, true, 'used, and set up');
  assert.equal(type('runtime.v1.Image').setUp, true, 'with the type of its field that was used');
  assert.equal(type('runtime.v1.PodSandboxStatsResponse').setUp, false, 'a type never used stays as it was');
});

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

test('every message and enum type of the descriptor is there, with the functions protobufjs generates from it and the types of its fields', () => {
  const { types, enums, services } = reflected();
  assert.equal(Object.keys(criTypes).length, types.length + enums.length);
  // As source, once the compiler has printed it again: without spaces and semicolons.
  const bare = (text: string) => text.replace(/[\s;]/g, '');
  for (const t of types) {
    const ours = criTypes[t.fullName.slice(1)] as StaticType;
    assert.ok(ours, t.fullName);
    const source = bare(`${ours.prebuilt.ctor.toString()}${ours.prebuilt.codecs.toString()}`);
    const generators = [(protobuf.Type as unknown as { generateConstructor(t: protobuf.Type): object }).generateConstructor(t), protobuf.encoder(t), protobuf.decoder(t), protobuf.converter.fromObject(t), protobuf.converter.toObject(t)];
    for (const gen of generators) assert.ok(source.includes(bare(gen.toString())), t.fullName);
  }
  for (const e of enums) {
    const ours = criTypes[e.fullName.slice(1)] as StaticEnum;
    for (const [name, n] of Object.entries(e.values)) {
      assert.equal(ours.values[name], n, `${e.fullName}.${name}`);
      assert.equal(ours.values[n], e.valuesById[n], `${e.fullName} ${n}`);
    }
  }
  // The services' methods, with their request and response types.
  for (const s of services) {
    const ours = criMethods[s.name]!;
    assert.deepEqual(Object.keys(ours).sort(), s.methodsArray.map((m) => m.name).sort(), s.name);
    for (const m of s.methodsArray) {
      m.resolve();
      assert.deepEqual(ours[m.name], [m.resolvedRequestType!.fullName.slice(1), m.resolvedResponseType!.fullName.slice(1), !!m.requestStream, !!m.responseStream], `${s.name}.${m.name}`);
    }
  }
});
