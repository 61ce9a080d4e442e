import type * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs/minimal.js';
import type { StaticType } from './codecs.js';
import { criMethods, criTypes } from './generated/codecs.js';

/**
 * The CRI's gRPC service definitions, from the static types compiled at build
 * time (scripts/gen-cri-types.mjs, codecs.ts): no .proto is parsed and no
 * reflection is built when podctl starts (@grpc/proto-loader spent 50 ms on the
 * first, protobufjs's Root from a JSON descriptor 10 to 20 ms on the second). Messages convert as
 * proto-loader's options did (camelCase fields, enums as strings, longs as
 * numbers, defaults filled in, oneof names set), so callers see the same objects.
 * The definitions are grpc-js's shape (the fake runtime serves them with grpc-js's
 * server); podctl's client calls them over its own transport (transport.ts), so only
 * the type is imported here.
 */
export interface CriServices {
  RuntimeService: grpc.ServiceDefinition;
  ImageService: grpc.ServiceDefinition;
}

const CONVERSION: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: true, oneofs: true };

let services: CriServices | undefined;

export function criServices(): CriServices {
  if (services) return services;
  const define = (name: 'RuntimeService' | 'ImageService'): grpc.ServiceDefinition => {
    const methods: Record<string, grpc.MethodDefinition<object, object>> = {};
    for (const [method, [request, response, requestStream, responseStream]] of Object.entries(criMethods[name]!)) {
      const req = criTypes[request] as StaticType;
      const res = criTypes[response] as StaticType;
      methods[method] = {
        path: `/runtime.v1.${name}/${method}`,
        requestStream,
        responseStream,
        requestSerialize: (value: object) => Buffer.from(req.encode(req.fromObject(value as Record<string, unknown>)).finish()),
        requestDeserialize: (buf: Buffer) => req.toObject(req.decode(buf), CONVERSION),
        responseSerialize: (value: object) => Buffer.from(res.encode(res.fromObject(value as Record<string, unknown>)).finish()),
        responseDeserialize: (buf: Buffer) => res.toObject(res.decode(buf), CONVERSION),
      };
    }
    return methods;
  };
  services = { RuntimeService: define('RuntimeService'), ImageService: define('ImageService') };
  return services;
}
