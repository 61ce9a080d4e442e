import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import type { PodEvent } from '../core/events.js';
import { formatSpecChange } from '../core/kuberuntime/spec-diff.js';
import type { Plan, PlannedAction } from '../core/plan.js';
import { podKey } from '../core/util/pod-key.js';
import { yamlDumper } from './yaml.js';

export { displayStatus, readyColumn, restartsColumn, statusLine } from './status-line.js';

/** A v1 Pod object with its status, as kubectl -o json/yaml prints it. */
export function podWithStatus(pod: IPod, status: IPodStatus | undefined): IPod {
  return { ...pod, status };
}

export async function renderObjects(items: IPod[], format: 'json' | 'yaml'): Promise<string> {
  const doc = items.length === 1 ? items[0] : { apiVersion: 'v1', kind: 'List', items };
  if (format === 'json') return JSON.stringify(doc, null, 2);
  // The YAML printer loads when YAML is asked for: this module is in every table's imports.
  return (await yamlDumper())(doc);
}

/**
 * The events run and watch print as lines: a warning the first time it
 * happens (repeats only bump its count), and a kill that restarts a
 * container (liveness, startup, definition change).
 */
export function eventWorthALine(e: PodEvent): boolean {
  if (e.count !== 1) return false;
  if (e.type === 'Warning') return e.reason !== 'BackOff';
  return e.reason === 'Killing' && e.message.endsWith('will be restarted');
}

export function eventLine(e: PodEvent, now = new Date()): string {
  const what = `${e.type === 'Warning' ? 'Warning ' : ''}${e.reason}${e.container ? ` ${e.container}` : ''}`;
  return `${now.toISOString().slice(11, 19)} ${e.namespace}/${e.name}  ${what}: ${e.message}`;
}

/** `podctl plan`: a short diff-like list per pod (+ creates or starts, - kills or removes, ~ resizes in place). */
export function renderPlan(plan: Plan): string {
  const lines: string[] = [];
  for (const p of plan.pods) {
    const pod = podKey(p);
    if (p.inDesiredState) {
      lines.push(`${pod}: in desired state, nothing to do`);
      continue;
    }
    lines.push(`${pod}:`);
    for (const a of p.actions) {
      lines.push(`  ${planActionLine(a)}`);
      for (const c of a.changes ?? []) lines.push(`      ${formatSpecChange(c)}`);
    }
  }
  const changed = plan.pods.filter((p) => !p.inDesiredState).length;
  lines.push(
    '',
    changed ? `${changed} of ${plan.pods.length} pod(s) would change.` : `No changes: ${plan.pods.length} pod(s) in desired state.`,
  );
  return lines.join('\n');
}

function planActionLine(a: PlannedAction): string {
  switch (a.action) {
    case 'KillPod':
      return `- kill pod: ${a.reason}`;
    case 'RemovePod':
      return `- remove pod: ${a.reason}`;
    case 'KillContainer':
      return `- kill container ${a.container} (${a.killReason}): ${a.reason}`;
    case 'Resize': {
      const sign = a.reason.startsWith('refused: ') ? '!' : '~';
      return `${sign} resize ${a.kind === 'sidecar' ? 'sidecar ' : ''}container ${a.container}: ${a.reason}`;
    }
    case 'CreatePodSandbox':
      return `+ create sandbox (attempt ${a.attempt}): ${a.reason}`;
    case 'PullImage':
      return `+ pull image ${a.image} for ${a.container}: ${a.reason}`;
    case 'StartContainer':
      return `+ start ${a.kind === 'app' ? '' : `${a.kind} `}container ${a.container}: ${a.reason}`;
  }
}

/** A verbose CRI answer's info map holds JSON documents as strings: print them as JSON. */
export function expandInfo(info: Record<string, string> | undefined): Record<string, unknown> | undefined {
  if (!info) return undefined;
  return Object.fromEntries(
    Object.entries(info).map(([k, v]) => {
      try {
        return [k, JSON.parse(v) as unknown];
      } catch {
        return [k, v];
      }
    }),
  );
}
