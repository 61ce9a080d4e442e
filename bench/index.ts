import { cliStartup } from './cli-startup.js';
import { detection } from './detection.js';
import { renderRows, runCleanups, writeResult, type BenchContext, type BenchResult } from './lib.js';
import { writeReport } from './report.js';
import { scaleFake } from './scale-fake.js';
import { scaleReal } from './scale-real.js';
import { soak } from './soak.js';
import { startLatency } from './start-latency.js';

const BENCHMARKS: Record<string, (ctx: BenchContext) => Promise<BenchResult>> = {
  'cli-startup': cliStartup,
  'start-latency': startLatency,
  detection,
  'scale-fake': scaleFake,
  'scale-real': scaleReal,
  // Long (30 min): run it on its own, `npm run bench -- --only soak`.
  soak,
};

const USAGE = `usage: npm run bench [-- --quick] [-- --only NAME[,NAME]] [-- --scales N[,N]]
  --quick   fewer runs and smaller scales (a smoke run of a few minutes)
  --scales  scale-fake at these pod counts only (e.g. 5000: the target size, without the smaller runs)
  --only    run just these: ${Object.keys(BENCHMARKS).join(', ')} (soak, 30 min, runs only when named)
  --no-report  leave BENCHMARKS.md as it is
  --report-only  regenerate BENCHMARKS.md from bench/results/*.json and exit
Benchmarks never fail on time: misses are printed as findings.`;

function parseArgs(argv: string[]): { quick: boolean; only: string[]; report: boolean; scales?: number[] } {
  // The soak takes 30 minutes: only when asked for by name.
  const out: ReturnType<typeof parseArgs> = { quick: false, only: Object.keys(BENCHMARKS).filter((n) => n !== 'soak'), report: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') out.quick = true;
    else if (a === '--no-report') out.report = false;
    else if (a === '--report-only') {
      console.log(`wrote ${writeReport()}`);
      process.exit(0);
    }
    else if (a === '--only' || a.startsWith('--only=')) {
      const value = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      const names = (value ?? '').split(',').filter(Boolean);
      const unknown = names.filter((n) => !(n in BENCHMARKS));
      if (names.length === 0 || unknown.length) throw new Error(`--only: unknown benchmark "${unknown.join(', ') || value}"; expected one or more of ${Object.keys(BENCHMARKS).join(', ')}`);
      out.only = names;
    } else if (a === '--scales' || a.startsWith('--scales=')) {
      const value = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      const scales = (value ?? '').split(',').filter(Boolean).map(Number);
      if (scales.length === 0 || scales.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--scales: expected pod counts such as 5000 or 100,1000, not "${value}"`);
      out.scales = scales;
    } else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument "${a}"\n${USAGE}`);
  }
  return out;
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  const log = (line: string) => console.log(line);
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) process.exit(130);
    interrupted = true;
    log(`\n${signal}: cleaning up every pod and process the benchmarks made (again to stop waiting)`);
    void runCleanups(log).finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const ctx: BenchContext = { quick: args.quick, scales: args.scales, log };
  for (const name of args.only) {
    if (interrupted) break;
    log(`\n== ${name}${args.quick ? ' (quick)' : ''}`);
    try {
      const result = await BENCHMARKS[name]!(ctx);
      log(`\n${result.title}\n${renderRows(result.rows)}`);
      for (const n of result.notes) log(`  note: ${n}`);
      for (const f of result.findings) log(`  finding: ${f}`);
      log(`  wrote ${writeResult(result)} (${result.durationS.toFixed(0)} s)`);
    } catch (err) {
      if (interrupted) break;
      log(`${name} could not run: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    } finally {
      await runCleanups(log);
    }
  }
  if (interrupted) return;
  if (args.report) log(`\nwrote ${writeReport()}`);
  // Lingering gRPC channels must not keep the process alive.
  process.exit(0);
}

void main();
