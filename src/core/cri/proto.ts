import type * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs/light.js';
import { criDescriptor } from './generated/descriptor.js';
import { criCodecs } from './generated/codecs.js';
import { rootWithPrebuiltCodecs } from './codecs.js';

/**
 * The CRI's gRPC service definitions, built from the descriptor compiled at
 * build time (scripts/gen-cri-types.mjs) with protobufjs/light: no .proto is
 * parsed and no descriptor protos are made when podctl starts, which is what
 * @grpc/proto-loader spends most of its 50 ms on. Messages convert as
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
  // Root.fromJSON, with each message type's functions compiled at build time instead of generated at run
  // time (constructors, encoders, decoders, converters: 30 to 60 ms of a command's first calls).
  const root = rootWithPrebuiltCodecs(criDescriptor, criCodecs);
  const define = (name: string): grpc.ServiceDefinition => {
    const service = root.lookupService(`runtime.v1.${name}`);
    const methods: Record<string, grpc.MethodDefinition<object, object>> = {};
    for (const method of service.methodsArray) {
      method.resolve();
      const req = method.resolvedRequestType!;
      const res = method.resolvedResponseType!;
      methods[method.name] = {
        path: `/runtime.v1.${name}/${method.name}`,
        requestStream: !!method.requestStream,
        responseStream: !!method.responseStream,
        requestSerialize: (value: object) => Buffer.from(req.encode(req.fromObject(value)).finish()),
        requestDeserialize: (buf: Buffer) => req.toObject(req.decode(buf), CONVERSION),
        responseSerialize: (value: object) => Buffer.from(res.encode(res.fromObject(value)).finish()),
        responseDeserialize: (buf: Buffer) => res.toObject(res.decode(buf), CONVERSION),
      };
    }
    return methods;
  };
  services = { RuntimeService: define('RuntimeService'), ImageService: define('ImageService') };
  return services;
}
