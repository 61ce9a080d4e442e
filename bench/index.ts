import { cliStartup } from './cli-startup.js';
import { detection } from './detection.js';
import { kubeapiExec } from './kubeapi-exec.js';
import { kubeapiGet } from './kubeapi-get.js';
import { kubeapiLoad } from './kubeapi-load.js';
import { kubeapiPortforward } from './kubeapi-portforward.js';
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
  'kubeapi-get': kubeapiGet,
  'kubeapi-load': kubeapiLoad,
  'kubeapi-exec': kubeapiExec,
  'kubeapi-portforward': kubeapiPortforward,
  // Long (30 min): run it on its own, `npm run bench -- --only soak`.
  soak,
};

const USAGE = `usage: npm run bench [-- --quick] [-- --only NAME[,NAME]] [-- --pods N[,N]] [-- --pleg generic|auto]
  --quick   fewer runs and smaller scales (a smoke run of a few minutes)
  --only    run just these: ${Object.keys(BENCHMARKS).join(', ')} (soak, 30 min, runs only when named)
  --pods N[,N]  scale-fake: only these scales (of 100, 1000, 5000)
  --pleg generic|auto  scale-fake: only this PLEG's run at 5,000 pods
  --no-report  leave BENCHMARKS.md as it is
  --report-only  regenerate BENCHMARKS.md from bench/results/*.json and exit
Benchmarks never fail on time: misses are printed as findings.`;

function parseArgs(argv: string[]): { quick: boolean; only: string[]; report: boolean; pods?: number[]; pleg?: 'generic' | 'auto' } {
  // The soak takes 30 minutes: only when asked for by name.
  const out: ReturnType<typeof parseArgs> = { quick: false, only: Object.keys(BENCHMARKS).filter((n) => n !== 'soak'), report: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') out.quick = true;
    else if (a === '--no-report') out.report = false;
    else if (a === '--report-only') {
      console.log(`wrote ${writeReport()}`);
      process.exit(0);
    } else if (a === '--pods' || a.startsWith('--pods=')) {
      const value = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      const pods = (value ?? '').split(',').filter(Boolean).map(Number);
      if (pods.length === 0 || pods.some((n) => ![100, 1000, 5000].includes(n)))
        throw new Error(`--pods: "${value}" is not a list of 100, 1000, 5000`);
      out.pods = pods;
    } else if (a === '--pleg' || a.startsWith('--pleg=')) {
      const value = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (value !== 'generic' && value !== 'auto') throw new Error(`--pleg: "${value}" is neither generic nor auto`);
      out.pleg = value;
    } else if (a === '--only' || a.startsWith('--only=')) {
      const value = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      const names = (value ?? '').split(',').filter(Boolean);
      const unknown = names.filter((n) => !(n in BENCHMARKS));
      if (names.length === 0 || unknown.length)
        throw new Error(
          `--only: unknown benchmark "${unknown.join(', ') || value}"; expected one or more of ${Object.keys(BENCHMARKS).join(', ')}`,
        );
      out.only = names;
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

  const ctx: BenchContext = { quick: args.quick, log, pods: args.pods, pleg: args.pleg };
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
