/**
 * /openapi/v2: the node's OpenAPI v2 document, as JSON or, as client-go's discovery always asks for it, as
 * gnostic's protobuf Document (proto/openapi-v2.proto). kubectl falls back to it to validate a kind whose
 * group-version the v3 documents lack (a Deployment, a Service): the kind is then not in it either, so kubectl
 * skips validating it and reports the kind as unknown for that document alone, as against a cluster without it,
 * instead of failing the whole apply.
 */
import { createHash } from 'node:crypto';
import type { Root, Type } from 'protobufjs';
import v2Root from '../../../generated/kube/openapi-v2-pb.js';
import { openapiV2Document, type Schema, type V2Operation, type V2Parameter } from './index.js';

/** What client-go sends in Accept for /openapi/v2, and the Content-Type the API server answers it with. */
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
export const OPENAPI_V2_PROTOBUF_CONTENT_TYPE = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

type Message = Record<string, unknown>;
/** An extension's value as gnostic carries it: YAML text, here its JSON. */
const extensions = (o: object): Message[] =>
  Object.entries(o)
    .filter(([k]) => k.startsWith('x-'))
    .map(([name, value]) => ({ name, value: { yaml: JSON.stringify(value) } }));

function schemaMessage(s: Schema): Message {
  const m: Message = {};
  if (s.$ref) m.ref = s.$ref;
  if (s.format) m.format = s.format;
  if (s.required?.length) m.required = s.required;
  if (s.enum?.length) m.enum = s.enum.map((v) => ({ yaml: JSON.stringify(v) }));
  if (s.additionalProperties !== undefined)
    m.additionalProperties =
      typeof s.additionalProperties === 'boolean' ? { boolean: s.additionalProperties } : { schema: schemaMessage(s.additionalProperties) };
  if (s.type) m.type = { value: [s.type] };
  if (s.items) m.items = { schema: [schemaMessage(s.items)] };
  if (s.allOf?.length) m.allOf = s.allOf.map(schemaMessage);
  if (s.properties)
    m.properties = { additionalProperties: Object.entries(s.properties).map(([name, v]) => ({ name, value: schemaMessage(v) })) };
  const ext = extensions(s);
  if (ext.length) m.vendorExtension = ext;
  return m;
}

function parameterMessage(p: V2Parameter): Message {
  if (p.in === 'body')
    return {
      parameter: { bodyParameter: { name: p.name, in: p.in, required: !!p.required, schema: p.schema && schemaMessage(p.schema) } },
    };
  const sub = { required: !!p.required, in: p.in, name: p.name, type: p.type ?? '', uniqueItems: !!p.uniqueItems };
  return { parameter: { nonBodyParameter: p.in === 'path' ? { pathParameterSubSchema: sub } : { queryParameterSubSchema: sub } } };
}

function operationMessage(op: V2Operation): Message {
  return {
    tags: op.tags,
    operationId: op.operationId,
    produces: op.produces,
    consumes: op.consumes,
    parameters: (op.parameters ?? []).map(parameterMessage),
    responses: {
      responseCode: Object.entries(op.responses).map(([name, r]) => ({
        name,
        value: { response: { description: r.description, ...(r.schema ? { schema: { schema: schemaMessage(r.schema) } } : {}) } },
      })),
    },
    vendorExtension: extensions(op),
  };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** The document as gnostic's Document message, in protobufjs's object form. */
export function openapiV2Message(): Message {
  const doc = openapiV2Document();
  const path = Object.entries(doc.paths).map(([name, item]) => {
    const value: Message = {};
    for (const method of METHODS) if (item[method]) value[method] = operationMessage(item[method] as V2Operation);
    if (item.parameters) value.parameters = (item.parameters as V2Parameter[]).map(parameterMessage);
    return { name, value };
  });
  return {
    swagger: doc.swagger,
    info: doc.info,
    paths: { path },
    definitions: { additionalProperties: Object.entries(doc.definitions).map(([name, s]) => ({ name, value: schemaMessage(s) })) },
  };
}

export function documentType(): Type {
  const root = v2Root as unknown as Root;
  return root.lookupType('openapiv2.Document');
}

export interface ServedV2 {
  body: Buffer;
  contentType: string;
  etag: string;
}

const served = new Map<'json' | 'protobuf', ServedV2>();

function serve(body: Buffer, contentType: string): ServedV2 {
  return { body, contentType, etag: JSON.stringify(createHash('sha512').update(body).digest('hex').toUpperCase()) };
}

/** The bytes of /openapi/v2 for this Accept header: protobuf when it names gnostic's type, else JSON. Made once each. */
export function openapiV2Served(accept: string): ServedV2 {
  const form = accept.includes('com.github.proto-openapi.spec.v2') ? 'protobuf' : 'json';
  let doc = served.get(form);
  if (!doc) {
    if (form === 'protobuf') {
      const type = documentType();
      doc = serve(Buffer.from(type.encode(type.fromObject(openapiV2Message())).finish()), OPENAPI_V2_PROTOBUF_CONTENT_TYPE);
    } else doc = serve(Buffer.from(JSON.stringify(openapiV2Document())), 'application/json');
    served.set(form, doc);
  }
  return doc;
}
