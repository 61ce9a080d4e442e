import type { IConfigMap, IDownwardAPIVolumeFile, IKeyToPath, IPod, ISecret } from 'kubernetes-models/v1';
import { cleanItemPath, type Payload } from './atomic-writer.js';
import { resourceFieldValue, volumeFieldValue, type Allocatable } from './downward.js';
import { PayloadError } from './errors.js';

/** The API default of defaultMode for configMap, secret, downwardAPI and projected volumes. */
export const DEFAULT_MODE = 0o644;

function add(payload: Payload, path: string, data: Buffer, mode: number): void {
  const clean = cleanItemPath(path);
  // The API server refuses two items with the same path (or one inside another); so do we.
  for (const existing of payload.keys()) {
    if (existing === clean || existing.startsWith(`${clean}/`) || clean.startsWith(`${existing}/`)) {
      throw new PayloadError(`conflicting duplicate paths: "${existing}" and "${clean}"`);
    }
  }
  payload.set(clean, { data, mode });
}

function keyedPayload(
  payload: Payload,
  values: Map<string, Buffer>,
  items: IKeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
  missingKey: (key: string) => string,
): void {
  if (!items || items.length === 0) {
    for (const [key, data] of values) add(payload, key, data, defaultMode);
    return;
  }
  for (const item of items) {
    const data = values.get(item.key);
    if (data === undefined) {
      if (optional) continue;
      throw new PayloadError(missingKey(item.key));
    }
    add(payload, item.path, data, item.mode ?? defaultMode);
  }
}

export interface KeyedSource {
  name: string;
  items?: IKeyToPath[];
  optional?: boolean;
}

/** A ConfigMap's data and binaryData as files (the kubelet's configmap MakePayload). */
export function configMapPayload(payload: Payload, cm: IConfigMap | undefined, src: KeyedSource, defaultMode: number): void {
  if (!cm) {
    if (src.optional) return;
    throw new PayloadError(`configmap "${src.name}" not found`);
  }
  const values = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) values.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) values.set(k, Buffer.from(v, 'base64'));
  keyedPayload(payload, values, src.items, defaultMode, src.optional ?? false, (k) => `configmap references non-existent config key: ${k}`);
}

/** A Secret's data (base64 in the object) as files (the kubelet's secret MakePayload). */
export function secretPayload(payload: Payload, secret: ISecret | undefined, src: KeyedSource, defaultMode: number): void {
  if (!secret) {
    if (src.optional) return;
    throw new PayloadError(`secret "${src.name}" not found`);
  }
  const values = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(secret.data ?? {})) values.set(k, Buffer.from(v, 'base64'));
  keyedPayload(payload, values, src.items, defaultMode, src.optional ?? false, (k) => `references non-existent secret key: ${k}`);
}

/** downwardAPI items as files (the kubelet's downwardapi CollectData). */
export function downwardAPIPayload(
  payload: Payload,
  pod: IPod,
  items: IDownwardAPIVolumeFile[] | undefined,
  defaultMode: number,
  node: Allocatable,
): void {
  for (const item of items ?? []) {
    let value: string;
    if (item.fieldRef) value = volumeFieldValue(pod, item.fieldRef.fieldPath);
    else if (item.resourceFieldRef)
      value = resourceFieldValue(
        pod,
        item.resourceFieldRef as { containerName?: string; resource: string; divisor?: string | number },
        node,
      );
    else throw new PayloadError(`downwardAPI item "${item.path}": one of fieldRef or resourceFieldRef is required`);
    add(payload, item.path, Buffer.from(value, 'utf8'), item.mode ?? defaultMode);
  }
}
