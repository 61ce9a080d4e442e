import { ConfigMap as ConfigMapModel } from 'kubernetes-models/v1/ConfigMap';
import { Pod as PodModel } from 'kubernetes-models/v1/Pod';
import { Secret as SecretModel } from 'kubernetes-models/v1/Secret';
import type { IContainer } from 'kubernetes-models/v1';
import { FIELD_ROOTS, FIELD_TYPES } from './generated/fields.js';
import { fieldFate, OTHER_VOLUME, POD_FIELDS } from './fields.js';
import { parseQuantity } from '../util/quantity.js';
import {
  DNS1123_LABEL_EXPECTED,
  DNS1123_SUBDOMAIN_EXPECTED,
  isDNS1123Label,
  isDNS1123Subdomain,
  isLabelValue,
  qualifiedNameProblem,
} from './names.js';
import { isValidPodUID, POD_UID_EXPECTED } from './uid.js';

/** A problem within one document: the loader adds file and document. */
export interface FieldProblem {
  field: string;
  message: string;
  severity: 'error' | 'warning';
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** /spec/containers/0/name -> spec.containers[0].name */
export function jsonPointerToPath(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part)) out += out ? `.${part}` : part;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out;
}

/** The value at a JSON pointer of the document. */
function valueAt(doc: unknown, pointer: string): unknown {
  let v = doc;
  for (const raw of pointer.split('/').slice(1)) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return v;
}

/** Why YAML gave a boolean or a number where a string belongs, and the fix. */
function unquotedHint(expected: unknown, actual: unknown): string {
  if (expected !== 'string') return '';
  if (typeof actual === 'boolean')
    return `, got the boolean ${actual} (YAML reads unquoted yes, no, on, off, true and false as booleans: quote the value)`;
  if (typeof actual === 'number') return `, got the number ${actual} (quote the value to keep it a string)`;
  return '';
}

function ajvMessage(e: AjvError, doc: unknown): { field: string; message: string } {
  const field = jsonPointerToPath(e.instancePath);
  switch (e.keyword) {
    case 'required': {
      const missing = String(e.params.missingProperty);
      return { field: field ? `${field}.${missing}` : missing, message: 'required field is missing' };
    }
    case 'type': {
      const value = valueAt(doc, e.instancePath);
      const got = unquotedHint(e.params.type, value) || `, got ${shown(value)}`;
      const listHint = e.params.type === 'array' && !Array.isArray(value) ? ' (a YAML list: one "- item" a line, or [a, b])' : '';
      return { field, message: `expected ${typeWord(e.params.type)}${got}${listHint}` };
    }
    case 'enum':
      return { field, message: `expected one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` };
    case 'format':
      if (e.params.format === 'byte') return { field, message: 'expected a base64-encoded value (use stringData for plain text)' };
      return { field, message: `expected ${String(e.params.format)} format` };
    default:
      return { field, message: `expected a value that ${e.message ?? 'matches the schema'}` };
  }
}

/** A JSON schema type as a manifest's author reads it: YAML has lists and mappings. */
function typeWord(type: unknown): string {
  if (type === 'integer') return 'an integer';
  if (type === 'array') return 'a list';
  if (type === 'object') return 'a mapping (key: value)';
  return `a ${String(type)}`;
}

/** One alternative of a oneOf that the value matched none of: "a number", "a string in quantity format". */
function alternative(e: AjvError): string | undefined {
  if (e.keyword === 'type') return typeWord(e.params.type);
  if (e.keyword === 'format')
    return e.params.format === 'quantity' ? 'a quantity (e.g. 500m, 1, 128Mi)' : `a string in ${String(e.params.format)} format`;
  return undefined;
}

/** The value a problem is about, as the message quotes it. */
function shown(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value !== null && typeof value === 'object') return 'a mapping';
  return JSON.stringify(value) ?? String(value);
}

/**
 * ajv reports a value that matches no alternative of a oneOf (a Quantity, an IntOrString) as each
 * alternative's failure, then the oneOf's: one problem, naming the alternatives and the value.
 */
function collapseAlternatives(errors: AjvError[], doc: unknown): { field: string; message: string }[] {
  const failedOneOf = new Set(errors.filter((e) => e.keyword === 'oneOf' && e.params.passingSchemas == null).map((e) => e.instancePath));
  const alternatives = new Map<string, string[]>();
  for (const e of errors) {
    const alt = failedOneOf.has(e.instancePath) ? alternative(e) : undefined;
    if (alt === undefined) continue;
    const list = alternatives.get(e.instancePath) ?? [];
    if (!list.includes(alt)) list.push(alt);
    alternatives.set(e.instancePath, list);
  }
  return errors.flatMap((e) => {
    const alts = alternatives.get(e.instancePath);
    if (!alts?.length) return [ajvMessage(e, doc)];
    if (e.keyword !== 'oneOf') return [];
    return [
      { field: jsonPointerToPath(e.instancePath), message: `expected ${alts.join(' or ')}, got ${shown(valueAt(doc, e.instancePath))}` },
    ];
  });
}

/** Schema validation with kubernetes-models (the Kubernetes OpenAPI schema). */
function schemaProblems(kind: string, doc: Record<string, unknown>): FieldProblem[] {
  const Model = kind === 'Pod' ? PodModel : kind === 'ConfigMap' ? ConfigMapModel : SecretModel;
  try {
    // The models' constructors only copy fields; validate() runs the compiled schema.
    new (Model as unknown as new (d: unknown) => { validate(): void })(doc).validate();
    return [];
  } catch (err) {
    const errors = (err as { errors?: AjvError[] }).errors;
    if (!Array.isArray(errors)) return [{ field: '', message: `schema validation failed: ${(err as Error).message}`, severity: 'error' }];
    const seen = new Set<string>();
    return collapseAlternatives(errors, doc)
      .filter((p) => !seen.has(`${p.field}|${p.message}`) && seen.add(`${p.field}|${p.message}`))
      .map((p) => ({ ...p, severity: 'error' as const }));
  }
}

/** Where a field misplaced one level off actually belongs, for "did you mean". */
function suggestion(typeName: string, field: string): string | undefined {
  const here = Object.keys(FIELD_TYPES[typeName] ?? {});
  const lower = field.toLowerCase();
  const close = here.find((f) => f.toLowerCase() === lower);
  if (close) return `did you mean ${close}?`;
  if (typeName === 'IObjectMeta' && FIELD_TYPES.IPodSpec?.[field] !== undefined) return `${field} belongs in spec`;
  if (typeName === 'IPodSpec' && FIELD_TYPES.IObjectMeta?.[field] !== undefined) return `${field} belongs in metadata`;
  if (typeName === 'IPod' && FIELD_TYPES.IPodSpec?.[field] !== undefined) return `${field} belongs in spec`;
  if (typeName === 'IPod' && FIELD_TYPES.IObjectMeta?.[field] !== undefined) return `${field} belongs in metadata`;
  if (typeName === 'IPodSpec' && FIELD_TYPES.IContainer?.[field] !== undefined) return `${field} belongs in each container`;
  return undefined;
}

/** Every field the Kubernetes schema does not know, with its path (kubectl --validate=strict). */
export function unknownFields(kind: string, doc: unknown): { field: string; hint?: string }[] {
  const out: { field: string; hint?: string }[] = [];
  const walk = (value: unknown, typeName: string | null, path: string, depth: number) => {
    if (typeName === null || typeName === '*' || value === null || typeof value !== 'object' || depth > 64) return;
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, typeName, `${path}[${i}]`, depth + 1));
      return;
    }
    const fields = FIELD_TYPES[typeName];
    if (!fields) return;
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const child = path ? `${path}.${k}` : k;
      if (!(k in fields)) {
        out.push({ field: child, hint: suggestion(typeName, k) });
        continue;
      }
      walk(v, fields[k] ?? null, child, depth + 1);
    }
  };
  walk(doc, FIELD_ROOTS[kind] ?? null, '', 0);
  return out;
}

/**
 * The API server's ValidateObjectMeta of labels and annotations, for every kind: qualified-name keys, label values
 * of at most 63 characters, and annotations of at most 256 KiB together. The labels are walked once, whatever their number.
 */
function metadataRules(doc: Record<string, unknown>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const err = (field: string, message: string) => problems.push({ field, message, severity: 'error' });
  const meta = isObject(doc.metadata) ? (doc.metadata as { labels?: unknown; annotations?: unknown }) : {};
  if (isObject(meta.labels)) {
    for (const [k, v] of Object.entries(meta.labels as Record<string, unknown>)) {
      const p = qualifiedNameProblem(k);
      if (p) err(`metadata.labels[${JSON.stringify(k)}]`, `invalid label key: ${p}`);
      if (typeof v === 'string' && !isLabelValue(v))
        err(
          `metadata.labels[${JSON.stringify(k)}]`,
          `invalid label value ${JSON.stringify(v.length > 80 ? `${v.slice(0, 60)}...` : v)}${v.length > 63 ? ` (${v.length} characters)` : ''}: expected at most 63 alphanumeric characters, "-", "_" or ".", starting and ending with an alphanumeric character`,
        );
    }
  }
  if (isObject(meta.annotations)) {
    let annotationBytes = 0;
    for (const [k, v] of Object.entries(meta.annotations as Record<string, unknown>)) {
      const p = qualifiedNameProblem(k);
      if (p) err(`metadata.annotations[${JSON.stringify(k)}]`, `invalid annotation key: ${p}`);
      annotationBytes += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
    }
    if (annotationBytes > TOTAL_ANNOTATION_SIZE_LIMIT) {
      err(
        'metadata.annotations',
        `too long: ${annotationBytes} bytes in total (keys and values); expected at most ${TOTAL_ANNOTATION_SIZE_LIMIT} bytes (256 KiB), as the API server`,
      );
    }
  }
  return problems;
}

/** The bytes a base64 text decodes to. */
const base64Bytes = (v: string) => Math.floor((v.length * 3) / 4) - (v.endsWith('==') ? 2 : v.endsWith('=') ? 1 : 0);

/** The API server's ValidateConfigMap and ValidateSecret size rule: the values together at most MaxSecretSize (1 MiB). */
function dataSizeRules(kind: 'ConfigMap' | 'Secret', doc: Record<string, unknown>): FieldProblem[] {
  const sizes = new Map<string, number>();
  const add = (field: string, bytes: (v: string) => number) => {
    const values = doc[field];
    if (!isObject(values)) return;
    for (const [k, v] of Object.entries(values as Record<string, unknown>))
      if (typeof v === 'string') sizes.set(`${field === 'binaryData' ? 'b:' : ''}${k}`, bytes(v));
  };
  if (kind === 'ConfigMap') {
    add('data', (v) => Buffer.byteLength(v));
    add('binaryData', base64Bytes);
  } else {
    // stringData is merged into data (its key wins) before the API server validates.
    add('data', base64Bytes);
    add('stringData', (v) => Buffer.byteLength(v));
  }
  let total = 0;
  for (const bytes of sizes.values()) total += bytes;
  if (total <= MAX_DATA_BYTES) return [];
  const fields = kind === 'ConfigMap' ? 'data and binaryData' : 'data and stringData';
  return [
    {
      field: 'data',
      message: `too long: the ${kind}'s values (${fields}) are ${total} bytes together; expected at most ${MAX_DATA_BYTES} bytes (1 MiB), as the API server`,
      severity: 'error',
    },
  ];
}

/** The kubelet's and API server's own rules beyond the schema. */
function podRules(doc: Record<string, unknown>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const err = (field: string, message: string) => problems.push({ field, message, severity: 'error' });
  const meta = (doc.metadata ?? {}) as { name?: unknown; namespace?: unknown; uid?: unknown };
  const spec = (doc.spec ?? {}) as Record<string, unknown>;

  if (typeof meta.name !== 'string' || meta.name === '') err('metadata.name', 'required; expected the pod name');
  else if (!isDNS1123Subdomain(meta.name)) err('metadata.name', `"${meta.name}" is invalid; expected ${DNS1123_SUBDOMAIN_EXPECTED}`);
  if (typeof meta.namespace === 'string' && meta.namespace !== '' && !isDNS1123Label(meta.namespace)) {
    err('metadata.namespace', `"${meta.namespace}" is invalid; expected ${DNS1123_LABEL_EXPECTED}`);
  }
  // The UID names the pod's directories: only what the API server or the kubelet could have made becomes one.
  if (typeof meta.uid === 'string' && meta.uid !== '' && !isValidPodUID(meta.uid)) {
    err('metadata.uid', `${JSON.stringify(meta.uid)} is invalid; expected ${POD_UID_EXPECTED}`);
  }
  if (typeof spec.activeDeadlineSeconds === 'number' && spec.activeDeadlineSeconds < 1) {
    err('spec.activeDeadlineSeconds', `${spec.activeDeadlineSeconds} is invalid; must be greater than or equal to 1`);
  }

  if (doc.spec === undefined || doc.spec === null) err('spec', 'required; expected the pod spec with at least one container');
  const containers = Array.isArray(spec.containers) ? (spec.containers as IContainer[]) : [];
  const inits = Array.isArray(spec.initContainers) ? (spec.initContainers as IContainer[]) : [];
  if (Array.isArray(spec.containers) && containers.length === 0) err('spec.containers', 'expected at least one container');
  const names = new Map<string, string>();
  const volumes = new Set<string>();
  if (Array.isArray(spec.volumes)) {
    (spec.volumes as { name?: unknown }[]).forEach((v, i) => {
      if (!isObject(v) || typeof v.name !== 'string') return;
      if (!isDNS1123Label(v.name)) err(`spec.volumes[${i}].name`, `"${v.name}" is invalid; expected ${DNS1123_LABEL_EXPECTED}`);
      if (volumes.has(v.name))
        err(`spec.volumes[${i}].name`, `duplicate volume name "${v.name}"; volume names must be unique within a pod`);
      volumes.add(v.name);
    });
    (spec.volumes as unknown[]).forEach((v, i) => {
      if (isObject(v)) checkItemPaths(v as Record<string, unknown>, `spec.volumes[${i}]`, err);
    });
  }
  const hostPorts = new Map<string, string>();
  const check = (c: IContainer, path: string, isInit: boolean) => {
    if (!isObject(c)) return;
    if (typeof c.name === 'string') {
      if (!isDNS1123Label(c.name)) err(`${path}.name`, `"${c.name}" is invalid; expected ${DNS1123_LABEL_EXPECTED}`);
      const prev = names.get(c.name);
      if (prev) err(`${path}.name`, `duplicate container name "${c.name}" (also ${prev}); container names must be unique within a pod`);
      else names.set(c.name, path);
    }
    if (typeof c.image !== 'string' || c.image.trim() === '')
      err(`${path}.image`, 'required; expected a container image such as busybox:1.36');
    else if (!isImageReference(c.image))
      err(`${path}.image`, `"${c.image}" is not a valid image reference; expected [registry/]repository[:tag][@digest] in lowercase`);
    if (c.restartPolicy !== undefined) {
      if (!isInit) err(`${path}.restartPolicy`, 'only init containers may set restartPolicy (Always makes a sidecar)');
      else if (c.restartPolicy !== 'Always')
        err(`${path}.restartPolicy`, `"${c.restartPolicy}" is not supported; expected Always (a sidecar) or no value`);
    }
    const portNames = new Set<string>();
    (Array.isArray(c.ports) ? c.ports : []).forEach((p, j) => {
      if (!isObject(p)) return;
      const pp = `${path}.ports[${j}]`;
      if (typeof p.containerPort === 'number' && (p.containerPort < 1 || p.containerPort > 65535))
        err(`${pp}.containerPort`, `${p.containerPort} is out of range; expected 1-65535`);
      if (typeof p.hostPort === 'number' && (p.hostPort < 0 || p.hostPort > 65535))
        err(`${pp}.hostPort`, `${p.hostPort} is out of range; expected 0-65535`);
      if (p.name !== undefined) {
        if (
          (typeof p.name === 'string' && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name)) ||
          (typeof p.name === 'string' && (p.name.length > 15 || !/[a-z]/.test(p.name)))
        ) {
          err(
            `${pp}.name`,
            `"${p.name}" is invalid; expected an IANA service name: at most 15 lowercase letters, digits and "-", with at least one letter`,
          );
        }
        if (portNames.has(p.name)) err(`${pp}.name`, `duplicate port name "${p.name}"`);
        portNames.add(p.name);
      }
      if (p.hostPort) {
        const key = `${p.protocol ?? 'TCP'}/${p.hostIP ?? ''}:${p.hostPort}`;
        if (hostPorts.has(key))
          err(`${pp}.hostPort`, `host port ${p.hostPort}/${p.protocol ?? 'TCP'} is already used by ${hostPorts.get(key)}`);
        hostPorts.set(key, pp);
      }
    });
    (Array.isArray(c.volumeMounts) ? c.volumeMounts : []).forEach((m, j) => {
      if (!isObject(m)) return;
      if (typeof m.name === 'string' && !volumes.has(m.name))
        err(`${path}.volumeMounts[${j}].name`, `volume "${m.name}" is not defined in spec.volumes`);
      for (const f of ['subPath', 'subPathExpr'] as const) {
        const problem = descendingPathProblem(m[f]);
        if (problem) err(`${path}.volumeMounts[${j}].${f}`, problem);
      }
      if (m.subPath && m.subPathExpr) err(`${path}.volumeMounts[${j}].subPathExpr`, 'subPathExpr and subPath are mutually exclusive');
    });
    checkResources(c, path, err);
    checkEnv(c, path, err);
    checkExecSize(c, [`${path}.command`, `${path}.args`], path, err);
    const sidecar = isInit && c.restartPolicy === 'Always';
    for (const kind of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
      const probe = c[kind] as unknown;
      if (probe === undefined || !isObject(probe)) continue;
      if (isInit && !sidecar) {
        err(`${path}.${kind}`, 'init containers may not have probes; only sidecars (restartPolicy: Always) and app containers may');
        continue;
      }
      checkHandler(probe as Record<string, unknown>, `${path}.${kind}`, ['exec', 'httpGet', 'tcpSocket', 'grpc'], c);
      const pr = probe as Record<string, unknown>;
      for (const f of ['periodSeconds', 'timeoutSeconds', 'successThreshold', 'failureThreshold'] as const) {
        if (typeof pr[f] === 'number' && (pr[f] as number) < 1)
          err(`${path}.${kind}.${f}`, `${pr[f] as number} is invalid; expected 1 or more`);
      }
      if (typeof pr.initialDelaySeconds === 'number' && pr.initialDelaySeconds < 0)
        err(`${path}.${kind}.initialDelaySeconds`, 'expected 0 or more seconds');
      if (kind !== 'readinessProbe' && typeof pr.successThreshold === 'number' && pr.successThreshold !== 1) {
        err(`${path}.${kind}.successThreshold`, `${pr.successThreshold} is invalid; must be 1 for liveness and startup probes`);
      }
      if (kind === 'readinessProbe' && pr.terminationGracePeriodSeconds !== undefined) {
        err(`${path}.${kind}.terminationGracePeriodSeconds`, 'only liveness and startup probes may set it');
      }
    }
    const lifecycle = c.lifecycle as unknown;
    if (isObject(lifecycle)) {
      if (isInit && !sidecar)
        err(
          `${path}.lifecycle`,
          'init containers may not have lifecycle hooks; only sidecars (restartPolicy: Always) and app containers may',
        );
      else {
        for (const hook of ['postStart', 'preStop'] as const) {
          const h = (lifecycle as Record<string, unknown>)[hook];
          if (isObject(h))
            checkHandler(h as Record<string, unknown>, `${path}.lifecycle.${hook}`, ['exec', 'httpGet', 'sleep', 'tcpSocket'], c);
        }
      }
    }
  };
  /** Exactly one action, and a port that resolves (by number, or by a name the container declares). */
  const checkHandler = (h: Record<string, unknown>, path: string, allowed: string[], c: IContainer) => {
    const set = allowed.filter((k) => h[k] !== undefined);
    if (set.length === 0) err(path, `expected exactly one of ${allowed.join(', ')}`);
    else if (set.length > 1) err(path, `expected exactly one of ${allowed.join(', ')}; got ${set.join(' and ')}`);
    // An exec handler runs in the container with its env: the same execve limits.
    if (isObject(h.exec)) checkExecSize(c, [`${path}.exec.command`], path, err, h.exec as Record<string, unknown>);
    if (h.tcpSocket !== undefined && path.includes('.lifecycle.')) {
      err(`${path}.tcpSocket`, 'TCPSocket lifecycle hooks are deprecated and never run; use exec, httpGet or sleep');
    }
    for (const action of ['httpGet', 'tcpSocket', 'grpc'] as const) {
      const a = h[action];
      if (!isObject(a)) continue;
      const port = (a as { port?: unknown }).port;
      const names = (Array.isArray(c.ports) ? c.ports : []).map((p) => (isObject(p) ? p.name : undefined));
      if (typeof port === 'number' && (port < 1 || port > 65535))
        err(`${path}.${action}.port`, `${port} is out of range; expected 1-65535`);
      else if (typeof port === 'string' && !/^\d+$/.test(port) && !names.includes(port)) {
        err(`${path}.${action}.port`, `"${port}" is neither a number nor the name of one of this container's ports`);
      } else if (port === undefined) err(`${path}.${action}.port`, 'required; expected a port number or the name of a container port');
    }
    const sleep = h.sleep;
    if (isObject(sleep) && typeof (sleep as { seconds?: unknown }).seconds === 'number' && (sleep as { seconds: number }).seconds < 0) {
      err(`${path}.sleep.seconds`, 'expected 0 or more seconds');
    }
  };
  inits.forEach((c, i) => check(c, `spec.initContainers[${i}]`, true));
  containers.forEach((c, i) => check(c, `spec.containers[${i}]`, false));
  if (typeof spec.terminationGracePeriodSeconds === 'number' && spec.terminationGracePeriodSeconds < 0) {
    err('spec.terminationGracePeriodSeconds', 'expected 0 or more seconds');
  }
  problems.push(
    ...singleHostProblems(doc, spec, [
      ...inits.map((c, i) => [c, `spec.initContainers[${i}]`] as const),
      ...containers.map((c, i) => [c, `spec.containers[${i}]`] as const),
    ]),
  );
  return problems;
}

const VOLUME_TYPES = new Set(['emptyDir', 'hostPath', 'configMap', 'secret', 'downwardAPI', 'projected']);
const STANDARD_RESOURCES = /^(cpu|memory|ephemeral-storage|hugepages-.+)$/;

/**
 * What one host cannot honour, from the field table (src/core/pod/fields.ts,
 * the README's table): a warning where the pod still runs as its author meant
 * on one node, an error where it would not. Never silence.
 */
function singleHostProblems(
  doc: Record<string, unknown>,
  spec: Record<string, unknown>,
  containers: (readonly [IContainer, string])[],
): FieldProblem[] {
  const out: FieldProblem[] = [];
  const severity = (fate: 'warned' | 'refused') => (fate === 'refused' ? ('error' as const) : ('warning' as const));
  const except = (key: string, name: string, field: string, message?: (reason: string) => string) => {
    const x = POD_FIELDS[key]?.except?.[name];
    if (x) out.push({ field, message: message ? message(x.reason) : x.reason, severity: severity(x.fate) });
  };
  // Every field the table warns about or refuses outright, once at its topmost path.
  const walk = (value: unknown, typeName: string | null, path: string, depth: number) => {
    if (typeName === null || typeName === '*' || value === null || typeof value !== 'object' || depth > 64) return;
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, typeName, `${path}[${i}]`, depth + 1));
      return;
    }
    const fields = FIELD_TYPES[typeName];
    if (!fields) return;
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (!(k in fields) || v === undefined || v === null) continue;
      if ((Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0)) continue;
      const child = path ? `${path}.${k}` : k;
      const fate = fieldFate(child);
      if (fate && fate.fate !== 'honoured') {
        const other = /^spec\.volumes\[\d+\]\.[^.]+$/.test(child) && fate === OTHER_VOLUME;
        out.push({ field: child, message: other ? `${k} volumes are ${fate.reason}` : fate.reason, severity: severity(fate.fate) });
        continue;
      }
      walk(v, fields[k] ?? null, child, depth + 1);
    }
  };
  walk(doc, FIELD_ROOTS.Pod ?? null, '', 0);
  for (const key of ['serviceAccountName', 'serviceAccount']) {
    const v = spec[key];
    if (typeof v === 'string' && v !== '' && v !== 'default' && spec.automountServiceAccountToken !== false)
      except(`spec.${key}`, 'noToken', `spec.${key}`);
  }
  const affinity = isObject(spec.affinity) ? spec.affinity : {};
  for (const [key, v] of Object.entries(affinity)) {
    if (v === undefined || v === null) continue;
    if (key !== 'nodeAffinity') except('spec.affinity', 'notRequiredNode', `spec.affinity.${key}`);
    else if (isObject(v) && (v as Record<string, unknown>).preferredDuringSchedulingIgnoredDuringExecution !== undefined)
      except('spec.affinity', 'notRequiredNode', 'spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution');
  }
  if (spec.hostUsers === false) except('spec.hostUsers', 'userNamespace', 'spec.hostUsers');
  if (spec.dnsPolicy === 'ClusterFirst' || spec.dnsPolicy === 'ClusterFirstWithHostNet')
    except('spec.dnsPolicy', 'clusterFirst', 'spec.dnsPolicy');
  const os = (spec.os as { name?: unknown } | undefined)?.name;
  if (typeof os === 'string' && os !== 'linux') except('spec.os.name', 'notLinux', 'spec.os.name', (r) => `"${os}": ${r}`);
  (Array.isArray(spec.volumes) ? spec.volumes : []).forEach((v: unknown, i: number) => {
    if (!isObject(v)) return;
    for (const t of Object.keys(v).filter((k) => k !== 'name')) {
      // Types the schema does not know are reported as unknown fields; the table has the rest.
      if (!VOLUME_TYPES.has(t) && !(t in (FIELD_TYPES.IVolume ?? {})))
        out.push({ field: `spec.volumes[${i}].${t}`, message: `${t} volumes are not supported on a single host`, severity: 'error' });
    }
  });
  for (const [c, path] of containers) {
    if (!isObject(c)) continue;
    for (const kind of ['limits', 'requests'] as const) {
      const r = (c.resources as Record<string, unknown> | undefined)?.[kind];
      if (!isObject(r)) continue;
      for (const name of Object.keys(r)) {
        const field = `${path}.resources.${kind}[${JSON.stringify(name)}]`;
        if (!STANDARD_RESOURCES.test(name))
          except(`spec.containers.resources.${kind}`, 'extended', field, (reason) => `extended resource ${name}: ${reason}`);
      }
    }
    if (c.securityContext?.procMount === 'Unmasked')
      except('spec.containers.securityContext.procMount', 'unmasked', `${path}.securityContext.procMount`);
    (Array.isArray(c.volumeMounts) ? c.volumeMounts : []).forEach((m, j) => {
      if (isObject(m) && m.mountPropagation === 'Bidirectional' && c.securityContext?.privileged !== true) {
        except('spec.containers.volumeMounts.mountPropagation', 'bidirectional', `${path}.volumeMounts[${j}].mountPropagation`);
      }
    });
  }
  return out;
}

/** The API server's TotalAnnotationSizeLimitB: keys and values of metadata.annotations together. */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/**
 * Linux's MAX_ARG_STRLEN (32 pages of 4 KiB): execve refuses any one NAME=value string longer than this
 * with E2BIG, so a bigger env value could only fail at container start, after a sandbox exists.
 */
export const MAX_ENV_STRING_BYTES = 128 * 1024;

/** Linux's MAX_ARG_STRLEN, for one argument as for one environment string (with its NUL). */
export const MAX_ARG_STRLEN = MAX_ENV_STRING_BYTES;

/**
 * Linux's ARG_MAX at the default 8 MiB stack (a quarter of RLIMIT_STACK, what getconf ARG_MAX says there): what
 * execve takes of argv and envp together, each string with its NUL and its pointer. A fixed number, not this
 * host's: a manifest valid here is valid on the next host, and the container's stack limit is not this process's.
 */
export const ARG_MAX_BYTES = 2 * 1024 * 1024;
const POINTER_BYTES = 8;

/** The API server's MaxSecretSize, which bounds a ConfigMap's values too. */
export const MAX_DATA_BYTES = 1024 * 1024;

/**
 * What execve would be handed for a container's command and args (or an exec handler's command) with its env,
 * refused here when Linux would refuse it: one string over MAX_ARG_STRLEN, or all of them over ARG_MAX. The
 * container would otherwise crash-loop with "argument list too long" after its sandbox is up. Counted: what the
 * manifest says (literal env values, each valueFrom as its name alone); the image's entrypoint and env and
 * $(VAR) expansion are not known here.
 */
function checkExecSize(
  c: IContainer,
  fields: string[],
  path: string,
  err: (field: string, message: string) => void,
  from: Record<string, unknown> = c as unknown as Record<string, unknown>,
): void {
  const parts: { field: string; bytes: number }[] = [];
  for (const field of fields) {
    const list = from[field.slice(field.lastIndexOf('.') + 1)];
    if (!Array.isArray(list)) continue;
    let bytes = 0;
    list.forEach((arg: unknown, i: number) => {
      if (typeof arg !== 'string') return;
      const size = Buffer.byteLength(arg) + 1;
      if (size > MAX_ARG_STRLEN)
        err(
          `${field}[${i}]`,
          `too long: ${size} bytes with its NUL; expected at most ${MAX_ARG_STRLEN} bytes (Linux MAX_ARG_STRLEN: exec refuses a longer argument with "argument list too long")`,
        );
      bytes += size + POINTER_BYTES;
    });
    parts.push({ field, bytes });
  }
  if (parts.length === 0) return;
  let env = 0;
  for (const e of Array.isArray(c.env) ? (c.env as unknown[]) : []) {
    if (!isObject(e)) continue;
    const { name, value } = e as { name?: unknown; value?: unknown };
    env +=
      (typeof name === 'string' ? Buffer.byteLength(name) : 0) +
      (typeof value === 'string' ? Buffer.byteLength(value) : 0) +
      2 +
      POINTER_BYTES;
  }
  parts.push({ field: `${path}.env`, bytes: env });
  const total = parts.reduce((sum, p) => sum + p.bytes, 0);
  if (total <= ARG_MAX_BYTES) return;
  const largest = parts.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const said = parts
    .filter((p) => p.bytes > 0)
    .map((p) => `${p.field.slice(path.length + 1)} ${p.bytes}`)
    .join(', ');
  err(
    largest.field,
    `too long for exec: ${total} bytes of arguments and environment together (${said}; each string with its NUL and pointer); expected at most ${ARG_MAX_BYTES} bytes (Linux ARG_MAX at the default 8 MiB stack: exec fails with "argument list too long")`,
  );
}

/** The API server's validateLocalDescendingPath: relative, and no '..' element. */
function descendingPathProblem(p: unknown): string | undefined {
  if (typeof p !== 'string' || p === '') return undefined;
  if (p.includes('\0')) return `${JSON.stringify(p)} is invalid; must not contain a NUL byte`;
  if (p.startsWith('/')) return `${JSON.stringify(p)} is invalid; must be a relative path`;
  if (p.split('/').includes('..')) return `${JSON.stringify(p)} is invalid; must not contain '..'`;
  return undefined;
}

/** The API server's validateLocalNonReservedPath, for items[].path: also never starting with '..' (AtomicWriter's own names). */
function itemPathProblem(p: unknown): string | undefined {
  if (typeof p !== 'string') return undefined;
  if (p === '') return 'required; expected a relative file path';
  return descendingPathProblem(p) ?? (p.startsWith('..') ? `${JSON.stringify(p)} is invalid; must not start with '..'` : undefined);
}

/** The pod fields a v1 fieldRef may name at all (the API server's ConvertDownwardAPIFieldLabel); spec.host is spec.nodeName's old name. */
const POD_FIELD_LABELS = new Set([
  'metadata.annotations',
  'metadata.labels',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.host',
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.serviceAccountName',
  'spec.schedulerName',
  'status.phase',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
]);
/** Of those, what an env var may take, and what a downwardAPI volume file may (metadata only). */
const ENV_FIELD_PATHS = [
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
];
const VOLUME_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.labels', 'metadata.annotations', 'metadata.uid'];
/** What a resourceFieldRef may name (and hugepages-<size> of either). */
const RESOURCE_FIELD_PATHS = [
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
];

/**
 * The API server's validateObjectFieldSelector: apiVersion v1, and a field path the place takes, or
 * one label or annotation by key (metadata.labels['app']). An env var with another path would fail
 * only when its container is created, after the pod's sandbox is up.
 */
function checkFieldRef(ref: unknown, at: string, allowed: readonly string[], err: (field: string, message: string) => void): void {
  if (!isObject(ref)) return;
  const { apiVersion, fieldPath } = ref as { apiVersion?: unknown; fieldPath?: unknown };
  if (typeof apiVersion === 'string' && apiVersion !== 'v1')
    err(`${at}.apiVersion`, `${JSON.stringify(apiVersion)} is not supported; expected "v1"`);
  if (typeof fieldPath !== 'string') return;
  if (fieldPath === '') return err(`${at}.fieldPath`, 'required; expected a pod field such as metadata.name');
  const sub = /^(.+?)\['(.*)'\]$/s.exec(fieldPath);
  if (sub) {
    const [, path, key] = sub as unknown as [string, string, string];
    if (path !== 'metadata.labels' && path !== 'metadata.annotations')
      return err(
        `${at}.fieldPath`,
        `${JSON.stringify(fieldPath)} is invalid; only metadata.labels and metadata.annotations take a key, as metadata.labels['app']`,
      );
    const problem = qualifiedNameProblem(path === 'metadata.annotations' ? key.toLowerCase() : key);
    if (problem) err(`${at}.fieldPath`, `${JSON.stringify(fieldPath)} is invalid: the key ${problem}`);
    return;
  }
  if (allowed.includes(fieldPath === 'spec.host' ? 'spec.nodeName' : fieldPath)) return;
  const expected = `expected one of ${allowed.map((f) => JSON.stringify(f)).join(', ')}, or metadata.labels['<key>'] or metadata.annotations['<key>']`;
  err(
    `${at}.fieldPath`,
    POD_FIELD_LABELS.has(fieldPath)
      ? `${JSON.stringify(fieldPath)} is not supported here; ${expected}`
      : `${JSON.stringify(fieldPath)} is not a pod field; ${expected}`,
  );
}

/** The API server's validateContainerResourceFieldSelector: a resource it knows, and in a volume the container it is of. */
function checkResourceFieldRef(ref: unknown, at: string, inVolume: boolean, err: (field: string, message: string) => void): void {
  if (!isObject(ref)) return;
  const { resource, containerName } = ref as { resource?: unknown; containerName?: unknown };
  if (inVolume && (containerName === undefined || containerName === ''))
    err(`${at}.containerName`, 'required in a volume; expected the name of the container whose resources are read');
  if (typeof resource !== 'string') return;
  if (RESOURCE_FIELD_PATHS.includes(resource) || /^(limits|requests)\.hugepages-.+/.test(resource)) return;
  err(
    `${at}.resource`,
    `${JSON.stringify(resource)} is not supported; expected one of ${RESOURCE_FIELD_PATHS.map((f) => JSON.stringify(f)).join(', ')} (or limits.hugepages-<size>, requests.hugepages-<size>)`,
  );
}

/** items[].path of configMap, secret and downwardAPI volumes, and of each projected source. */
function checkItemPaths(volume: Record<string, unknown>, path: string, err: (field: string, message: string) => void): void {
  const items = (source: unknown, at: string) => {
    if (!isObject(source)) return;
    const list = (source as { items?: unknown }).items;
    (Array.isArray(list) ? list : []).forEach((item: unknown, k: number) => {
      if (!isObject(item)) return;
      const problem = itemPathProblem((item as { path?: unknown }).path);
      if (problem) err(`${at}.items[${k}].path`, problem);
      if (!at.endsWith('.downwardAPI')) return;
      checkFieldRef((item as { fieldRef?: unknown }).fieldRef, `${at}.items[${k}].fieldRef`, VOLUME_FIELD_PATHS, err);
      checkResourceFieldRef((item as { resourceFieldRef?: unknown }).resourceFieldRef, `${at}.items[${k}].resourceFieldRef`, true, err);
    });
  };
  for (const kind of ['configMap', 'secret', 'downwardAPI'] as const) items(volume[kind], `${path}.${kind}`);
  const sources = (volume.projected as { sources?: unknown } | undefined)?.sources;
  (Array.isArray(sources) ? sources : []).forEach((src: unknown, j: number) => {
    if (!isObject(src)) return;
    for (const kind of ['configMap', 'secret', 'downwardAPI'] as const)
      items((src as Record<string, unknown>)[kind], `${path}.projected.sources[${j}].${kind}`);
  });
}

/** The API server's ValidateResourceRequirements: quantities, none negative, requests never above limits. */
function checkResources(c: IContainer, path: string, err: (field: string, message: string) => void): void {
  const r = c.resources as Record<string, unknown> | undefined;
  if (!isObject(r)) return;
  const parsed: Record<'limits' | 'requests', Map<string, number>> = { limits: new Map(), requests: new Map() };
  for (const kind of ['limits', 'requests'] as const) {
    const list = r[kind];
    if (!isObject(list)) continue;
    for (const [name, raw] of Object.entries(list as Record<string, unknown>)) {
      if (typeof raw !== 'string' && typeof raw !== 'number') continue;
      const field = `${path}.resources.${kind}[${JSON.stringify(name)}]`;
      const value = parseQuantity(raw);
      if (value === undefined) err(field, `${JSON.stringify(raw)} is not a quantity; expected e.g. 500m, 1, 128Mi`);
      else if (value < 0) err(field, `${JSON.stringify(raw)} is invalid; must be greater than or equal to 0`);
      else parsed[kind].set(name, value);
    }
  }
  for (const [name, request] of parsed.requests) {
    const limit = parsed.limits.get(name);
    if (limit !== undefined && request > limit) {
      const raw = (r.limits as Record<string, unknown>)[name];
      err(`${path}.resources.requests[${JSON.stringify(name)}]`, `must be less than or equal to ${name} limit of ${String(raw)}`);
    }
  }
}

/** The API server's relaxed env var names (printable ASCII but '='), values an exec can take, and the fields a valueFrom reads. */
function checkEnv(c: IContainer, path: string, err: (field: string, message: string) => void): void {
  (Array.isArray(c.env) ? c.env : []).forEach((e: unknown, j: number) => {
    if (!isObject(e)) return;
    const { name, value, valueFrom } = e as { name?: unknown; value?: unknown; valueFrom?: unknown };
    const at = `${path}.env[${j}]`;
    if (isObject(valueFrom)) {
      checkFieldRef((valueFrom as { fieldRef?: unknown }).fieldRef, `${at}.valueFrom.fieldRef`, ENV_FIELD_PATHS, err);
      checkResourceFieldRef((valueFrom as { resourceFieldRef?: unknown }).resourceFieldRef, `${at}.valueFrom.resourceFieldRef`, false, err);
    }
    if (typeof name === 'string' && (name === '' || !/^[\x20-\x3c\x3e-\x7e]+$/.test(name))) {
      err(
        `${at}.name`,
        `${JSON.stringify(name)} is invalid; a valid environment variable name must consist only of printable ASCII characters other than '='`,
      );
    }
    if (typeof value !== 'string') return;
    if (value.includes('\0'))
      err(`${at}.value`, 'must not contain a NUL byte (a C string ends there: the process would see a different value)');
    const size = Buffer.byteLength(value) + (typeof name === 'string' ? Buffer.byteLength(name) : 0) + 2;
    if (size > MAX_ENV_STRING_BYTES) {
      err(
        `${at}.value`,
        `too long: NAME=value is ${size} bytes; expected at most ${MAX_ENV_STRING_BYTES} bytes (Linux MAX_ARG_STRLEN: exec refuses a longer environment string)`,
      );
    }
  });
}

/** Elements of a list may be anything in a bad manifest; the schema reports them. */
const isObject = (v: unknown): v is object => v !== null && typeof v === 'object' && !Array.isArray(v);

const IMAGE_REF =
  /^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::\d+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$/;

/** The docker reference grammar (distribution/reference). */
export function isImageReference(image: string): boolean {
  return image.length <= 255 && IMAGE_REF.test(image);
}

/** Every problem of one document of a kind podctl accepts. */
export function validateDocument(
  kind: 'Pod' | 'ConfigMap' | 'Secret',
  doc: Record<string, unknown>,
  unknown: 'error' | 'warn',
): FieldProblem[] {
  const rules = [...metadataRules(doc), ...(kind === 'Pod' ? podRules(doc) : dataSizeRules(kind, doc))];
  // A field that a rule of podctl's own refuses is said once, in the rule's words: the schema's are vaguer ("expected a string").
  const ruled = new Set(rules.filter((p) => p.severity === 'error').map((p) => sameField(p.field)));
  const problems = schemaProblems(kind, doc).filter((p) => !ruled.has(sameField(p.field)));
  // A value of the wrong type (a mapping where a list belongs) is said once, not again as its keys being unknown fields.
  const mistyped = problems.map((p) => sameField(p.field)).filter((f) => f !== '');
  const inside = (field: string) => mistyped.some((f) => field.startsWith(`${f}.`) || field.startsWith(`${f}[`));
  for (const u of unknownFields(kind, doc)) {
    if (inside(sameField(u.field))) continue;
    problems.push({
      field: u.field,
      message: `unknown field${u.hint ? `; ${u.hint}` : ''}`,
      severity: unknown === 'error' ? 'error' : 'warning',
    });
  }
  problems.push(...rules);
  if (kind !== 'Pod') {
    const name = (doc.metadata as { name?: unknown } | undefined)?.name;
    if (typeof name !== 'string' || !isDNS1123Subdomain(name))
      problems.push({ field: 'metadata.name', message: `required; expected ${DNS1123_SUBDOMAIN_EXPECTED}`, severity: 'error' });
  }
  return problems;
}

/** A field path with its map keys written one way: limits["memory"] and limits.memory are the same field. */
function sameField(field: string): string {
  return field.replace(/\["([A-Za-z_][A-Za-z0-9_]*)"\]/g, '.$1');
}
