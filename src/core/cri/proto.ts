import type * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs/minimal.js';
import pb from '../../generated/cri/cri-pb.js';
import { criMethods } from '../../generated/cri/cri-meta.js';
import { asBuffer } from './channel.js';

/** A message class of a static module (pbjs -t static-module), as podctl uses it. */
export interface StaticMessage {
  encode(message: object): protobuf.Writer;
  decode(reader: Uint8Array): object;
  fromObject(object: Record<string, unknown>): object;
  toObject(message: object, options?: protobuf.IConversionOptions): Record<string, unknown>;
}

/**
 * The CRI's gRPC service definitions, with the codecs of the static module protobufjs-cli
 * generates from proto/runtime/v1/api.proto at build time (scripts/gen-cri-types.mjs): no .proto
 * is parsed and no reflection is built when podctl runs. Messages convert as proto-loader's
 * options did (camelCase fields, enums as strings, 64-bit integers as numbers, defaults filled in,
 * oneof names set), so callers see the objects the generated types describe. The client
 * (client.ts) and the fake runtime's grpc-js server both call these.
 */
export interface CriServices {
  RuntimeService: grpc.ServiceDefinition;
  ImageService: grpc.ServiceDefinition;
}

/** Nanosecond timestamps exceed 2^53: as numbers, precision past that is dropped, as the kubelet's callers never need it. */
export const CONVERSION: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: true, oneofs: true };

/** A message class of the CRI's static module by full name (runtime.v1.PodSandbox). */
export function criType(fullName: string): StaticMessage {
  let at: unknown = pb;
  for (const part of fullName.split('.')) at = (at as Record<string, unknown> | undefined)?.[part];
  if (typeof at !== 'function') throw new Error(`no CRI message type ${fullName} in the generated module`);
  return at as unknown as StaticMessage;
}

let services: CriServices | undefined;

export function criServices(): CriServices {
  if (services) return services;
  const define = (name: 'RuntimeService' | 'ImageService'): grpc.ServiceDefinition => {
    const methods: Record<string, grpc.MethodDefinition<object, object>> = {};
    for (const [method, [request, response, requestStream, responseStream]] of Object.entries(criMethods[name]!)) {
      const req = criType(request);
      const res = criType(response);
      methods[method] = {
        path: `/runtime.v1.${name}/${method}`,
        requestStream,
        responseStream,
        requestSerialize: (value: object) => asBuffer(req.encode(req.fromObject(value as Record<string, unknown>)).finish()),
        requestDeserialize: (buf: Buffer) => req.toObject(req.decode(buf), CONVERSION),
        responseSerialize: (value: object) => asBuffer(res.encode(res.fromObject(value as Record<string, unknown>)).finish()),
        responseDeserialize: (buf: Buffer) => res.toObject(res.decode(buf), CONVERSION),
      };
    }
    return methods;
  };
  services = { RuntimeService: define('RuntimeService'), ImageService: define('ImageService') };
  return services;
}
