import Table from 'cli-table3';
import type { IPod } from 'kubernetes-models/v1';
import { displayStatus, readyColumn, restartsColumn } from './render.js';

function age(from: string | undefined, now: number): string {
  if (!from) return '<unknown>';
  const s = Math.max(0, Math.floor((now - Date.parse(from)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** kubectl get pods' columns (NAMESPACE with -A; IP, NODE with -o wide). */
export function podTable(pods: IPod[], opts: { allNamespaces?: boolean; wide?: boolean; now?: number } = {}): string {
  const now = opts.now ?? Date.now();
  const head = [...(opts.allNamespaces ? ['NAMESPACE'] : []), 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', ...(opts.wide ? ['IP', 'NODE'] : [])];
  const table = new Table({
    head,
    chars: { top: '', 'top-mid': '', 'top-left': '', 'top-right': '', bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '', left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '   ' },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
  });
  for (const p of pods) {
    const m = p.metadata!;
    table.push([
      ...(opts.allNamespaces ? [m.namespace ?? 'default'] : []),
      m.name ?? '',
      readyColumn(p, p.status),
      displayStatus(p, p.status),
      String(restartsColumn(p.status)),
      age(p.status?.startTime ?? m.annotations?.['kubernetes.io/config.seen'], now),
      ...(opts.wide ? [p.status?.podIP ?? '<none>', p.spec?.nodeName ?? '<none>'] : []),
    ]);
  }
  return table.toString();
}
