import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, RESULTS_DIR, type BenchResult } from './lib.js';
import { ALL_AT_ONCE_DIAGNOSIS, DIAGNOSES, PREAMBLE } from './findings.js';

const ORDER = [
  'start-latency',
  'detection',
  'scale-fake',
  'scale-real',
  'cli-startup',
  'kubeapi-get',
  'kubeapi-load',
  'kubeapi-exec',
  'kubeapi-portforward',
  'soak',
];

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** (Re)writes BENCHMARKS.md at the repository root from bench/results/*.json. */
export function writeReport(): string {
  const results = ORDER.map((n) => join(RESULTS_DIR, `${n}.json`))
    .filter((f) => existsSync(f))
    .map((f) => JSON.parse(readFileSync(f, 'utf8')) as BenchResult);
  const out: string[] = [PREAMBLE.trim(), ''];
  const first = results[0]?.machine;
  if (first) {
    out.push(
      '## Machine of the latest results',
      '',
      `${first.cores} cores (${first.cpuModel}), ${Math.round(first.memoryMB / 1024)} GB, ${first.platform}, Node ${first.node}.`,
      '',
    );
  }
  const allFindings: string[] = [];
  for (const r of results) {
    out.push(
      `## ${r.title}`,
      '',
      `\`bench/results/${r.name}.json\`: ${r.machine.date.slice(0, 16).replace('T', ' ')} UTC, ${r.quick ? '**quick mode**' : 'full mode'}, ${Math.round(r.durationS)} s${r.machine.runtime ? `, runtime ${r.machine.runtime}` : ''}, load average at the end ${(r.machine.loadavg ?? []).join(' / ')}.`,
      '',
    );
    out.push('| measurement | value | target | met |', '| --- | --- | --- | --- |');
    for (const row of r.rows)
      out.push(
        `| ${cell(row.name)} | ${cell(row.value)} | ${cell(row.target ?? '')} | ${row.met === undefined ? '' : row.met ? 'met' : '**missed**'} |`,
      );
    out.push('', 'What each row measures:', '');
    for (const row of r.rows) if (row.about) out.push(`- *${row.name}*: ${row.about}`);
    if (r.notes.length) out.push('', ...r.notes.map((n) => `- ${n}`));
    out.push('');
    for (const f of r.findings) allFindings.push(`**${r.name}**: ${f}`);
    if (Object.keys((r.data.allAtOnce as Record<string, string> | undefined) ?? {}).length)
      allFindings.push(`**${r.name}, all at once** (diagnosis): ${ALL_AT_ONCE_DIAGNOSIS}`);
    for (const row of r.rows) {
      const d = row.met === false ? DIAGNOSES[`${r.name}:${row.name.replace(/^(\d+ pods: |\[\w+\] )/, '')}`] : undefined;
      if (d) allFindings.push(`**${r.name}, ${row.name}** (diagnosis): ${d}`);
    }
  }
  out.push('## Findings: targets missed', '');
  if (allFindings.length === 0) out.push('None in the latest results.');
  else out.push(...allFindings.map((f) => `- ${f}`));
  out.push('');
  const file = join(REPO_ROOT, 'BENCHMARKS.md');
  writeFileSync(file, out.join('\n'));
  return file;
}
