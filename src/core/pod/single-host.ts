import type { IContainer } from 'kubernetes-models/v1';
import { FIELD_TYPES } from '../../generated/pod/fields.js';
import { fieldFate, OTHER_VOLUME, POD_FIELDS } from './fields.js';
import { isObject, walkSchema, type FieldProblem } from './schema.js';

const VOLUME_TYPES = new Set(['emptyDir', 'hostPath', 'configMap', 'secret', 'downwardAPI', 'projected']);
const STANDARD_RESOURCES = /^(cpu|memory|ephemeral-storage|hugepages-.+)$/;

/**
 * What one host cannot honour, from the field table (src/core/pod/fields.ts,
 * the README's table): a warning where the pod still runs as its author meant
 * on one node, an error where it would not. Never silence.
 */
export function singleHostProblems(
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
  walkSchema(doc, 'Pod', ({ key, value: v, path: child, known }) => {
    if (!known || v === undefined || v === null) return false;
    if ((Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0)) return false;
    const fate = fieldFate(child);
    if (fate && fate.fate !== 'honoured') {
      const other = /^spec\.volumes\[\d+\]\.[^.]+$/.test(child) && fate === OTHER_VOLUME;
      out.push({ field: child, message: other ? `${key} volumes are ${fate.reason}` : fate.reason, severity: severity(fate.fate) });
      return false;
    }
    return true;
  });
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
  if (typeof spec.schedulerName === 'string' && spec.schedulerName !== '' && spec.schedulerName !== 'default-scheduler')
    except('spec.schedulerName', 'otherScheduler', 'spec.schedulerName');
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
