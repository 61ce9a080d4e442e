// Generates, from the hand-written protos in proto/:
// - TypeScript types of the CRI's messages, with @grpc/proto-loader's generator (the .js extensions
//   Node's ESM resolution needs added to its relative imports);
// - the messages' codecs, with protobufjs-cli's static module (pbjs -t static-module): one module for the
//   CRI (runtime/v1/api.proto), one for containerd's event service (proto/containerd) and one for
//   gRPC's health service (grpc probes);
// - each CRI service's methods, and the field numbers the relist's summary decoder reads
//   (src/core/cri/summaries.ts), read from the .proto with protobufjs.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'src/core/cri/generated');
const CRI_PROTO = 'runtime/v1/api.proto';
const CONTAINERD_PROTO = 'containerd/events-service.proto';
rmSync(out, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [
    join(root, 'node_modules/@grpc/proto-loader/build/bin/proto-loader-gen-types.js'),
    '--longs=Number',
    '--enums=String',
    '--defaults',
    '--oneofs',
    '--grpcLib=@grpc/grpc-js',
    '-I',
    join(root, 'proto'),
    '-O',
    out,
    CRI_PROTO,
  ],
  { stdio: 'inherit' },
);

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (statSync(file).isDirectory()) walk(file);
    else if (file.endsWith('.ts')) {
      const text = readFileSync(file, 'utf8').replace(/(from '\.{1,2}\/[^']+?)(?<!\.js)'/g, "$1.js'");
      writeFileSync(file, text);
    }
  }
}
walk(out);

// The static modules: a .ts file each (checked by nothing: @ts-nocheck from the wrapper), so that tsc
// and the bundle take them as the rest of src. The service classes are left out: grpc-js calls the methods.
const pbjs = join(root, 'node_modules/protobufjs-cli/bin/pbjs');
const staticModule = (proto, rootName, file) =>
  execFileSync(
    process.execPath,
    [
      pbjs,
      '-t',
      'static-module',
      '-w',
      join(root, 'scripts/pbjs-esm.wrapper'),
      '--es6',
      '--dependency',
      'protobufjs/minimal.js',
      '--lint',
      '',
      '-r',
      rootName,
      '--no-comments',
      '--no-create',
      '--no-verify',
      '--no-delimited',
      '--no-typeurl',
      '--no-service',
      '-p',
      join(root, 'proto'),
      '-o',
      join(out, file),
      join(root, 'proto', proto),
    ],
    { stdio: 'inherit' },
  );
staticModule(CRI_PROTO, 'cri', 'cri-pb.ts');
staticModule(CONTAINERD_PROTO, 'containerd', 'containerd-pb.ts');
// gRPC's health service, for grpc probes (src/core/prober/handlers.ts).
staticModule('grpc/health/v1/health.proto', 'health', 'health-pb.ts');

const cri = protobuf.loadSync(join(root, 'proto', CRI_PROTO));
cri.resolveAll();
const name = (t) => t.fullName.slice(1);

// Each service's methods: [request type, response type, client streaming, server streaming].
const services = {};
for (const s of cri.lookup('runtime.v1').nestedArray.filter((x) => x instanceof protobuf.Service)) {
  services[s.name] = Object.fromEntries(
    s.methodsArray.map((m) => [m.name, [name(m.resolvedRequestType), name(m.resolvedResponseType), !!m.requestStream, !!m.responseStream]]),
  );
}

// The fields a relist reads, by message: each one's number and protobuf type, checked against what the decoder expects.
const SUMMARY_FIELDS = {
  PodSandbox: {
    id: 'string',
    metadata: 'PodSandboxMetadata',
    state: 'PodSandboxState',
    createdAt: 'int64',
    labels: 'map',
    runtimeHandler: 'string',
  },
  PodSandboxMetadata: { name: 'string', uid: 'string', namespace: 'string', attempt: 'uint32' },
  Container: {
    id: 'string',
    podSandboxId: 'string',
    metadata: 'ContainerMetadata',
    imageRef: 'string',
    state: 'ContainerState',
    createdAt: 'int64',
    labels: 'map',
    imageId: 'string',
  },
  ContainerMetadata: { name: 'string', attempt: 'uint32' },
};
const summaryFields = {};
for (const [message, fields] of Object.entries(SUMMARY_FIELDS)) {
  const type = cri.lookupType(`runtime.v1.${message}`);
  summaryFields[message] = {};
  for (const [field, expected] of Object.entries(fields)) {
    const f = type.fields[field];
    const actual = f ? (f.map ? 'map' : f.type) : undefined;
    if (actual !== expected)
      throw new Error(
        `${CRI_PROTO}: ${message}.${field} is ${actual ?? 'missing'}; the summary decoder (src/core/cri/summaries.ts) reads it as ${expected}`,
      );
    if (f.map && (f.keyType !== 'string' || f.type !== 'string'))
      throw new Error(`${CRI_PROTO}: ${message}.${field} is not a map<string, string>`);
    summaryFields[message][field] = f.id;
  }
}
// The list responses' repeated field.
for (const [response, field] of [
  ['ListPodSandboxResponse', 'items'],
  ['ListContainersResponse', 'containers'],
]) {
  summaryFields[response] = { [field]: cri.lookupType(`runtime.v1.${response}`).fields[field].id };
}
// Enum names by number.
const enumNames = (e) => {
  const values = cri.lookupEnum(`runtime.v1.${e}`).values;
  const names = [];
  for (const [n, v] of Object.entries(values)) names[v] = n;
  return names;
};

writeFileSync(
  join(out, 'cri-meta.ts'),
  `// Generated by scripts/gen-cri-types.mjs from proto/${CRI_PROTO}: do not edit.\n\n` +
    `/** Each service's methods: request type, response type, client streaming, server streaming. */\n` +
    `export const criMethods: Record<string, Record<string, [string, string, boolean, boolean]>> = ${JSON.stringify(services, null, 2)};\n\n` +
    `/** Field numbers of what the relist's summary decoder reads (src/core/cri/summaries.ts). */\n` +
    `export const summaryFields = ${JSON.stringify(summaryFields, null, 2)} as const;\n\n` +
    `export const podSandboxStates = ${JSON.stringify(enumNames('PodSandboxState'))} as const;\n` +
    `export const containerStates = ${JSON.stringify(enumNames('ContainerState'))} as const;\n`,
);
