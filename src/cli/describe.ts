import type { IContainer, IContainerState, IContainerStatus, IPod, IProbe } from 'kubernetes-models/v1';
import { age, plainTable } from './table.js';
import { displayStatus } from './render.js';
import { podFieldValue } from '../core/kuberuntime/env.js';
import { resourceFieldValue } from '../core/volumes/downward.js';
import type { DescribedEvent, TimelineEntry } from '../core/podview/describe.js';
import { podMeta } from '../core/util/pod-key.js';

const pad = (label: string, width: number) => `${label}:`.padEnd(width + 2);

function kv(lines: string[], indent: string, width: number, label: string, value: string | undefined): void {
  lines.push(`${indent}${pad(label, width)}${value ?? '<none>'}`);
}

/**
 * Rows of cells laid out as Go's tabwriter lays out kubectl describe's tab-separated lines (padding 2):
 * every cell but a row's last is as wide as the widest of its column in the run of rows that have it.
 */
export function tabulate(rows: string[][]): string[] {
  const widths = rows.map((r) => r.map(() => 0));
  for (let j = 0; rows.some((r) => r.length - 1 > j); j++) {
    for (let i = 0; i < rows.length;) {
      if (rows[i]!.length - 1 <= j) {
        i++;
        continue;
      }
      let k = i;
      let w = 0;
      for (; k < rows.length && rows[k]!.length - 1 > j; k++) w = Math.max(w, rows[k]![j]!.length);
      for (let m = i; m < k; m++) widths[m]![j] = w + 2;
      i = k;
    }
  }
  return rows.map((r, i) => r.map((cell, j) => (j < r.length - 1 ? cell.padEnd(widths[i]![j]!) : cell)).join(''));
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A time as kubectl describe prints one: Go's RFC1123Z in the local time zone ("Fri, 27 Nov 2026 23:24:51 +0000"). */
export function describeTime(iso: string | undefined): string | undefined {
  if (!iso) return undefined;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const two = (n: number) => String(n).padStart(2, '0');
  const offset = -d.getTimezoneOffset();
  const zone = `${offset < 0 ? '-' : '+'}${two(Math.floor(Math.abs(offset) / 60))}${two(Math.abs(offset) % 60)}`;
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  return `${DAYS[d.getDay()]}, ${two(d.getDate())} ${MONTHS[d.getMonth()]} ${d.getFullYear()} ${time} ${zone}`;
}

function mapLines(m: Record<string, string> | undefined, indent: string): string {
  const entries = Object.entries(m ?? {});
  if (!entries.length) return '<none>';
  return entries.map(([k, v], i) => `${i ? indent : ''}${k}=${v}`).join('\n');
}

/** kubectl's probe line: "exec [cat /tmp/ok] delay=0s timeout=1s period=10s #success=1 #failure=3". */
export function probeLine(p: IProbe): string {
  let how = 'unknown';
  if (p.exec) how = `exec [${(p.exec.command ?? []).join(' ')}]`;
  else if (p.httpGet)
    how = `http-get ${p.httpGet.scheme === 'HTTPS' ? 'https' : 'http'}://${p.httpGet.host ?? ''}:${p.httpGet.port}${p.httpGet.path ?? '/'}`;
  else if (p.tcpSocket) how = `tcp-socket ${p.tcpSocket.host ?? ''}:${p.tcpSocket.port}`;
  else if (p.grpc) how = `grpc <pod>:${p.grpc.port} ${p.grpc.service ?? ''}`.trimEnd();
  const timing = `delay=${p.initialDelaySeconds ?? 0}s timeout=${p.timeoutSeconds ?? 1}s period=${p.periodSeconds ?? 10}s`;
  return `${how} ${timing} #success=${p.successThreshold ?? 1} #failure=${p.failureThreshold ?? 3}`;
}

function stateLines(lines: string[], label: string, state: IContainerState | undefined): void {
  const i = '      ';
  if (state?.running) {
    lines.push(`    ${pad(label, 14)}Running`, `${i}${pad('Started', 12)}${describeTime(state.running.startedAt) ?? ''}`);
  } else if (state?.terminated) {
    const t = state.terminated;
    lines.push(`    ${pad(label, 14)}Terminated`, `${i}${pad('Reason', 12)}${t.reason ?? ''}`);
    if (t.message) lines.push(`${i}${pad('Message', 12)}${t.message}`);
    lines.push(
      `${i}${pad('Exit Code', 12)}${t.exitCode}`,
      `${i}${pad('Started', 12)}${describeTime(t.startedAt) ?? ''}`,
      `${i}${pad('Finished', 12)}${describeTime(t.finishedAt) ?? ''}`,
    );
  } else if (state?.waiting) {
    lines.push(`    ${pad(label, 14)}Waiting`, `${i}${pad('Reason', 12)}${state.waiting.reason ?? ''}`);
    if (state.waiting.message) lines.push(`${i}${pad('Message', 12)}${state.waiting.message}`);
  } else {
    lines.push(`    ${pad(label, 14)}<none>`);
  }
}

function containerSection(lines: string[], pod: IPod, c: IContainer, s: IContainerStatus | undefined, readinessUnknown: boolean): void {
  lines.push(`  ${c.name}:`);
  const kvc = (label: string, value: string | undefined) => kv(lines, '    ', 14, label, value);
  kvc('Container ID', s?.containerID);
  kvc('Image', c.image);
  kvc('Image ID', s?.imageID || undefined);
  if (c.ports?.length)
    kvc('Ports', c.ports.map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'}${p.hostPort ? ` (host ${p.hostPort})` : ''}`).join(', '));
  if (c.command?.length) lines.push('    Command:', ...c.command.map((a) => `      ${a}`));
  if (c.args?.length) lines.push('    Args:', ...c.args.map((a) => `      ${a}`));
  stateLines(lines, 'State', s?.state);
  if (s?.lastState && Object.keys(s.lastState).length) stateLines(lines, 'Last State', s.lastState);
  kvc(
    'Ready',
    s ? `${s.ready ? 'True' : 'False'}${readinessUnknown ? ' (readiness probe result unknown: no running watch)' : ''}` : 'False',
  );
  kvc('Restart Count', String(s?.restartCount ?? 0));
  if (c.livenessProbe) kvc('Liveness', probeLine(c.livenessProbe));
  if (c.readinessProbe) kvc('Readiness', probeLine(c.readinessProbe));
  if (c.startupProbe) kvc('Startup', probeLine(c.startupProbe));
  if (c.envFrom?.length) lines.push('    Environment Variables from:', ...envFromLines(c));
  const env = envLines(pod, c);
  if (env.length) lines.push('    Environment:', ...env);
  else kvc('Environment', '<none>');
  const mounts = (c.volumeMounts ?? []).map(
    (m) => `      ${m.mountPath} from ${m.name} (${m.readOnly ? 'ro' : 'rw'}${m.subPath ? `, path "${m.subPath}"` : ''})`,
  );
  if (mounts.length) lines.push('    Mounts:', ...mounts);
  else kvc('Mounts', '<none>');
}

/** kubectl's Environment lines: values as written, references named (never a secret's value), fields resolved. */
export function envLines(pod: IPod, c: IContainer): string[] {
  const rows: string[][] = [];
  const out = { push: (name: string, ...cells: string[]) => rows.push([`      ${name}`, ...cells]) };
  for (const e of c.env ?? []) {
    const from = e.valueFrom;
    if (!from) {
      (e.value ?? '').split('\n').forEach((line, i) => out.push(i ? '' : `${e.name}:`, line));
    } else if (from.fieldRef) {
      let value = '';
      try {
        value = podFieldValue({ pod, podIPs: (pod.status?.podIPs ?? []).map((ip) => ip.ip), hostIP: pod.status?.hostIP }, from.fieldRef);
      } catch {
        // An unsupported path shows empty, as kubectl's resolver leaves it.
      }
      out.push(`${e.name}:`, `${value} (${from.fieldRef.apiVersion ?? 'v1'}:${from.fieldRef.fieldPath})`);
    } else if (from.resourceFieldRef) {
      const ref = from.resourceFieldRef;
      let value = '';
      try {
        // The container's own resources only, as kubectl: an unset limit reads 0, i.e. the node's allocatable.
        value = resourceFieldValue(
          pod,
          { ...ref, containerName: ref.containerName || c.name },
          { cpuCores: 0, memoryBytes: 0, ephemeralStorageBytes: 0 },
        );
      } catch {
        value = '';
      }
      if (value === '0' && (ref.resource === 'limits.cpu' || ref.resource === 'limits.memory')) value = 'node allocatable';
      out.push(`${e.name}:`, `${value} (${ref.resource})`);
    } else if (from.secretKeyRef) {
      out.push(
        `${e.name}:`,
        `<set to the key '${from.secretKeyRef.key}' in secret '${from.secretKeyRef.name ?? ''}'>`,
        `Optional: ${from.secretKeyRef.optional === true}`,
      );
    } else if (from.configMapKeyRef) {
      out.push(
        `${e.name}:`,
        `<set to the key '${from.configMapKeyRef.key}' of config map '${from.configMapKeyRef.name ?? ''}'>`,
        `Optional: ${from.configMapKeyRef.optional === true}`,
      );
    }
  }
  return tabulate(rows);
}

/** kubectl's "Environment Variables from" lines. */
export function envFromLines(c: IContainer): string[] {
  return tabulate(
    (c.envFrom ?? []).map((e) => {
      const ref = e.configMapRef ?? e.secretRef;
      const kind = e.configMapRef ? 'ConfigMap' : 'Secret';
      return [`      ${ref?.name ?? ''}`, `${kind}${e.prefix ? ` with prefix '${e.prefix}'` : ''}`, `Optional: ${ref?.optional === true}`];
    }),
  );
}

function clock(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
}

/** kubectl describe's sections, plus Seen By, Why and the Timeline. */
export function renderDescribe(
  pod: IPod,
  source: string,
  readinessUnknown: string[],
  timeline: TimelineEntry[],
  events: DescribedEvent[] | undefined,
  why: string | undefined,
  now: number,
): string {
  const m = podMeta(pod);
  const s = pod.status;
  const lines: string[] = [];
  const top = (label: string, value: string | undefined) => kv(lines, '', 16, label, value);
  top('Name', m.name);
  top('Namespace', m.namespace);
  top('Node', `${pod.spec?.nodeName ?? '<none>'}${s?.hostIP ? `/${s.hostIP}` : ''}`);
  top('Start Time', describeTime(s?.startTime));
  lines.push(`${pad('Labels', 16)}${mapLines(m.labels, ' '.repeat(18))}`);
  lines.push(`${pad('Annotations', 16)}${mapLines(m.annotations, ' '.repeat(18))}`);
  top('Status', displayStatus(pod, s) === s?.phase ? s?.phase : `${s?.phase ?? 'Unknown'} (${displayStatus(pod, s)})`);
  top('IP', s?.podIP);
  top('Restart Policy', pod.spec?.restartPolicy ?? 'Always');
  top('Grace Period', `${pod.spec?.terminationGracePeriodSeconds ?? 30}s`);
  top('QoS Class', s?.qosClass);
  top('Seen By', source === 'watch' ? 'the running watch' : 'the runtime (no watch answers; readiness from probes and events need one)');
  if (why) top('Why', why);
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length) {
    lines.push('Init Containers:');
    for (const c of inits)
      containerSection(
        lines,
        pod,
        c,
        s?.initContainerStatuses?.find((x) => x.name === c.name),
        readinessUnknown.includes(c.name),
      );
  }
  lines.push('Containers:');
  for (const c of pod.spec?.containers ?? [])
    containerSection(
      lines,
      pod,
      c,
      s?.containerStatuses?.find((x) => x.name === c.name),
      readinessUnknown.includes(c.name),
    );
  if (s?.ephemeralContainerStatuses?.length) {
    lines.push('Ephemeral Containers:');
    for (const e of s.ephemeralContainerStatuses) {
      const c = pod.spec?.ephemeralContainers?.find((x) => x.name === e.name) ?? { name: e.name, image: e.image };
      containerSection(lines, pod, c as IContainer, e, false);
    }
  }
  lines.push('Conditions:');
  lines.push(
    ...plainTable(
      ['Type', 'Status'],
      (s?.conditions ?? []).map((c) => [c.type, c.status]),
    )
      .split('\n')
      .map((l) => `  ${l}`),
  );
  const volumes = pod.spec?.volumes ?? [];
  lines.push(
    `Volumes:${volumes.length ? '' : '          <none>'}`,
    ...volumes.map(
      (v) =>
        `  ${v.name}: ${Object.keys(v)
          .filter((k) => k !== 'name')
          .join(', ')}`,
    ),
  );
  lines.push('Timeline:');
  if (!timeline.length) lines.push('  <none>');
  for (const t of timeline) {
    const when = t.future ? `${clock(t.at)} (in ${Math.max(0, Math.ceil((t.at - now) / 1000))}s)` : clock(t.at);
    lines.push(`  ${when}  ${t.warning ? '! ' : ''}${t.container ? `${t.container}: ` : ''}${t.what}`);
  }
  if (!events) {
    lines.push('Events:           <none> (events need a running `podctl watch`; this pod was read from the runtime)');
  } else if (!events.length) {
    lines.push('Events:           <none>');
  } else {
    lines.push('Events:');
    const rows = events.map((e) => [
      e.type,
      e.reason,
      e.count > 1 ? `${age(e.last, now)} (x${e.count} over ${age(e.first, now)})` : age(e.last, now),
      'kubelet',
      `${e.container ? `[${e.container}] ` : ''}${e.message}`,
    ]);
    const table = plainTable(['Type', 'Reason', 'Age', 'From', 'Message'], [['----', '------', '----', '----', '-------'], ...rows]);
    lines.push(...table.split('\n').map((l) => `  ${l}`));
  }
  return lines.join('\n');
}
