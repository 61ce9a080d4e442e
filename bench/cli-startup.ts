import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorMessage } from '../src/core/errors.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../src/core/kuberuntime/labels.js';
import { REAL_ENDPOINT, criClient } from './node.js';
import { PODCTL_BIN, REPO_ROOT, machineInfo, ms, msStats, onCleanup, stats, timeProcess, until, withoutExtraCaCerts, type BenchContext, type BenchResult, type Row } from './lib.js';

/**
 * 5. CLI start-up: each command's fixed cost beside node -e 0 (--version, --help, validate and plan of
 * examples/hello.yaml, get pods against an agent with no pods), interleaved, 20 runs each. The agent and
 * plan with no agent read the embedded containerd, as a user's podctl does (the in-memory fake's gRPC
 * server answered a plan's three CRI calls in twice containerd's time).
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
  if (!(await until(() => existsSync(join(rootDir, 'podctl.sock')), 30_000))) throw new Error('podctl watch did not open its status socket within 30 s');

  const hello = join(REPO_ROOT, 'examples', 'hello.yaml');
  const variants = {
    node: [process.execPath, '-e', '0'],
    // podctl as a user runs it: the executable, through its launcher line.
    version: [PODCTL_BIN, '--version'],
    help: [PODCTL_BIN, '--help'],
    validate: [PODCTL_BIN, 'validate', hello],
    // plan asks the agent, which reads the runtime: it exits 2, "would create".
    plan: [PODCTL_BIN, 'plan', hello, '--root-dir', rootDir],
    // With no agent on the root dir, plan reads the runtime itself over the CRI.
    planDirect: [PODCTL_BIN, 'plan', hello, '--root-dir', join(scratch, 'no-agent')],
    getPods: [PODCTL_BIN, 'get', 'pods', '-A', '--root-dir', rootDir],
  };
  type Variant = keyof typeof variants;
  const okCodes: Partial<Record<Variant, number[]>> = { plan: [2], planDirect: [2] };
  // Each variant in the bench's environment, and without NODE_EXTRA_CA_CERTS when it has it (see withoutExtraCaCerts).
  const bareEnv = withoutExtraCaCerts(env);
  type Env = 'given' | 'bare';
  const envs: [Env, NodeJS.ProcessEnv][] = bareEnv ? [['given', env], ['bare', bareEnv]] : [['given', env]];
  const samples = Object.fromEntries(envs.map(([e]) => [e, Object.fromEntries(Object.keys(variants).map((k) => [k, [] as number[]]))])) as Record<Env, Record<Variant, number[]>>;
  const errors: string[] = [];
  for (let i = -1; i < runs; i++) {
    for (const [name, [cmd, ...args]] of Object.entries(variants) as [Variant, string[]][]) {
      for (const [e, vars] of envs) {
        const r = await timeProcess(cmd!, args, { env: vars });
        if (r.code !== 0 && !okCodes[name]?.includes(r.code ?? -1)) errors.push(`${args.join(' ')} exited ${r.code}: ${r.stderr.trim().split('\n').pop()}`);
        else if (i >= 0) samples[e][name].push(r.ms);
      }
    }
  }
  await cleanup();

  const statsOf = (e: Env) => Object.fromEntries(Object.entries(samples[e]).map(([k, v]) => [k, stats(v)])) as Record<Variant, ReturnType<typeof stats>>;
  const s = Object.fromEntries(envs.map(([e]) => [e, statsOf(e)])) as Record<Env, Record<Variant, ReturnType<typeof stats>>>;
  const commands: { key: Variant; name: string; about: string }[] = [
    { key: 'version', name: 'podctl --version', about: 'oclif is handed package.json and reads the manifest (one plugin, podctl); no command module is loaded.' },
    { key: 'help', name: 'podctl --help', about: "oclif's help from the manifest; no command module is loaded." },
    { key: 'validate', name: 'podctl validate examples/hello.yaml', about: 'Reads, defaults and validates one pod (the API validators); no gRPC.' },
    { key: 'plan', name: 'podctl plan examples/hello.yaml', about: 'Reads the manifest and hands it to the agent on the root dir (on the same runtime, POST /v1/manifests/plan), which reads and validates it as the command would and plans the pod against the runtime; the command prints what would change, loading neither the validators nor gRPC.' },
    {
      key: 'planDirect',
      name: 'podctl plan examples/hello.yaml (no agent)',
      about: "The same with no agent on the root dir: the command validates the manifest itself (the API validators load here) and reads the runtime over the CRI (the CRI client, its message types and its HTTP/2 client over node:net).",
    },
    { key: 'getPods', name: 'podctl get pods -A (empty)', about: 'The agent (a `podctl watch` with no pods, on the embedded containerd) answers GET /v1/podview on its socket; no gRPC.' },
  ];
  const rows: Row[] = [];
  const findings: string[] = [];
  for (const [e] of envs) {
    const x = s[e];
    const suffix = e === 'bare' ? ' (without NODE_EXTRA_CA_CERTS)' : '';
    // podctl starts Node without NODE_EXTRA_CA_CERTS (bin/run.js's launcher line): where the environment has
    // it, every row is held to 2 x node -e 0 without it, the lower of the two floors.
    const floor = bareEnv ? s.bare.node : x.node;
    const limit = 2 * floor.median;
    const floorName = `node -e 0${bareEnv ? ' (without NODE_EXTRA_CA_CERTS)' : ''}`;
    rows.push({
      name: `node -e 0${suffix}`,
      value: msStats(x.node),
      about: e === 'bare' ? "Node itself, with the bench's environment less NODE_EXTRA_CA_CERTS." : `Node itself: the floor of any Node CLI, with this environment${bareEnv ? ' (NODE_EXTRA_CA_CERTS set)' : ' (no NODE_EXTRA_CA_CERTS)'}.`,
    });
    for (const r of commands) {
      rows.push({
        name: `${r.name}${suffix}`,
        value: `${msStats(x[r.key])} (${floor.median ? (x[r.key].median / floor.median).toFixed(2) : '?'} x ${floorName})`,
        target: `<= 2 x ${floorName} = ${ms(limit)}`,
        met: x[r.key].n && floor.n ? x[r.key].median <= limit : undefined,
        about: e === 'bare' ? 'The same command, without NODE_EXTRA_CA_CERTS.' : r.about,
      });
    }
    const missed = commands.filter((r) => x[r.key].n && floor.n && x[r.key].median > limit);
    if (missed.length) {
      const loaded = [['main', 'src/main.ts'], ['validate', 'src/commands/validate.ts'], ['plan', 'src/commands/plan.ts'], ['get pods', 'src/commands/get/pods.ts']].map(([command, entry]) => ({ command: command!, ...loadedBeforeRun(entry!) }));
      findings.push(
        `${missed.map((r) => `${r.name}${suffix} (${ms(x[r.key].median)})`).join(', ')} above 2 x ${floorName} (${ms(limit)}): what is left is reading the files a command loads before it runs and deserializing their V8 code caches (${loaded.map((l) => `${l.command}: ${l.files} files, ${Math.round(l.bytes / 1024)} KB`).join('; ')}) then evaluating them and the command's own work; see the profile with node --cpu-prof bin/run.js ... (V8 takes the caches under --cpu-prof; V8 flags such as --no-opt make it reject them and compile)`,
      );
    }
  }
  if (bareEnv) {
    const given = s.given.node.median;
    const bare = s.bare.node.median;
    findings.push(
      `NODE_EXTRA_CA_CERTS is set here: Node then parses its bundled root certificates and the file's at every start, before any JavaScript runs (OpenSSL 3 parses slowly; nodejs/node#40524). node -e 0 takes ${ms(given)} with it and ${ms(bare)} without. podctl's launcher line (bin/run.js) starts Node without it, puts it back for the processes podctl starts, and has podctl's own TLS client (a manifest URL over https) trust the file: podctl's rows with it pay none of the ${ms(given - bare)}, so every row, with it or without, is held to 2 x node -e 0 without it.`,
    );
  }
  return {
    name: 'cli-startup',
    title: 'CLI start-up',
    quick: ctx.quick,
    machine: machineInfo(),
    rows,
    findings,
    notes: [
      `${runs} runs each after one untimed round, interleaved${bareEnv ? ', each with and without NODE_EXTRA_CA_CERTS' : ''}; wall time from spawn to exit.`,
      `The agent and plan with no agent read the embedded containerd (${REAL_ENDPOINT}), which held ${podctlPods} podctl pod(s) at the start.`, ...errors.slice(0, 5).map((e) => `error: ${e}`)],
    data: { samples, stats: s },
    durationS: (Date.now() - began) / 1000,
  };
}

/** The bundle's files an entry imports statically, so loads before it runs, and their size: from the build's metafile. */
function loadedBeforeRun(entry: string): { files: number; bytes: number } {
  const { outputs } = JSON.parse(readFileSync(join(REPO_ROOT, 'dist/cli/meta.json'), 'utf8')) as { outputs: Record<string, { entryPoint?: string; bytes: number; imports: { path: string; kind: string }[] }> };
  const start = Object.keys(outputs).find((o) => outputs[o]!.entryPoint === entry);
  if (!start) return { files: 0, bytes: 0 };
  const seen = new Set([start]);
  const queue = [start];
  while (queue.length) {
    for (const i of outputs[queue.shift()!]!.imports) {
      if (i.kind === 'import-statement' && outputs[i.path] && !seen.has(i.path)) {
        seen.add(i.path);
        queue.push(i.path);
      }
    }
  }
  return { files: seen.size, bytes: [...seen].reduce((n, o) => n + outputs[o]!.bytes, 0) };
}
