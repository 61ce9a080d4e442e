import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Module, createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { COMMANDS } from '../../src/commands.js';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');

interface Meta {
  outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown>; imports: { path: string; kind: string }[] }>;
}

const meta = (): Meta => JSON.parse(readFileSync(join(ROOT, 'dist/cli/meta.json'), 'utf8')) as Meta;

/** A metafile input by its path from the root: esbuild names a package's files where node_modules resolves, which a symlink moves. */
const inputOf = <T>(inputs: Record<string, T>, path: string): T | undefined => inputs[path] ?? Object.entries(inputs).find(([k]) => k.endsWith(`/${path}`))?.[1];

/** The chunks these chunks load: themselves and the chunks they import statically, transitively. */
function withStaticImports(outputs: Meta['outputs'], chunks: string[]): string[] {
  const seen = new Set(chunks);
  const queue = [...chunks];
  while (queue.length) {
    for (const imp of outputs[queue.shift()!]!.imports) {
      if (imp.kind !== 'import-statement' || seen.has(imp.path) || !outputs[imp.path]) continue;
      seen.add(imp.path);
      queue.push(imp.path);
    }
  }
  return [...seen];
}

/** The chunks a bundle entry loads before it runs: its chunk and the chunks those import statically. */
function chunksAtStart(entry: string): string[] {
  const { outputs } = meta();
  const start = Object.keys(outputs).find((o) => outputs[o]!.entryPoint === entry);
  assert.ok(start, `no chunk for ${entry}: run npm run build`);
  return withStaticImports(outputs, [start]);
}

/** Every source file a bundle entry loads before it runs. */
function loadedAtStart(entry: string): string[] {
  const { outputs } = meta();
  return chunksAtStart(entry).flatMap((o) => Object.keys(outputs[o]!.inputs));
}

/** The source files an entry's import()s load, with what they import statically: loaded when a path of it is taken. */
function loadedOnDemand(entry: string): string[] {
  const { outputs } = meta();
  const targets = chunksAtStart(entry).flatMap((o) => outputs[o]!.imports.filter((i) => i.kind === 'dynamic-import' && outputs[i.path]).map((i) => i.path));
  return withStaticImports(outputs, targets).flatMap((o) => Object.keys(outputs[o]!.inputs));
}

test('the command index lists every command in src/commands, by its oclif id, and the help and autocomplete commands', () => {
  const own = readdirSync(join(ROOT, 'src/commands'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(join(ROOT, 'src/commands'), join(e.parentPath, e.name)).replace(/\.ts$/, '').replace(/\/index$/, '').replaceAll('/', ':'));
  const plugins = ['plugin-help', 'plugin-autocomplete'].flatMap((p) => Object.keys((JSON.parse(readFileSync(join(ROOT, `node_modules/@oclif/${p}/oclif.manifest.json`), 'utf8')) as { commands: object }).commands));
  assert.deepEqual(Object.keys(COMMANDS).sort(), [...own, ...plugins].sort());
});

test('oclif loads no plugin but podctl: help and autocomplete are commands of its index, in its manifest', () => {
  const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { oclif: Record<string, unknown> };
  assert.equal(pjson.oclif.plugins, undefined);
  const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, { pluginName: string }> };
  for (const id of ['help', 'autocomplete', 'autocomplete:script', 'autocomplete:create']) assert.equal(manifest.commands[id]?.pluginName, 'podctl', id);
});

test('the CLI starts on oclif and the command index alone: no command, gRPC or validator is loaded before a command runs', () => {
  assert.ok(existsSync(join(ROOT, 'dist/cli/main.cjs')));
  const atStart = [...loadedAtStart('src/main.ts'), ...loadedAtStart('src/commands.ts')];
  assert.deepEqual(atStart.filter((f) => /src\/commands\/|grpc-js|kubernetes-models|protobufjs|plugin-help|plugin-autocomplete/.test(f)), []);
  // oclif's logger gets a stand-in for the debug package, which requires it only when DEBUG is set.
  assert.deepEqual(atStart.filter((f) => /node_modules\/debug\//.test(f)), []);
  // The not-found hook (with readline and fastest-levenshtein) loads when oclif runs it, for an unknown command.
  assert.deepEqual(atStart.filter((f) => /src\/hooks\/|fastest-levenshtein/.test(f)), []);
  // A podctl command runs without oclif's Config (src/cli/direct.ts): its loading, main, execute, help, ux and errors
  // (with their colours and wrapping) come later, if ever.
  assert.deepEqual(
    atStart.filter((f) => /@oclif\/core\/lib\/(config\/config|config\/plugin|main|execute|help\/index|help\/formatter|ux\/index|errors\/errors\/pretty-print)\.js$|node_modules\/(ejs|ansis|wrap-ansi|color-convert|clean-stack)\//.test(f)),
    [],
  );
  // Its platform check (wsl-only) answers from src/cli/wsl.ts, without is-wsl and its helpers.
  const wsl = Object.values(meta().outputs).find((o) => 'wsl-only:wsl-utils' in o.inputs);
  assert.deepEqual(Object.keys(wsl?.inputs ?? {}).sort(), ['src/cli/wsl.ts', 'wsl-only:wsl-utils']);
});

test("oclif's debug output is there with DEBUG set: the debug package is required from node_modules then", () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), '--version'], { encoding: 'utf8', env: { ...process.env, DEBUG: 'oclif:*' } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /oclif:main process\.execPath:/);
  assert.match(r.stderr, /oclif:config/);
  const quiet = spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), '--version'], { encoding: 'utf8', env: { ...process.env, DEBUG: '' } });
  assert.equal(quiet.stderr, '');
});

test('the CLI is CommonJS loaded with the code caches the build wrote: every file validate loads takes its cache, and is ASCII only', () => {
  const loaderUrl = pathToFileURL(join(ROOT, 'dist/src/cli/code-cache.js')).href;
  // In a process of its own, with Node's default flags, as bin/run.js runs: V8 takes a cache only from the same flags.
  const script = `import { CodeCacheLoader } from ${JSON.stringify(loaderUrl)};
process.stdout.write = () => true;
const l = new CodeCacheLoader(${JSON.stringify(join(ROOT, 'dist/cli'))});
await l.require(${JSON.stringify(join(ROOT, 'dist/cli/cli.cjs'))}).main(${JSON.stringify(ROOT)}, ['validate', ${JSON.stringify(join(ROOT, 'examples/hello.yaml'))}]);
process.stderr.write(JSON.stringify([...l.loaded].map(([f, v]) => [f, v.cache])));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const loaded = JSON.parse(r.stderr) as [string, string][];
  assert.ok(loaded.some(([f]) => /\/validate-\w+\.cjs$/.test(f)), 'the validate command came from the loader');
  assert.ok(!loaded.some(([f]) => /oclif-deferred|\/execute-\w+\.cjs$/.test(f)), "validate ran without oclif's Config");
  assert.deepEqual(loaded.filter(([, cache]) => cache !== 'used'), []);
  for (const [f] of loaded) assert.ok(!/[\u0080-\u00ff]/.test(readFileSync(f, 'latin1')), `${f} is not ASCII`);
});

test("oclif's modules require what they use lazily: a start evaluates only the parts of oclif it touches", () => {
  const { inputs } = JSON.parse(readFileSync(join(ROOT, 'dist/cli/meta.json'), 'utf8')) as { inputs: Record<string, { imports: { path: string }[] }> };
  const config = inputOf(inputs, 'node_modules/@oclif/core/lib/config/config.js');
  assert.ok(config, 'oclif is bundled');
  assert.ok(config.imports.some((i) => i.path === 'scripts/lazy-require.cjs'), 'its requires go through the lazy helper');
});

test("podctl's command ids sort the same by code unit as by localeCompare, as the bundle has oclif sort them", () => {
  const ids = Object.keys((JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: object }).commands);
  assert.deepEqual([...ids].sort(), [...ids].sort((a, b) => a.localeCompare(b)));
  assert.ok(ids.every((id) => /^[a-z0-9:-]+$/.test(id)));
});

test('lazyRequire: a module is loaded on first use, called and constructed as itself, and __esModule is answered without loading it', () => {
  class Thing {
    constructor(readonly n: number) {}
  }
  const fn = Object.assign((x: number) => x * 2, { Thing });
  type Mod = typeof fn & { __esModule?: boolean };
  const lazyRequire = createRequire(import.meta.url)(join(ROOT, 'scripts/lazy-require.cjs')) as (load: () => Mod, esModule: boolean) => Mod;
  let loads = 0;
  const mod = lazyRequire(() => (loads++, fn), false);
  assert.equal(mod.__esModule, false);
  assert.equal(loads, 0);
  assert.equal(mod(21), 42);
  assert.equal(new mod.Thing(3).n, 3);
  assert.ok(new mod.Thing(1) instanceof Thing);
  assert.deepEqual(Object.keys(mod), ['Thing']);
  assert.equal(loads, 1);
});

test('a start loads no Node module it does not use: --version and validate run without child_process, tty or readline, --version without crypto', () => {
  // Node's own list of the modules it loaded, written to stderr at exit.
  const list = `data:text/javascript,process.on('exit', () => process.stderr.write(process.moduleLoadList.join('\\n')))`;
  for (const args of [['--version'], ['validate', join(ROOT, 'examples/hello.yaml')]]) {
    const r = spawnSync(process.execPath, ['--import', list, join(ROOT, 'bin/run.js'), ...args], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const loaded = r.stderr.split('\n');
    assert.ok(loaded.includes('NativeModule fs'), 'the preload lists what Node loaded');
    // tty (with net) was the debug package's, for oclif's logger; readline/promises the not-found hook's;
    // crypto: validate hashes the pod UID and config hash with node:crypto's MD5 (src/core/util/md5.ts).
    const crypto = args[0] === '--version' ? '|crypto' : '';
    assert.deepEqual(loaded.filter((m) => new RegExp(`^NativeModule (child_process|dgram|http2|zlib|tty|readline|readline/promises${crypto})$`).test(m)), [], args.join(' '));
  }
});

/** `podctl plan examples/hello.yaml` with no agent, on an empty fake runtime, with these Node options: its output, and whether it asked the runtime. */
async function planOnFakeRuntime(nodeArgs: string[], root = ROOT): Promise<{ status: number | null; stdout: string; stderr: string; askedRuntime: boolean }> {
  const { FakeRuntime } = await import('../../fakecri/index.js');
  const fake = await FakeRuntime.start({ runtimeName: 'fake' });
  const dir = mkdtempSync(join(tmpdir(), 'podctl-plan-start-'));
  try {
    const env = { ...process.env, CONTAINER_RUNTIME_ENDPOINT: fake.endpoint };
    const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [...nodeArgs, join(root, 'bin/run.js'), 'plan', join(root, 'examples/hello.yaml'), '--root-dir', dir], { env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c));
      child.stderr.on('data', (c: Buffer) => (stderr += c));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
    return { ...r, askedRuntime: (fake.calls().ListPodSandbox ?? 0) > 0 };
  } finally {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('plan with no agent reads the runtime over our own HTTP/2 client: no http2, tls, http or perf_hooks, and protobufjs without long.js', async () => {
  const list = `data:text/javascript,process.on('exit', () => process.stderr.write(process.moduleLoadList.join('\\n')))`;
  const r = await planOnFakeRuntime(['--import', list]);
  // The fake is empty: plan would create the pod (exit 2), which it learned from the runtime.
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stdout, /create sandbox/);
  assert.ok(r.askedRuntime, 'plan asked the runtime');
  const loaded = r.stderr.split('\n');
  assert.ok(loaded.includes('NativeModule net'), 'the preload lists what Node loaded');
  // Nor what the debug package (tty) and the not-found hook (readline) loaded at every start.
  assert.deepEqual(loaded.filter((m) => /^NativeModule (http2|tls|http|perf_hooks|assert|tty|readline|readline\/promises|child_process)$/.test(m)), []);
  // The CRI client's protobufjs has long.js left out: its decoders take 64-bit integers as numbers.
  const client = loadedAtStart('src/core/cri/client.ts');
  assert.ok(client.some((f) => f.endsWith('protobufjs/src/util/minimal.js')));
  assert.deepEqual(client.filter((f) => f.includes('node_modules/long/')), []);
});

test('the commands the start-up benchmark measures leave V8 nothing to optimize at exit, installed under a long path: a process waits for a background compilation before it ends', async () => {
  // V8 queues a function by the bytecode it has run, and path's normalizeString runs once per
  // character of every path it resolves: the install path's length counts. So the CLI runs from a
  // copy of what npm installs, under a path of 100 characters (a deep global prefix), wherever the
  // checkout and the temporary directory are. (V8 queues it once the path is somewhere between 120 and 190.)
  const base = mkdtempSync(join(tmpdir(), 'podctl-install-'));
  const prefix = join(base, 'lib', 'node_modules');
  const root = join(prefix, `podctl${'x'.repeat(Math.max(0, 100 - prefix.length - '/podctl'.length))}`);
  try {
    assert.ok(root.length >= 100);
    for (const entry of ['bin', 'package.json', 'oclif.manifest.json', 'dist/cli', 'examples/hello.yaml']) {
      cpSync(join(ROOT, entry), join(root, entry), { recursive: true });
    }
    // --trace-opt prints a line on stdout for each function V8 queues for optimization.
    const queued = (out: string) => out.split('\n').filter((l) => l.startsWith('[compiling method'));
    for (const args of [['--help'], ['run', '--help'], ['--version'], ['validate', join(root, 'examples/hello.yaml')]]) {
      const r = spawnSync(process.execPath, ['--trace-opt', join(root, 'bin/run.js'), ...args], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(queued(r.stdout), [], args.join(' '));
    }
    // plan with no agent, which reads the (fake) runtime: every chunk it loads is required through the loader.
    const r = await planOnFakeRuntime(['--trace-opt'], root);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stdout, /create sandbox/);
    assert.deepEqual(queued(r.stdout), []);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test("a command that asks the agent loads Node's crypto only when it hashes: agent status, with no agent there", () => {
  const list = `data:text/javascript,process.on('exit', () => process.stderr.write(process.moduleLoadList.join('\\n')))`;
  const dir = mkdtempSync(join(tmpdir(), 'podctl-crypto-'));
  try {
    const r = spawnSync(process.execPath, ['--import', list, join(ROOT, 'bin/run.js'), 'agent', 'status', '--root-dir', dir], { encoding: 'utf8' });
    assert.match(r.stderr, /no agent runs on/);
    const loaded = r.stderr.split('\n');
    assert.ok(loaded.includes('NativeModule fs'), 'the preload lists what Node loaded');
    assert.deepEqual(loaded.filter((m) => m === 'NativeModule crypto'), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // The chunks still hash when asked: the agent label of a root dir, from the bundle.
  const paths = Object.keys(meta().outputs).find((o) => Object.keys(meta().outputs[o]!.inputs).includes('src/core/node/paths.ts'));
  const { nodeAgentLabel } = createRequire(import.meta.url)(join(ROOT, paths!)) as { nodeAgentLabel: (dir: string) => string };
  assert.match(nodeAgentLabel('/tmp/somewhere'), /^watch-[0-9a-f]{10}$/);
});

test('a start reads nothing from node_modules: what oclif needs is bundled, what it only might need is left out', () => {
  // Every require() that reaches Node's loader for a package (a bare name: not a built-in module, nor a
  // path, as the entry and bin/run.js's require of the bundle's main.cjs are) is written to stderr.
  const hook = `const M = require('module'); const load = M._load; const builtin = new Set(M.builtinModules);
M._load = function (request) { if (!builtin.has(request) && !request.startsWith('node:') && !/^(\\.|\\/)/.test(request)) process.stderr.write('REQUIRED ' + request + '\\n'); return load.apply(this, arguments); };`;
  const dir = mkdtempSync(join(tmpdir(), 'podctl-bundle-'));
  try {
    writeFileSync(join(dir, 'hook.cjs'), hook);
    const runs: [string[], number][] = [[['--version'], 0], [['--help'], 0], [['help', 'validate'], 0], [['validate', join(ROOT, 'examples/hello.yaml')], 0], [['validate', '--bogus'], 2], [['valdate'], 2]];
    for (const [args, code] of runs) {
      const r = spawnSync(process.execPath, ['-r', join(dir, 'hook.cjs'), join(ROOT, 'bin/run.js'), ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
      assert.equal(r.status, code, `${args.join(' ')}: ${r.stderr}`);
      assert.deepEqual(r.stderr.split('\n').filter((l) => l.startsWith('REQUIRED ')), [], args.join(' '));
    }
    // The hook does see a package required from node_modules.
    const probe = spawnSync(process.execPath, ['-r', join(dir, 'hook.cjs'), '-e', "require('semver')"], { encoding: 'utf8', cwd: ROOT });
    assert.match(probe.stderr, /REQUIRED semver/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('each command loads only what it uses: gRPC loads when the runtime is first called, never at start', () => {
  // runtime up and down start and stop the runtime itself: they talk to it at once. Help and autocomplete are the plugins'.
  const commands = Object.keys(COMMANDS).filter((id) => !id.startsWith('runtime:') && !id.startsWith('autocomplete') && id !== 'help');
  for (const id of commands) {
    const file = `src/commands/${id.replaceAll(':', '/')}${id === 'agent' ? '/index' : ''}.ts`;
    const loaded = loadedAtStart(file);
    assert.ok(loaded.includes(file), file);
    assert.deepEqual(loaded.filter((f) => f.includes('@grpc/grpc-js')), [], `${id} loads gRPC before it calls the runtime`);
  }
  // Listing pods through the agent and validating need no runtime at all.
  assert.deepEqual(loadedAtStart('src/commands/validate.ts').filter((f) => /protobufjs|src\/core\/cri\/client|src\/core\/kubelet/.test(f)), []);
  // The validators without the string formats no Kubernetes schema names, nor ajv-i18n's other locales.
  const validate = loadedAtStart('src/commands/validate.ts');
  assert.ok(validate.some((f) => f.includes('kubernetes-models/_schemas/IoK8sApiCoreV1PodSpec')));
  // (lazy-formats: are the stand-ins that require those formats from node_modules when first checked.)
  assert.deepEqual(validate.filter((f) => !f.startsWith('lazy-formats:') && /uri-js|smtp-address-parser|nearley|\/schemes\/|ajv-formats-draft2019|is-cidr|ajv-i18n\/localize\/(?!en\/)/.test(f)), []);
  assert.deepEqual(loadedAtStart('src/commands/get/pods.ts').filter((f) => /kubernetes-models\/_schemas|js-yaml|src\/core\/kubelet|src\/core\/pod\/validate/.test(f)), []);
  // An agent answers the listing: building statuses from the runtime, the embedded runtime's set-up and
  // the table layout load only when needed (no agent, or rows to print).
  assert.deepEqual(loadedAtStart('src/commands/get/pods.ts').filter((f) => /src\/core\/podview|src\/core\/kuberuntime|src\/core\/status\/generate|src\/core\/embedded\/(index|images|config|process)|cli-table3|src\/cli\/table/.test(f)), []);
  assert.ok(loadedAtStart('src/commands/get/pods.ts').includes('src/core/embedded/probe.ts'));
  // plan asks the agent first: reading pod statuses from the runtime (and gRPC) loads only when none answers.
  assert.deepEqual(loadedAtStart('src/commands/plan.ts').filter((f) => /src\/core\/kuberuntime\/(pod-status|config)|src\/core\/cri\/client|cli-table3/.test(f)), []);
  // plan and run --detach hand the manifests to the agent as read, and it validates them: the API
  // validators (and the YAML parser) load only when no agent answers.
  for (const file of ['src/commands/plan.ts', 'src/commands/run.ts']) {
    assert.deepEqual(loadedAtStart(file).filter((f) => /kubernetes-models\/_schemas|@kubernetes-models\/validate|js-yaml|src\/core\/pod\/(validate|load)\.ts/.test(f)), [], file);
  }
  // run --detach with an agent running hands the manifests over and waits for the pods: the foreground run (its log
  // streams, the runtime's connection, the state lock, log rotation), the planner of --dry-run, the tracer of --trace
  // and the node's wiring that starts an agent load only when their path is taken.
  const handover = loadedAtStart('src/commands/run.ts');
  assert.deepEqual(
    handover.filter((f) => /src\/cli\/(run|log-stream|runtime|plan|trace|node|render|manifests)\.ts|src\/core\/(cri\/|trace\.ts|lock\.ts|logs\/|kuberuntime\/|node\/spawn\.ts|embedded\/)/.test(f)),
    [],
  );
  for (const f of ['src/cli/handover.ts', 'src/cli/detach.ts', 'src/cli/node-flags.ts', 'src/core/node/wait.ts']) assert.ok(handover.includes(f), f);
  const onDemand = loadedOnDemand('src/commands/run.ts');
  for (const f of ['src/cli/run.ts', 'src/cli/plan.ts', 'src/cli/node.ts', 'src/cli/manifests.ts']) assert.ok(onDemand.includes(f), `${f} is imported when its path is taken`);
  // The runtime path is there when called: the CRI client is its own chunk, imported on first use. It
  // speaks gRPC over an HTTP/2 client of its own (transport.ts), as does containerd's event stream:
  // grpc-js loads only for gRPC probes.
  const client = loadedAtStart('src/core/cri/client.ts');
  assert.ok(client.includes('src/core/cri/transport.ts'));
  assert.deepEqual(client.filter((f) => f.includes('@grpc/grpc-js')), []);
  // containerd-events.ts is no entry: the chunk that holds it, what that chunk imports, and what it imports on first use.
  const { outputs } = meta();
  const holder = Object.keys(outputs).filter((o) => inputOf(outputs[o]!.inputs, 'src/core/cri/containerd-events.ts'));
  assert.equal(holder.length, 1, 'containerd-events.ts is in one chunk');
  const withItsImports = withStaticImports(outputs, holder);
  const dynamic = withItsImports.flatMap((o) => outputs[o]!.imports.filter((i) => i.kind === 'dynamic-import' && outputs[i.path]).map((i) => i.path));
  const events = withStaticImports(outputs, [...withItsImports, ...dynamic]).flatMap((o) => Object.keys(outputs[o]!.inputs));
  assert.ok(events.includes('src/core/cri/transport.ts'));
  assert.ok(events.some((f) => f.includes('protobufjs/light')), 'its messages are read with protobufjs/light');
  assert.deepEqual(events.filter((f) => f.includes('@grpc/grpc-js')), [], 'containerd events load no grpc-js');
});

test('the help class renders templates with ejs and leaves plain text as it is', async () => {
  const { default: PodctlHelp } = await import('../../src/help.js');
  const help = new PodctlHelp({ bin: 'podctl', topicSeparator: ' ' } as unknown as ConstructorParameters<typeof PodctlHelp>[0]);
  assert.equal(help.render('Run <%= config.bin %> help'), 'Run podctl help');
  assert.equal(help.render('List pods: <name> & <ns>, 100% plain'), 'List pods: <name> & <ns>, 100% plain');
  const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { oclif: { helpClass?: string } };
  assert.ok(existsSync(join(ROOT, pjson.oclif.helpClass!)), 'package.json names the bundled help class');
});

test('the bundled string-width answers printable ASCII by its length, without string-width, and everything else as string-width does', () => {
  const req = createRequire(import.meta.url);
  const stringWidth = req(join(ROOT, 'node_modules/string-width')) as (s: string) => number;
  const file = join(ROOT, 'scripts/string-width-ascii.cjs');
  // The real string-width, counted: the fast path must not call it.
  const real = req.resolve('string-width', { paths: [join(ROOT, 'scripts')] });
  const cached = req.cache[real]!;
  let calls = 0;
  const saved = cached.exports;
  cached.exports = Object.assign((s: string) => (calls++, stringWidth(s)), { default: stringWidth });
  delete req.cache[file];
  try {
    const width = req(file) as (s: string) => number;
    fc.assert(fc.property(fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) }), (s) => width(s) === stringWidth(s)));
    assert.equal(calls, 0);
    for (const s of ['\u001b[1mbold\u001b[22m', '日本語', 'e\u0301', '👍 ok', 'tab\there', '']) assert.equal(width(s), stringWidth(s), JSON.stringify(s));
    assert.ok(calls > 0);
  } finally {
    cached.exports = saved;
    delete req.cache[file];
  }
  // oclif's help and the table layout get it in the bundle.
  const { inputs } = meta() as unknown as { inputs: Record<string, { imports: { path: string }[] }> };
  for (const f of ['node_modules/@oclif/core/lib/help/formatter.js', 'node_modules/wrap-ansi/index.js', 'node_modules/cli-table3/src/utils.js']) {
    assert.ok(inputOf(inputs, f)?.imports.some((i) => i.path === 'scripts/string-width-ascii.cjs'), f);
  }
});

test("the bundle's wrap-ansi wraps as wrap-ansi does, and returns text without escape codes without walking it again", () => {
  const req = createRequire(import.meta.url);
  const file = req.resolve('wrap-ansi', { paths: [join(ROOT, 'node_modules/@oclif/core/lib/help')] });
  type Wrap = (s: string, columns: number, options?: { hard?: boolean; trim?: boolean; wordWrap?: boolean }) => string;
  const wrapAnsi = req(file) as Wrap;
  const plainWrapAnsi = req(join(ROOT, 'scripts/wrap-ansi-plain.cjs')) as (source: string) => string;
  // The patched source, compiled as the module it replaces (its requires resolve from the same place).
  const patched = new Module(file) as Module & { _compile(code: string, filename: string): void; paths: string[] };
  patched.filename = file;
  patched.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(file));
  patched._compile(plainWrapAnsi(readFileSync(file, 'utf8')), file);
  const wrap = patched.exports as Wrap;
  // The shortcut is taken: a String with no escape code never reaches the character walk, which spreads it.
  const spread = String.prototype[Symbol.iterator];
  let walked = 0;
  String.prototype[Symbol.iterator] = function (this: string) {
    walked++;
    return spread.call(this);
  };
  try {
    assert.equal(wrap('podctl runs pods the way the kubelet does', 12, { hard: true }), 'podctl runs\npods the way\nthe kubelet\ndoes');
    assert.equal(walked, 0);
  } finally {
    String.prototype[Symbol.iterator] = spread;
  }
  // Same output for any text: words, runs of spaces, long words, line breaks, colours, hyperlinks, wide characters.
  const pieces = ['a', 'word', 'kubelet', 'x'.repeat(23), ' ', '  ', '\n', '\r\n', '\u001b[31m', '\u001b[39m', '\u001b[1m', '\u001b[22m', '\u001b]8;;https://example.test\u0007', '\u001b]8;;\u0007', '\u009b33m', '日本', 'e\u0301', '\t'];
  const text = fc.array(fc.constantFrom(...pieces), { maxLength: 40 }).map((p) => p.join(''));
  const options = fc.record({ hard: fc.boolean(), trim: fc.boolean(), wordWrap: fc.boolean() }, { requiredKeys: [] });
  fc.assert(fc.property(text, fc.integer({ min: 1, max: 90 }), options, (s, columns, o) => assert.equal(wrap(s, columns, o), wrapAnsi(s, columns, o))), { numRuns: 2000 });
  // oclif's help gets it in the bundle.
  const chunk = readdirSync(join(ROOT, 'dist/cli/chunks'))
    .filter((f) => f.endsWith('.cjs'))
    .map((f) => readFileSync(join(ROOT, 'dist/cli/chunks', f), 'utf8'))
    .find((t) => t.includes('node_modules/wrap-ansi/index.js'));
  assert.ok(chunk?.includes('return joined'), 'the bundled wrap-ansi has the shortcut');
});

test('the manifest read at every start leaves out flags and texts; help and autocomplete get them back, and a usage error says where the help is', () => {
  type Entry = { flags?: Record<string, unknown>; args?: Record<string, unknown>; examples?: unknown; summary?: string; description?: string };
  const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, Entry> };
  const details = JSON.parse(readFileSync(join(ROOT, 'dist/cli/oclif-help.json'), 'utf8')) as { commands: Record<string, Entry> };
  assert.deepEqual(Object.keys(details.commands).sort(), Object.keys(manifest.commands).sort());
  for (const [id, c] of Object.entries(manifest.commands)) {
    assert.deepEqual(c.flags, {}, id);
    assert.equal(c.examples, undefined, id);
    // oclif routes `a b` by the command's args (is b an argument or a word of the id?), and names topics from summaries.
    assert.ok(c.args, `${id} keeps its args`);
    assert.ok(c.summary ?? c.description, `${id} keeps a summary or its description`);
  }
  assert.ok(details.commands['get:pods']?.flags?.['all-namespaces'], 'the details hold the flags');

  const home = mkdtempSync(join(tmpdir(), 'podctl-help-'));
  try {
    const cli = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), ...args], { encoding: 'utf8', cwd: home, env: { ...process.env, NO_COLOR: '1', HOME: home } });
    for (const args of [['get', 'pods', '--help'], ['get', 'po', '--help'], ['help', 'get', 'pod']]) {
      const r = cli(...args);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /-A, --all-namespaces\s+Pods of every namespace\./, args.join(' '));
      assert.match(r.stdout, /EXAMPLES\n[\s\S]*\$ podctl get pods -A -o wide/, args.join(' '));
    }
    // The root help lists each command once (aliases such as get po still run), and the get topic says what it lists.
    const root = cli('--help');
    assert.equal(root.status, 0, root.stderr);
    assert.match(root.stdout, /^ {2}get +List pods \(kubectl's columns\), containers and images \(crictl's\)\.$/m);
    assert.deepEqual(root.stdout.match(/^ {2}get \S+/gm), ['  get containers', '  get images', '  get pods']);
    // A usage error is the error and where the help is, as kubectl says one: not the command's whole help.
    const usage = cli('validate', '--bogus');
    assert.equal(usage.status, 2);
    assert.equal(usage.stderr, "Error: Nonexistent flag: --bogus\nSee 'podctl validate --help' for usage.\n");
    const missing = cli('run');
    assert.equal(missing.status, 2);
    assert.equal(missing.stderr, "Error: Missing 1 required arg:\npaths  Manifest files or directories (- for stdin).\nSee 'podctl run --help' for usage.\n");
    const noValue = cli('get', 'pods', '--root-dir');
    assert.equal(noValue.status, 2);
    assert.equal(noValue.stderr, "Error: Flag --root-dir expects a value\nSee 'podctl get pods --help' for usage.\n");
    const option = cli('get', 'pods', '-o', 'xml');
    assert.equal(option.status, 2);
    assert.equal(option.stderr, "Error: Expected --output=xml to be one of: table, wide, json, yaml, name\nSee 'podctl get pods --help' for usage.\n");
    // plan's exit code 2 means "would change": its usage errors exit 1.
    assert.equal(cli('plan').status, 1);
    const created = cli('autocomplete', 'create');
    assert.equal(created.status, 0, created.stderr);
    const bash = readFileSync(join(home, '.cache/podctl/autocomplete/functions/bash/podctl.bash'), 'utf8');
    assert.match(bash, /get:pods --runtime-endpoint[^\n]*--all-namespaces --output --no-headers --watch/);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test("a podctl command runs without oclif's Config; help runs on the one oclif loaded at start, not one loaded again from it", () => {
  const env = { ...process.env, NO_COLOR: '1', DEBUG: 'oclif:*' };
  const r = spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), 'validate', join(ROOT, 'examples/hello.yaml')], { encoding: 'utf8', env });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^valid: 1 pod\(s\)/);
  assert.match(r.stderr, /oclif:podctl:validate init/, 'the debug log is on');
  assert.doesNotMatch(r.stderr, /oclif:config|oclif:main/);
  // oclif's debug log says when its static run loads the configuration again ("reloading config").
  const help = spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), 'help', 'validate'], { encoding: 'utf8', env });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /USAGE\n {2}\$ podctl validate/);
  assert.match(help.stderr, /oclif:config/);
  assert.doesNotMatch(help.stderr, /reloading config/);
});
