import type { IConfigMap, IContainer, IObjectFieldSelector, IPod, IResourceFieldSelector, ISecret } from 'kubernetes-models/v1';
import { errorMessage } from '../errors.js';
import { resourceFieldValue, volumeFieldValue } from '../volumes/downward.js';
import { StartContainerError } from './images.js';

/** Where configMapKeyRef, secretKeyRef and envFrom read from. */
export interface EnvObjects {
  configMap(namespace: string, name: string): IConfigMap | undefined;
  secret(namespace: string, name: string): ISecret | undefined;
}

/** The node's allocatable, for resource fields of containers that set no limit. */
export interface NodeAllocatable {
  cpuCores: number;
  memoryBytes: number;
  ephemeralStorageBytes?: number;
}

export interface EnvContext {
  pod: IPod;
  container: IContainer;
  objects: EnvObjects;
  podIPs: string[];
  hostIP?: string;
  node: NodeAllocatable;
}

export interface ResolvedEnv {
  /** In the order the container declares them (envFrom first, then env). */
  env: { key: string; value: string }[];
  /** Keys of envFrom entries that are not valid variable names: skipped, as the kubelet does, and reported. */
  skipped: string[];
}

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/**
 * Kubernetes' $(VAR) expansion: a defined name is replaced, an undefined one
 * stays as written, `$$` is a literal `$`, anything else is left alone.
 */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  let i = 0;
  while (i < input.length) {
    const ch = input[i]!;
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      i++;
      continue;
    }
    const next = input[i + 1]!;
    if (next === '$') {
      out += '$';
      i += 2;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += '$(';
        i += 2;
        continue;
      }
      const name = input.slice(i + 2, close);
      out += lookup(name) ?? `$(${name})`;
      i = close + 1;
    } else {
      out += `$${next}`;
      i += 2;
    }
  }
  return out;
}

function configError(message: string): StartContainerError {
  return new StartContainerError('CreateContainerConfigError', message);
}

function decodeSecret(secret: ISecret, key: string): string | undefined {
  const v = secret.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

/** The value of a downward API field of the pod; spec and status fields exist for env only. */
export function podFieldValue(ctx: Pick<EnvContext, 'pod' | 'podIPs' | 'hostIP'>, ref: IObjectFieldSelector): string {
  switch (ref.fieldPath) {
    case 'spec.nodeName':
      return ctx.pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return ctx.pod.spec?.serviceAccountName ?? '';
    case 'status.podIP':
      return ctx.podIPs[0] ?? '';
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    case 'status.hostIP':
    case 'status.hostIPs':
      return ctx.hostIP ?? '';
  }
  try {
    return volumeFieldValue(ctx.pod, ref.fieldPath);
  } catch (err) {
    throw configError(`unsupported fieldPath: ${ref.fieldPath}: ${errorMessage(err)}`);
  }
}

/** A container's request or limit in divisor units: the same rule as downwardAPI volumes, defaulting to this container. */
function envResourceValue(pod: IPod, container: string, ref: IResourceFieldSelector, node: NodeAllocatable): string {
  try {
    return resourceFieldValue(pod, { ...ref, containerName: ref.containerName || container }, { ephemeralStorageBytes: 0, ...node });
  } catch (err) {
    throw configError(errorMessage(err));
  }
}

/**
 * The kubelet's makeEnvironmentVariables: envFrom sources, then env entries
 * in order, each value expanded against what came before it. A required
 * ConfigMap, Secret or key that is missing is a CreateContainerConfigError.
 */
export function makeEnvironmentVariables(ctx: EnvContext): ResolvedEnv {
  const ns = ctx.pod.metadata?.namespace ?? 'default';
  const values = new Map<string, string>();
  const skipped: string[] = [];
  for (const from of ctx.container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    let data: Record<string, string> = {};
    if (from.configMapRef) {
      const cm = ctx.objects.configMap(ns, from.configMapRef.name ?? '');
      if (!cm) {
        if (from.configMapRef.optional) continue;
        throw configError(`configmap "${from.configMapRef.name}" not found`);
      }
      data = cm.data ?? {};
    } else if (from.secretRef) {
      const secret = ctx.objects.secret(ns, from.secretRef.name ?? '');
      if (!secret) {
        if (from.secretRef.optional) continue;
        throw configError(`secret "${from.secretRef.name}" not found`);
      }
      data = Object.fromEntries(Object.keys(secret.data ?? {}).map((k) => [k, decodeSecret(secret, k)!]));
    }
    for (const [k, v] of Object.entries(data)) {
      const key = prefix + k;
      if (!ENV_NAME.test(key)) {
        skipped.push(key);
        continue;
      }
      values.set(key, v);
    }
  }
  const lookup = (name: string) => values.get(name);
  for (const e of ctx.container.env ?? []) {
    let value: string | undefined;
    if (e.valueFrom === undefined) {
      value = expand(e.value ?? '', lookup);
    } else if (e.valueFrom.fieldRef) {
      value = podFieldValue(ctx, e.valueFrom.fieldRef);
    } else if (e.valueFrom.resourceFieldRef) {
      value = envResourceValue(ctx.pod, ctx.container.name, e.valueFrom.resourceFieldRef, ctx.node);
    } else if (e.valueFrom.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const cm = ctx.objects.configMap(ns, ref.name ?? '');
      if (!cm) {
        if (ref.optional) continue;
        throw configError(`configmap "${ref.name}" not found`);
      }
      value = cm.data?.[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        throw configError(`couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name}`);
      }
    } else if (e.valueFrom.secretKeyRef) {
      const ref = e.valueFrom.secretKeyRef;
      const secret = ctx.objects.secret(ns, ref.name ?? '');
      if (!secret) {
        if (ref.optional) continue;
        throw configError(`secret "${ref.name}" not found`);
      }
      value = decodeSecret(secret, ref.key);
      if (value === undefined) {
        if (ref.optional) continue;
        throw configError(`couldn't find key ${ref.key} in Secret ${ns}/${ref.name}`);
      }
    }
    values.set(e.name, value ?? '');
  }
  return { env: [...values].map(([key, value]) => ({ key, value })), skipped };
}

/** Expands $(VAR) in command and args with the container's final environment. */
export function expandCommand(args: string[] | undefined, env: { key: string; value: string }[]): string[] {
  const map = new Map(env.map((e) => [e.key, e.value]));
  return (args ?? []).map((a) => expand(a, (n) => map.get(n)));
}
