import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '../fakecri/index.js';
import { PODCTL_BIN, machineInfo, ms, msStats, onCleanup, stats, timeProcess, until, type BenchContext, type BenchResult } from './lib.js';

/** 5. CLI start-up: podctl --version and get pods (against a watch on an empty runtime), beside node -e 0. */
export async function cliStartup(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const runs = ctx.quick ? 5 : 20;
  const scratch = mkdtempSync(join(tmpdir(), 'podctl-bench-cli-'));
  const fake = await FakeRuntime.start({ runtimeName: 'fake' });
  const manifests = join(scratch, 'manifests');
  mkdirSync(manifests);
  const rootDir = join(scratch, 'root');
  const env = { ...process.env, CONTAINER_RUNTIME_ENDPOINT: fake.endpoint, PODCTL_LOG_ROOT: join(scratch, 'logs') };
  // A running watch with no pods: `get pods` reads its status socket.
  const watch = spawn(process.execPath, [PODCTL_BIN, 'watch', manifests, '--root-dir', rootDir, '--pleg', 'generic'], { env, stdio: 'ignore' });
  const cleanup = onCleanup('cli-startup watch and fake runtime', async () => {
    if (watch.exitCode === null) {
      const exited = new Promise((r) => watch.once('exit', r));
      watch.kill('SIGTERM');
      await exited;
    }
    await fake.stop();
    rmSync(scratch, { recursive: true, force: true });
  });
  if (!(await until(() => existsSync(join(rootDir, 'podctl.sock')), 30_000))) throw new Error('podctl watch did not open its status socket within 30 s');

  const variants = {
    node: [process.execPath, '-e', '0'],
    version: [process.execPath, PODCTL_BIN, '--version'],
    getPods: [process.execPath, PODCTL_BIN, 'get', 'pods', '-A', '--root-dir', rootDir],
  };
  const samples: Record<keyof typeof variants, number[]> = { node: [], version: [], getPods: [] };
  const errors: string[] = [];
  for (let i = -1; i < runs; i++) {
    for (const [name, [cmd, ...args]] of Object.entries(variants) as [keyof typeof variants, string[]][]) {
      const r = await timeProcess(cmd!, args, { env });
      if (r.code !== 0) errors.push(`${args.join(' ')} exited ${r.code}: ${r.stderr.trim().split('\n').pop()}`);
      else if (i >= 0) samples[name].push(r.ms);
    }
  }
  await cleanup();

  const s = { node: stats(samples.node), version: stats(samples.version), getPods: stats(samples.getPods) };
  const limit = 2 * s.node.median;
  const met = s.version.n && s.node.n ? s.version.median <= limit : undefined;
  return {
    name: 'cli-startup',
    title: 'CLI start-up',
    quick: ctx.quick,
    machine: machineInfo(),
    rows: [
      { name: 'node -e 0', value: msStats(s.node), about: 'Node itself: the floor of any Node CLI, with this environment (NODE_EXTRA_CA_CERTS is set on these machines and costs about 60 ms).' },
      { name: 'podctl --version', value: msStats(s.version), target: `<= 2 x node -e 0 = ${ms(limit)}`, met, about: 'bin/run.js --version: oclif reads the manifest, no command module is imported.' },
      { name: 'podctl get pods -A (empty)', value: msStats(s.getPods), about: 'Against a running `podctl watch` (on an empty fake runtime) that answers on its status socket: load the command, one GET /pods, print.' },
    ],
    findings:
      met === false
        ? [`podctl --version median ${ms(s.version.median)} is above 2 x node -e 0 (${ms(limit)}): oclif's own start-up (config, plugins, manifest) dominates; see the timing with NODE_DEBUG or --cpu-prof.`]
        : [],
    notes: [`${runs} runs each after one untimed round, interleaved; wall time from spawn to exit.`, ...errors.slice(0, 5).map((e) => `error: ${e}`)],
    data: { samples, stats: s },
    durationS: (Date.now() - began) / 1000,
  };
}
