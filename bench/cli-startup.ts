import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorMessage } from '../src/core/errors.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../src/core/kuberuntime/labels.js';
import { REAL_ENDPOINT, criClient } from './node.js';
import {
  PODCTL_BIN,
  REPO_ROOT,
  machineInfo,
  ms,
  msStats,
  onCleanup,
  stats,
  timeProcess,
  until,
  type BenchContext,
  type BenchResult,
  type Row,
} from './lib.js';

/**
 * 5. CLI start-up: each command's fixed cost beside node -e 0 (--version, --help, validate, plan and get pods with
 * and without an agent), interleaved, 20 runs each, in the environment as it is (NODE_EXTRA_CA_CERTS included when
 * set: Node and podctl pay for it alike). The agent and the commands with no agent read the embedded containerd, as a
 * user's podctl does. A minimal oclif CLI of one command, unbundled, gives the scale of oclif's own start.
 */
export async function cliStartup(ctx: BenchContext): Promise<BenchResult> {
  const began = Date.now();
  const runs = ctx.quick ? 5 : 20;
  const client = criClient(REAL_ENDPOINT);
  try {
    await client.version();
  } catch (err) {
    client.close();
    throw new Error(`the embedded runtime does not answer on ${REAL_ENDPOINT} (${errorMessage(err)}): run \`podctl runtime up\` first`);
  }
  // What the agent lists for get pods -A: podctl's pods on the runtime, none unless another run left some.
  const podctlPods = (await client.listPodSandbox({ labelSelector: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } })).length;
  client.close();
  const scratch = mkdtempSync(join(tmpdir(), 'podctl-bench-cli-'));
  const manifests = join(scratch, 'manifests');
  mkdirSync(manifests);
  const rootDir = join(scratch, 'root');
  const noAgent = join(scratch, 'no-agent');
  const miniOclif = writeMinimalOclifCli(join(scratch, 'mini'));
  const env = { ...process.env, CONTAINER_RUNTIME_ENDPOINT: REAL_ENDPOINT, PODCTL_LOG_ROOT: join(scratch, 'logs') };
  // A running watch with no pods: `get pods` reads its status socket, plan posts to it.
  const watch = spawn(process.execPath, [PODCTL_BIN, 'watch', manifests, '--root-dir', rootDir], { env, stdio: 'ignore' });
  const cleanup = onCleanup('cli-startup watch', async () => {
    if (watch.exitCode === null) {
      const exited = new Promise((r) => watch.once('exit', r));
      watch.kill('SIGTERM');
      await exited;
    }
    rmSync(scratch, { recursive: true, force: true });
  });
  if (!(await until(() => existsSync(join(rootDir, 'podctl.sock')), 30_000)))
    throw new Error('podctl watch did not open its status socket within 30 s');

  const hello = join(REPO_ROOT, 'examples', 'hello.yaml');
  const variants = {
    node: [process.execPath, '-e', '0'],
    miniOclif: [process.execPath, miniOclif, 'hello'],
    // podctl as a user runs it: the executable.
    version: [PODCTL_BIN, '--version'],
    help: [PODCTL_BIN, '--help'],
    validate: [PODCTL_BIN, 'validate', hello],
    // plan asks the agent, which reads the runtime: it exits 2, "would create".
    plan: [PODCTL_BIN, 'plan', hello, '--root-dir', rootDir],
    getPods: [PODCTL_BIN, 'get', 'pods', '-A', '--root-dir', rootDir],
    // With no agent on the root dir, the command reads the runtime itself over the CRI (gRPC).
    planDirect: [PODCTL_BIN, 'plan', hello, '--root-dir', noAgent],
    getPodsDirect: [PODCTL_BIN, 'get', 'pods', '-A', '--root-dir', noAgent],
  };
  type Variant = keyof typeof variants;
  const okCodes: Partial<Record<Variant, number[]>> = { plan: [2], planDirect: [2] };
  const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, [] as number[]])) as Record<Variant, number[]>;
  const errors: string[] = [];
  for (let i = -1; i < runs; i++) {
    for (const [name, [cmd, ...args]] of Object.entries(variants) as [Variant, string[]][]) {
      const r = await timeProcess(cmd!, args, { env });
      if (r.code !== 0 && !okCodes[name]?.includes(r.code ?? -1))
        errors.push(`${args.join(' ')} exited ${r.code}: ${r.stderr.trim().split('\n').pop()}`);
      else if (i >= 0) samples[name].push(r.ms);
    }
  }
  await cleanup();

  const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)])) as Record<Variant, ReturnType<typeof stats>>;
  const extraCa = process.env.NODE_EXTRA_CA_CERTS !== undefined;
  const commands: { key: Variant; name: string; factor: number; about: string }[] = [
    {
      key: 'version',
      name: 'podctl --version',
      factor: 2.5,
      about: "oclif's execute: Config.load with the explicit command strategy and oclif's manifest; no command module is loaded.",
    },
    { key: 'help', name: 'podctl --help', factor: 2.5, about: "oclif's help from the manifest; no command module is loaded." },
    {
      key: 'validate',
      name: 'podctl validate examples/hello.yaml',
      factor: 2.5,
      about: 'Reads, defaults and validates one pod (the API validators); no gRPC.',
    },
    {
      key: 'plan',
      name: 'podctl plan examples/hello.yaml',
      factor: 2.5,
      about:
        'Hands the manifest to the agent on the root dir (POST on its socket, node:http), which reads, validates and plans it ' +
        'against the runtime; no gRPC in the command.',
    },
    {
      key: 'getPods',
      name: 'podctl get pods -A (empty)',
      factor: 2.5,
      about: 'The agent (a `podctl watch` with no pods, on the embedded containerd) answers GET /v1/podview on its socket; no gRPC.',
    },
    {
      key: 'planDirect',
      name: 'podctl plan examples/hello.yaml (no agent)',
      factor: 3,
      about:
        'No agent on the root dir: the command validates the manifest itself and reads the runtime over the CRI (@grpc/grpc-js ' +
        'and the static CRI codecs).',
    },
    {
      key: 'getPodsDirect',
      name: 'podctl get pods -A (no agent)',
      factor: 3,
      about: "No agent on the root dir: the command lists podctl's pods from the runtime over the CRI (@grpc/grpc-js).",
    },
  ];
  const floor = s.node;
  const floorName = 'node -e 0';
  const rows: Row[] = [
    {
      name: floorName,
      value: msStats(floor),
      about: `Node itself: the floor of any Node CLI, in this environment (NODE_EXTRA_CA_CERTS ${extraCa ? 'set' : 'not set'}).`,
    },
    {
      name: 'minimal oclif CLI, one command (unbundled)',
      value: `${msStats(s.miniOclif)} (${ratio(s.miniOclif.median, floor.median)} x ${floorName})`,
      about:
        "For scale: a package with @oclif/core and one command that prints a line, found by oclif's default pattern strategy, no manifest, no bundle.",
    },
  ];
  const findings: string[] = [];
  for (const r of commands) {
    const limit = r.factor * floor.median;
    const met = s[r.key].n && floor.n ? s[r.key].median <= limit : undefined;
    rows.push({
      name: r.name,
      value: `${msStats(s[r.key])} (${ratio(s[r.key].median, floor.median)} x ${floorName})`,
      target: `<= ${r.factor} x ${floorName} = ${ms(limit)}`,
      met,
      about: r.about,
    });
    if (met === false) findings.push(`${r.name}: median ${ms(s[r.key].median)}, above ${r.factor} x ${floorName} (${ms(limit)}).`);
  }
  return {
    name: 'cli-startup',
    title: 'CLI start-up',
    quick: ctx.quick,
    machine: machineInfo(),
    rows,
    findings,
    notes: [
      `${runs} runs each after one untimed round, interleaved; wall time from spawn to exit; the environment as it is (NODE_EXTRA_CA_CERTS ${extraCa ? 'set' : 'not set'}), for Node and podctl alike.`,
      `The agent and the commands with no agent read the embedded containerd (${REAL_ENDPOINT}), which held ${podctlPods} podctl pod(s) at the start.`,
      ...errors.slice(0, 5).map((e) => `error: ${e}`),
    ],
    data: { samples, stats: s },
    durationS: (Date.now() - began) / 1000,
  };
}

function ratio(value: number, floor: number): string {
  return floor ? (value / floor).toFixed(2) : '?';
}

/** A one-command oclif CLI in `dir`, resolving @oclif/core from podctl's node_modules: the launcher's path. */
function writeMinimalOclifCli(dir: string): string {
  mkdirSync(join(dir, 'commands'), { recursive: true });
  mkdirSync(join(dir, 'bin'));
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'mini', version: '1.0.0', type: 'module', oclif: { bin: 'mini', commands: './commands' } }),
  );
  writeFileSync(
    join(dir, 'commands', 'hello.js'),
    "import { Command } from '@oclif/core';\nexport default class Hello extends Command {\n  static description = 'say hello';\n  async run() {\n    this.log('hello');\n  }\n}\n",
  );
  const bin = join(dir, 'bin', 'run.js');
  writeFileSync(bin, "import { execute } from '@oclif/core';\nawait execute({ dir: import.meta.url });\n");
  return bin;
}
