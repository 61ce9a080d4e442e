// The API server's validation of a manifest's documents, and the kubelet's own rules beyond it: the
// schema (schema.ts), metadata and data sizes (object-rules.ts), the pod's containers (here, with
// container-rules.ts, field-refs.ts and volume-rules.ts), and what one host cannot honour (single-host.ts).
import type { IContainer } from 'kubernetes-models/v1';
import { checkEnv, checkExecSize, checkResources, isImageReference } from './container-rules.js';
import { DNS1123_LABEL_EXPECTED, DNS1123_SUBDOMAIN_EXPECTED, isDNS1123Label, isDNS1123Subdomain } from './names.js';
import { dataSizeRules, metadataRules } from './object-rules.js';
import { isObject, schemaProblems, unknownFields, type FieldProblem } from './schema.js';
import { singleHostProblems } from './single-host.js';
import { isValidPodUID, POD_UID_EXPECTED } from './uid.js';
import { checkItemPaths, descendingPathProblem } from './volume-rules.js';

export { jsonPointerToPath, unknownFields, type FieldProblem } from './schema.js';
export { MAX_DATA_BYTES, TOTAL_ANNOTATION_SIZE_LIMIT } from './object-rules.js';
export { ARG_MAX_BYTES, isImageReference, MAX_ARG_STRLEN, MAX_ENV_STRING_BYTES } from './container-rules.js';

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
