import protobuf from 'protobufjs/light.js';
import type { Root, Type } from 'protobufjs';
import kubeRoot from '../../generated/kube/kube-pb.js';
import { KubeStatusError, badRequest } from './status.js';

/** client-go's typed clients send their bodies so (kubectl create configmap|secret|namespace, kubectl debug); answers stay JSON. */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

/** The serializer's prefix: 'k8s' and the encoding style, 0 for a runtime.Unknown after it. */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type Json = Record<string, unknown>;

/** pbjs -t json-module of proto/kube-core.proto: the messages with their reflection, which the JSON shaping walks. */
const root = kubeRoot as unknown as Root;
let resolved = false;
/** A message's type, every field's type resolved (protobufjs resolves lazily; the walks read resolvedType). */
function typeOf(name: string): Type {
  if (!resolved) {
    root.resolveAll();
    resolved = true;
  }
  return root.lookupType(`kube.${name}`);
}

/** The kinds whose message is decoded here. */
const DECODED = ['ConfigMap', 'Secret', 'Namespace', 'Pod', 'DeleteOptions'];

/** What protobufjs's toObject gives before the shaping: present fields only, 64-bit integers as numbers, bytes as base64. */
const PRESENT = { longs: Number, bytes: String, defaults: false, arrays: false, objects: false };

/** Go's embedded structs: a message field whose own fields are its parent's in JSON. */
export const INLINE_FIELDS = new Set([
  'Probe.handler',
  'Volume.volumeSource',
  'EphemeralContainer.ephemeralContainerCommon',
  'VolumeMountStatus.volumeStatus',
  ...['ConfigMapEnvSource', 'ConfigMapKeySelector', 'ConfigMapProjection', 'ConfigMapVolumeSource'].map((m) => `${m}.localObjectReference`),
  ...['SecretEnvSource', 'SecretKeySelector', 'SecretProjection'].map((m) => `${m}.localObjectReference`),
]);

/**
 * The scalar fields whose zero value Go's JSON writes, by message: pointers, where a zero is a value
 * set (runAsUser 0 is root, allowPrivilegeEscalation false is a refusal), and fields without
 * omitempty. Every other zero scalar is one gogo wrote for a field Go cannot leave out, and JSON drops it.
 */
export const ZERO_KEPT: Record<string, string[]> = {
  ObjectMeta: ['deletionGracePeriodSeconds'],
  OwnerReference: ['apiVersion', 'kind', 'name', 'uid', 'controller', 'blockOwnerDeletion'],
  Preconditions: ['uid', 'resourceVersion'],
  DeleteOptions: ['gracePeriodSeconds', 'orphanDependents', 'propagationPolicy', 'ignoreStoreReadErrorWithClusterBreakingPotential'],
  LabelSelectorRequirement: ['key', 'operator'],
  AWSElasticBlockStoreVolumeSource: ['volumeID'],
  AppArmorProfile: ['type', 'localhostProfile'],
  AzureDiskVolumeSource: ['diskName', 'diskURI', 'cachingMode', 'fsType', 'readOnly', 'kind'],
  AzureFileVolumeSource: ['secretName', 'shareName'],
  CSIVolumeSource: ['driver', 'readOnly', 'fsType'],
  CinderVolumeSource: ['volumeID'],
  ClusterTrustBundleProjection: ['name', 'signerName', 'optional', 'path'],
  ConfigMap: ['immutable'],
  ConfigMapEnvSource: ['optional'],
  ConfigMapKeySelector: ['key', 'optional'],
  ConfigMapProjection: ['optional'],
  ConfigMapVolumeSource: ['defaultMode', 'optional'],
  Container: ['name', 'restartPolicy'],
  ContainerExtendedResourceRequest: ['containerName', 'resourceName', 'requestName'],
  ContainerPort: ['containerPort'],
  ContainerResizePolicy: ['resourceName', 'restartPolicy'],
  ContainerStateTerminated: ['exitCode'],
  ContainerStatus: ['name', 'ready', 'restartCount', 'image', 'imageID', 'started', 'stopSignal'],
  DownwardAPIVolumeFile: ['path', 'mode'],
  DownwardAPIVolumeSource: ['defaultMode'],
  EnvVar: ['name'],
  EphemeralContainerCommon: ['name', 'restartPolicy'],
  FCVolumeSource: ['lun'],
  FileKeySelector: ['volumeName', 'path', 'key', 'optional'],
  FlexVolumeSource: ['driver'],
  GCEPersistentDiskVolumeSource: ['pdName'],
  GRPCAction: ['port', 'service'],
  GitRepoVolumeSource: ['repository'],
  GlusterfsVolumeSource: ['endpoints', 'path'],
  HTTPHeader: ['name', 'value'],
  HostAlias: ['ip'],
  HostIP: ['ip'],
  HostPathVolumeSource: ['path', 'type'],
  ISCSIVolumeSource: ['targetPortal', 'iqn', 'lun', 'initiatorName'],
  KeyToPath: ['key', 'path', 'mode'],
  Lifecycle: ['stopSignal'],
  LinuxContainerUser: ['uid', 'gid'],
  NFSVolumeSource: ['server', 'path'],
  NamespaceCondition: ['type', 'status'],
  NodeSelectorRequirement: ['key', 'operator'],
  ObjectFieldSelector: ['fieldPath'],
  PersistentVolumeClaimSpec: ['storageClassName', 'volumeMode', 'volumeAttributesClassName'],
  PersistentVolumeClaimVolumeSource: ['claimName'],
  PhotonPersistentDiskVolumeSource: ['pdID'],
  PodAffinityTerm: ['topologyKey'],
  PodCertificateProjection: ['maxExpirationSeconds'],
  PodCondition: ['type', 'status'],
  PodDNSConfigOption: ['value'],
  PodExtendedResourceClaimStatus: ['resourceClaimName'],
  PodIP: ['ip'],
  PodOS: ['name'],
  PodReadinessGate: ['conditionType'],
  PodResourceClaim: ['name', 'resourceClaimName', 'resourceClaimTemplateName'],
  PodResourceClaimStatus: ['name', 'resourceClaimName'],
  PodSchedulingGate: ['name'],
  PodSecurityContext: [
    'runAsUser',
    'runAsGroup',
    'runAsNonRoot',
    'supplementalGroupsPolicy',
    'fsGroup',
    'fsGroupChangePolicy',
    'seLinuxChangePolicy',
  ],
  PodSpec: [
    'terminationGracePeriodSeconds',
    'activeDeadlineSeconds',
    'automountServiceAccountToken',
    'shareProcessNamespace',
    'priority',
    'runtimeClassName',
    'enableServiceLinks',
    'preemptionPolicy',
    'setHostnameAsFQDN',
    'hostUsers',
    'hostnameOverride',
  ],
  PortworxVolumeSource: ['volumeID'],
  PreferredSchedulingTerm: ['weight'],
  Probe: ['terminationGracePeriodSeconds'],
  ProjectedVolumeSource: ['defaultMode'],
  QuobyteVolumeSource: ['registry', 'volume'],
  RBDVolumeSource: ['image'],
  ResourceClaim: ['name'],
  ResourceFieldSelector: ['resource'],
  ResourceHealth: ['resourceID'],
  ResourceStatus: ['name'],
  ScaleIOVolumeSource: ['gateway', 'system'],
  SeccompProfile: ['type', 'localhostProfile'],
  Secret: ['immutable'],
  SecretEnvSource: ['optional'],
  SecretKeySelector: ['key', 'optional'],
  SecretProjection: ['optional'],
  SecretVolumeSource: ['defaultMode', 'optional'],
  SecurityContext: [
    'privileged',
    'runAsUser',
    'runAsGroup',
    'runAsNonRoot',
    'readOnlyRootFilesystem',
    'allowPrivilegeEscalation',
    'procMount',
  ],
  ServiceAccountTokenProjection: ['expirationSeconds', 'path'],
  SleepAction: ['seconds'],
  Sysctl: ['name', 'value'],
  Toleration: ['tolerationSeconds'],
  TopologySpreadConstraint: ['maxSkew', 'topologyKey', 'whenUnsatisfiable', 'minDomains', 'nodeAffinityPolicy', 'nodeTaintsPolicy'],
  TypedLocalObjectReference: ['apiGroup', 'kind', 'name'],
  TypedObjectReference: ['apiGroup', 'kind', 'name', 'namespace'],
  Volume: ['name'],
  VolumeDevice: ['name', 'devicePath'],
  VolumeMount: ['name', 'recursiveReadOnly', 'mountPath', 'mountPropagation'],
  VolumeMountStatus: ['name', 'mountPath', 'recursiveReadOnly'],
  VsphereVirtualDiskVolumeSource: ['volumePath'],
  WeightedPodAffinityTerm: ['weight'],
  WindowsSecurityContextOptions: ['gmsaCredentialSpecName', 'gmsaCredentialSpec', 'runAsUserName', 'hostProcess'],
  WorkloadReference: ['name', 'podGroup'],
};
const zeroKept = new Set(Object.entries(ZERO_KEPT).flatMap(([m, fields]) => fields.map((f) => `${m}.${f}`)));

export interface KubeProtobufObject {
  apiVersion: string;
  kind: string;
  /** The object as Go's JSON of it: apiVersion and kind first, bytes in base64, times in RFC 3339, unset fields absent. */
  object: Record<string, unknown>;
  /**
   * Fields with a value that Kubernetes 1.35's messages do not have (a newer client's), by where they are:
   * dropped, as the API server drops them; the caller applies fieldValidation to them.
   */
  unknownFields: string[];
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
  let unknown: { typeMeta?: { apiVersion?: string; kind?: string }; raw?: Uint8Array };
  try {
    unknown = typeOf('Unknown').decode(body.subarray(MAGIC.length)) as typeof unknown;
  } catch (err) {
    throw unrecognized(`the runtime.Unknown envelope does not decode: ${(err as Error).message}`);
  }
  const kind = unknown.typeMeta?.kind || into?.kind || '';
  const apiVersion = unknown.typeMeta?.apiVersion || into?.apiVersion || '';
  if (!kind) throw unrecognized(`Object 'Kind' is missing in the envelope's typeMeta`);
  if (!apiVersion) throw unrecognized(`Object 'apiVersion' is missing in the envelope's typeMeta`);
  if (!DECODED.includes(kind)) {
    // The endpoint's own kind undecodable here: the media type is what is not supported.
    if (!into || !DECODED.includes(into.kind))
      throw new KubeStatusError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json ` +
          `(${PROTOBUF_CONTENT_TYPE} only for ${DECODED.join(', ')}; this body is a ${kind})`,
      );
    throw badRequest(
      `${kind} in version ${JSON.stringify(apiVersion)} cannot be handled as a ${into.kind}: ` +
        `no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)}`,
    );
  }
  const type = typeOf(kind);
  const raw = unknown.raw ?? new Uint8Array();
  let object: Json;
  const unknownFields: string[] = [];
  try {
    object = messageJSON(type, type.toObject(type.decode(raw), PRESENT)) as Json;
    findUnknown(type, raw, '', unknownFields);
  } catch (err) {
    if (err instanceof KubeStatusError) throw err;
    throw badRequest(
      `${kind} in version ${JSON.stringify(apiVersion)} cannot be handled as a ${into?.kind ?? kind}: ${(err as Error).message}`,
    );
  }
  return { apiVersion, kind, object: { apiVersion, kind, ...object }, unknownFields };
}

/**
 * One message as Go's encoding/json writes the struct it decodes to: the special types as their JSON
 * (Time, Quantity, IntOrString, FieldsV1), embedded structs inlined, zero scalars only where Go writes
 * them, empty lists and maps absent (nil in Go), and messages kept even when empty (emptyDir: {}).
 */
function messageJSON(type: Type, m: Json): unknown {
  switch (type.name) {
    case 'Time':
      return timeJSON(m);
    case 'Quantity':
      return m.string ?? '';
    case 'IntOrString':
      return Number(m.type ?? 0) === 1 ? (m.strVal ?? '') : (m.intVal ?? 0);
    case 'FieldsV1':
      return fieldsV1JSON(m.Raw);
  }
  const out: Json = {};
  for (const field of type.fieldsArray) {
    const v = m[field.name];
    if (v === undefined || v === null) continue;
    const sub = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    const value = (x: unknown) => (sub ? messageJSON(sub, x as Json) : x);
    const key = `${type.name}.${field.name}`;
    if (field.map) {
      const entries = Object.entries(v as Json);
      if (entries.length) out[field.name] = Object.fromEntries(entries.map(([k, x]) => [k, value(x)]));
    } else if (field.repeated) {
      if ((v as unknown[]).length) out[field.name] = (v as unknown[]).map(value);
    } else if (sub) {
      const j = value(v);
      if (j === undefined) continue;
      if (INLINE_FIELDS.has(key)) Object.assign(out, j);
      else out[field.name] = j;
    } else if ((v !== '' && v !== 0 && v !== false) || zeroKept.has(key)) out[field.name] = v;
  }
  return out;
}

/**
 * The fields of a message's bytes that its type does not have, with a value (a newer client's field
 * left unset comes as gogo writes any non-pointer field, empty: that is no value). Read with
 * protobufjs's Reader, into every message field, list item and map value.
 */
function findUnknown(type: Type, bytes: Uint8Array, at: string, found: string[]): void {
  const reader = protobuf.Reader.create(bytes);
  const seen = new Map<number, number>();
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    const id = tag >>> 3;
    const wire = tag & 7;
    const field = type.fieldsById[id];
    const where = at || type.name;
    if (!field) {
      if (!isEmptyValue(reader, wire)) found.push(`${where}: field ${id} of ${type.name}`);
      continue;
    }
    const sub = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    if (wire !== 2 || !sub) {
      reader.skipType(wire);
      continue;
    }
    const path = at ? `${at}.${field.name}` : field.name;
    if (field.map) {
      // A map entry: its key (field 1) and its value (field 2), a message here.
      const entry = protobuf.Reader.create(reader.bytes());
      let key = '';
      let value: Uint8Array | undefined;
      while (entry.pos < entry.len) {
        const t = entry.uint32();
        if (t >>> 3 === 1 && (t & 7) === 2) key = entry.string();
        else if (t >>> 3 === 2 && (t & 7) === 2) value = entry.bytes();
        else entry.skipType(t & 7);
      }
      if (value) findUnknown(sub, value, `${path}[${JSON.stringify(key)}]`, found);
    } else if (field.repeated) {
      const i = seen.get(id) ?? 0;
      seen.set(id, i + 1);
      findUnknown(sub, reader.bytes(), `${path}[${i}]`, found);
    } else findUnknown(sub, reader.bytes(), INLINE_FIELDS.has(`${type.name}.${field.name}`) ? at : path, found);
  }
}

/** Reads past one value, saying whether it was the empty one: 0, or no bytes. */
function isEmptyValue(reader: protobuf.Reader, wire: number): boolean {
  switch (wire) {
    case 0:
      return String(reader.uint64()) === '0';
    case 1:
      return String(reader.fixed64()) === '0';
    case 5:
      return reader.fixed32() === 0;
    case 2: {
      const n = reader.uint32();
      reader.skip(n);
      return n === 0;
    }
    default:
      reader.skipType(wire);
      return false;
  }
}

/** The API server's summary of a body it could not decode: its first 30 bytes in hex. */
function summarize(body: Buffer): string {
  if (body.length === 0) return '<empty>';
  return body.length > 30 ? `${body.subarray(0, 30).toString('hex')} ...` : body.toString('hex');
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

/** FieldsV1: the JSON of the field set, carried as its bytes (base64 here). */
function fieldsV1JSON(raw: unknown): unknown {
  if (typeof raw !== 'string' || !raw) return undefined;
  try {
    return JSON.parse(Buffer.from(raw, 'base64').toString('utf8'));
  } catch {
    throw badRequest('metadata.managedFields: fieldsV1 is not JSON');
  }
}
