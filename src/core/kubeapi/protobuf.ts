import kubePb from '../../generated/kube/kube-pb.js';
import { KubeStatusError, badRequest } from './status.js';

/** client-go's typed clients send their bodies so (kubectl create configmap|secret|namespace); answers stay JSON. */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

/** The serializer's prefix: 'k8s' and the encoding style, 0 for a runtime.Unknown after it. */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type Json = Record<string, unknown>;

interface Codec {
  decode(reader: Uint8Array): object;
  toObject(message: object, options: object): Json;
}

/** The static module's message classes (pbjs -t static-module of proto/kube-core.proto, typed as a Root). */
const pb = (kubePb as unknown as { kube: Record<'Unknown' | 'ConfigMap' | 'Secret' | 'Namespace' | 'DeleteOptions', Codec> }).kube;

/** The options the shaping below expects: present fields only, 64-bit integers as numbers, bytes as base64. */
const PRESENT = { longs: Number, bytes: String, defaults: false, arrays: false, objects: false };

/** The kinds whose message is decoded here, each with its JSON form. */
const DECODERS: Record<string, { codec: Codec; json: (m: Json) => Json }> = {
  ConfigMap: { codec: pb.ConfigMap, json: configMapJSON },
  Secret: { codec: pb.Secret, json: secretJSON },
  Namespace: { codec: pb.Namespace, json: namespaceJSON },
  DeleteOptions: { codec: pb.DeleteOptions, json: deleteOptionsJSON },
};

export interface KubeProtobufObject {
  apiVersion: string;
  kind: string;
  /** The object as its JSON form: apiVersion and kind first, bytes in base64, times in RFC 3339, unset fields absent. */
  object: Record<string, unknown>;
}

/**
 * A protobuf request body (the 'k8s\0' magic, then a runtime.Unknown carrying the object's own
 * message) as the object's JSON, which the handlers take as they take a JSON body. `into` is what
 * the endpoint decodes into: its kind and version stand in for the envelope's missing ones and name
 * it in the API server's errors (400 for a body that is not one; 415 for a kind not decoded here).
 */
export function decodeKubeProtobuf(body: Buffer, into?: { apiVersion: string; kind: string }): KubeProtobufObject {
  const unrecognized = (why: string) =>
    badRequest(`the object provided is unrecognized (must be of type ${into?.kind ?? 'a known kind'}): ${why} (${summarize(body)})`);
  if (body.length === 0) throw unrecognized('empty data');
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC))
    throw unrecognized(`provided data does not appear to be a protobuf message, expected prefix [${[...MAGIC].join(' ')}]`);
  if (body.length === MAGIC.length) throw unrecognized('empty body');
  let unknown: { typeMeta?: { apiVersion?: string; kind?: string }; raw?: string | Uint8Array };
  try {
    unknown = pb.Unknown.decode(body.subarray(MAGIC.length)) as typeof unknown;
  } catch (err) {
    throw unrecognized(`the runtime.Unknown envelope does not decode: ${(err as Error).message}`);
  }
  const kind = unknown.typeMeta?.kind || into?.kind || '';
  const apiVersion = unknown.typeMeta?.apiVersion || into?.apiVersion || '';
  if (!kind) throw unrecognized(`Object 'Kind' is missing in the envelope's typeMeta`);
  if (!apiVersion) throw unrecognized(`Object 'apiVersion' is missing in the envelope's typeMeta`);
  const decoder = DECODERS[kind];
  if (!decoder) {
    // The endpoint's own kind undecodable here (a Pod): the media type is what is not supported.
    if (!into || !DECODERS[into.kind])
      throw new KubeStatusError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json ` +
          `(${PROTOBUF_CONTENT_TYPE} only for ${Object.keys(DECODERS).join(', ')}; this body is a ${kind})`,
      );
    throw badRequest(
      `${kind} in version ${JSON.stringify(apiVersion)} cannot be handled as a ${into.kind}: ` +
        `no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)}`,
    );
  }
  let message: Json;
  try {
    const raw = unknown.raw ?? new Uint8Array();
    message = decoder.codec.toObject(decoder.codec.decode(typeof raw === 'string' ? Buffer.from(raw, 'base64') : raw), PRESENT);
  } catch (err) {
    throw badRequest(
      `${kind} in version ${JSON.stringify(apiVersion)} cannot be handled as a ${into?.kind ?? kind}: ${(err as Error).message}`,
    );
  }
  return { apiVersion, kind, object: { apiVersion, kind, ...decoder.json(message) } };
}

/** The API server's summary of a body it could not decode: its first 30 bytes in hex. */
function summarize(body: Buffer): string {
  if (body.length === 0) return '<empty>';
  return body.length > 30 ? `${body.subarray(0, 30).toString('hex')} ...` : body.toString('hex');
}

/** Drops what JSON's omitempty drops (undefined, empty strings, 0, false, empty maps and lists), except in `keep`. */
function compact(o: Json, keep: string[] = []): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || v === null) continue;
    if (!keep.includes(k)) {
      if (v === '' || v === 0 || v === false) continue;
      if (Array.isArray(v) ? v.length === 0 : typeof v === 'object' && Object.keys(v).length === 0) continue;
    }
    out[k] = v;
  }
  return out;
}

/** Go's zero time (0001-01-01T00:00:00Z) in Unix seconds. */
const GO_ZERO_SECONDS = -62135596800;

/** metav1.Time: RFC 3339 to the second, in UTC; the zero Time (an empty message) is absent, as JSON has it null. */
function timeJSON(t: Json | undefined): string | undefined {
  const seconds = Number(t?.seconds ?? 0);
  const nanos = Number(t?.nanos ?? 0);
  if ((!seconds || seconds === GO_ZERO_SECONDS) && !nanos) return undefined;
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function objectMetaJSON(m: Json | undefined): Json | undefined {
  if (!m) return undefined;
  const owners = (m.ownerReferences as Json[] | undefined)?.map((r) =>
    compact({ apiVersion: r.apiVersion ?? '', kind: r.kind ?? '', name: r.name ?? '', uid: r.uid ?? '', ...r }, [
      'apiVersion',
      'kind',
      'name',
      'uid',
      'controller',
      'blockOwnerDeletion',
    ]),
  );
  const managed = (m.managedFields as Json[] | undefined)?.map((e) => {
    const raw = (e.fieldsV1 as Json | undefined)?.Raw;
    let fieldsV1: unknown;
    if (typeof raw === 'string' && raw) {
      try {
        fieldsV1 = JSON.parse(Buffer.from(raw, 'base64').toString('utf8'));
      } catch {
        throw badRequest('metadata.managedFields: fieldsV1 is not JSON');
      }
    }
    return compact({ ...e, time: timeJSON(e.time as Json | undefined), fieldsV1 });
  });
  return compact(
    {
      ...m,
      creationTimestamp: timeJSON(m.creationTimestamp as Json | undefined),
      deletionTimestamp: timeJSON(m.deletionTimestamp as Json | undefined),
      ownerReferences: owners,
      managedFields: managed,
    },
    ['deletionGracePeriodSeconds'],
  );
}

function configMapJSON(m: Json): Json {
  return compact(
    { metadata: objectMetaJSON(m.metadata as Json | undefined), data: m.data, binaryData: m.binaryData, immutable: m.immutable },
    ['immutable'],
  );
}

function secretJSON(m: Json): Json {
  return compact(
    {
      metadata: objectMetaJSON(m.metadata as Json | undefined),
      immutable: m.immutable,
      data: m.data,
      stringData: m.stringData,
      type: m.type,
    },
    ['immutable'],
  );
}

function namespaceJSON(m: Json): Json {
  const spec = m.spec as Json | undefined;
  return compact({ metadata: objectMetaJSON(m.metadata as Json | undefined), spec: spec && compact({ finalizers: spec.finalizers }) });
}

function deleteOptionsJSON(m: Json): Json {
  const pre = m.preconditions as Json | undefined;
  return compact(
    {
      gracePeriodSeconds: m.gracePeriodSeconds,
      preconditions: pre && compact(pre, ['uid', 'resourceVersion']),
      orphanDependents: m.orphanDependents,
      propagationPolicy: m.propagationPolicy,
      dryRun: m.dryRun,
      ignoreStoreReadErrorWithClusterBreakingPotential: m.ignoreStoreReadErrorWithClusterBreakingPotential,
    },
    ['gracePeriodSeconds', 'orphanDependents', 'propagationPolicy', 'ignoreStoreReadErrorWithClusterBreakingPotential'],
  );
}
