import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { COMMANDS } from '../../src/commands.js';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');

interface Meta {
  inputs: Record<string, { imports: { path: string; kind: string }[] }>;
  outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown> }>;
}

const meta = (): Meta => JSON.parse(readFileSync(join(ROOT, 'dist/cli/meta.json'), 'utf8')) as Meta;

/** The source files these load before they run: themselves and what they import or require, transitively (not what they import()). */
function withStaticImports(files: string[]): string[] {
  const { inputs } = meta();
  const seen = new Set(files);
  const queue = [...files];
  while (queue.length) {
    for (const imp of inputs[queue.shift()!]?.imports ?? []) {
      if ((imp.kind !== 'import-statement' && imp.kind !== 'require-call') || seen.has(imp.path)) continue;
      seen.add(imp.path);
      queue.push(imp.path);
    }
  }
  return [...seen];
}

/** Every source file a file of the bundle loads before it runs. */
function loadedAtStart(file: string): string[] {
  assert.ok(meta().inputs[file], `${file} is not in the bundle: run npm run build`);
  return withStaticImports([file]);
}

/**
 * The source files a file's import()s load, with what they import statically, and what their own import()s load in turn: what may
 * load when a path of it is taken.
 */
function loadedOnDemand(file: string): string[] {
  const { inputs } = meta();
  const seen = new Set<string>();
  let reached = loadedAtStart(file);
  while (reached.length) {
    const targets = reached.flatMap((f) =>
      (inputs[f]?.imports ?? []).filter((i) => i.kind === 'dynamic-import' && inputs[i.path] && !seen.has(i.path)).map((i) => i.path),
    );
    reached = withStaticImports(targets).filter((f) => !seen.has(f));
    for (const f of reached) seen.add(f);
  }
  return [...seen];
}

test('the command index lists every command in src/commands, by its oclif id', () => {
  const own = readdirSync(join(ROOT, 'src/commands'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) =>
      relative(join(ROOT, 'src/commands'), join(e.parentPath, e.name))
        .replace(/\.ts$/, '')
        .replace(/\/index$/, '')
        .replaceAll('/', ':'),
    );
  assert.deepEqual(Object.keys(COMMANDS).sort(), own.sort());
});

test("oclif's manifest is oclif's own: every command with its flags, and help and autocomplete as the plugins they are", () => {
  const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { oclif: { plugins?: string[] } };
  assert.deepEqual(pjson.oclif.plugins, ['@oclif/plugin-help', '@oclif/plugin-autocomplete']);
  const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as {
    commands: Record<string, { pluginName: string; flags: Record<string, unknown> }>;
  };
  assert.deepEqual(Object.keys(manifest.commands).sort(), Object.keys(COMMANDS).sort());
  assert.ok(manifest.commands['get:pods']?.flags['all-namespaces'], 'the manifest holds the flags');
});

test('the launcher loads oclif alone: no command, gRPC or validator before oclif routes to a command', () => {
  const atStart = loadedAtStart('src/main.ts');
  assert.ok(
    atStart.some((f) => f.includes('@oclif/core/lib/config/config.js')),
    'oclif is bundled',
  );
  assert.deepEqual(
    atStart.filter((f) => /src\/commands|src\/core\/|grpc-js|kubernetes-models|protobufjs|plugin-help|plugin-autocomplete/.test(f)),
    [],
  );
  // The not-found hook (with readline and fastest-levenshtein) loads when oclif runs it, for an unknown command.
  assert.deepEqual(
    atStart.filter((f) => /src\/hooks\/|fastest-levenshtein/.test(f)),
    [],
  );
});

test("oclif's debug output is there with DEBUG set: oclif's own logger", () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), '--version'], {
    encoding: 'utf8',
    env: { ...process.env, DEBUG: 'oclif:*' },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /oclif:main process\.execPath:/);
  assert.match(r.stderr, /oclif:config/);
  const quiet = spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), '--version'], {
    encoding: 'utf8',
    env: { ...process.env, DEBUG: '' },
  });
  assert.equal(quiet.stderr, '');
});

test('each command loads only what it uses: gRPC loads when the runtime is first called, never at start', () => {
  // runtime up and down start and stop the runtime itself: they talk to it at once. Help and autocomplete are the plugins'.
  const commands = Object.keys(COMMANDS).filter((id) => !id.startsWith('runtime:') && !id.startsWith('autocomplete') && id !== 'help');
  for (const id of commands) {
    const file = `src/commands/${id.replaceAll(':', '/')}${id === 'agent' ? '/index' : ''}.ts`;
    const loaded = loadedAtStart(file);
    assert.ok(loaded.includes(file), file);
    assert.deepEqual(
      loaded.filter((f) => f.includes('@grpc/grpc-js')),
      [],
      `${id} loads gRPC before it calls the runtime`,
    );
  }
  // Listing pods through the agent and validating need no runtime at all.
  assert.deepEqual(
    loadedAtStart('src/commands/validate.ts').filter((f) => /protobufjs|src\/core\/cri\/client|src\/core\/kubelet/.test(f)),
    [],
  );
  // The command index, which oclif imports to run any command, loads no validator and no gRPC: validate imports its validators when it
  // runs.
  const index = loadedAtStart('src/commands.ts');
  assert.deepEqual(
    index.filter((f) => /kubernetes-models\/_schemas|@grpc\/grpc-js|src\/core\/kubelet\.ts/.test(f)),
    [],
  );
  // Nor what any one command's path uses: each command declares its flags and args with the index and imports the rest when it runs.
  const heavy =
    /node_modules\/(ws|js-yaml|tar-stream|streamx|ora|cli-table3)\/|src\/core\/(kuberuntime|embedded|logs|exec|podview|status)\/|src\/core\/pleg\/(?!kinds\.ts)|src\/cli\/(podview|runtime|table|plan|node|describe|pod-lister)\.ts/;
  assert.deepEqual(
    index.filter((f) => heavy.test(f)),
    [],
  );
  assert.ok(index.includes('src/core/pleg/kinds.ts') && index.includes('src/cli/node-flags.ts'), 'the flags are declared with the index');
  assert.ok(loadedOnDemand('src/commands/validate.ts').some((f) => f.includes('kubernetes-models/_schemas/IoK8sApiCoreV1PodSpec')));
  // get pods imports its lister when it runs: what that loads is the listing's path.
  const lister = withStaticImports(['src/commands/get/pods.ts', 'src/cli/pod-lister.ts']);
  assert.ok(loadedOnDemand('src/commands/get/pods.ts').includes('src/cli/pod-lister.ts'));
  assert.deepEqual(
    lister.filter((f) => /kubernetes-models\/_schemas|js-yaml|src\/core\/kubelet|src\/core\/pod\/validate/.test(f)),
    [],
  );
  // An agent answers the listing: building statuses from the runtime, the embedded runtime's set-up and
  // the table layout load only when needed (no agent, or rows to print).
  assert.deepEqual(
    lister.filter((f) =>
      /src\/core\/podview|src\/core\/kuberuntime|src\/core\/status\/generate|src\/core\/embedded\/(index|images|config|process)|cli-table3|src\/cli\/table/.test(
        f,
      ),
    ),
    [],
  );
  assert.ok(lister.includes('src/core/embedded/probe.ts'));
  // plan asks the agent first: reading pod statuses from the runtime (and gRPC) loads only when none answers.
  const planner = withStaticImports(['src/commands/plan.ts', 'src/cli/plan.ts']);
  assert.ok(loadedOnDemand('src/commands/plan.ts').includes('src/cli/plan.ts'));
  assert.deepEqual(
    planner.filter((f) => /src\/core\/kuberuntime\/(pod-status|config)|src\/core\/cri\/client|cli-table3/.test(f)),
    [],
  );
  // run --detach with an agent running hands the manifests over and waits for the pods: the foreground run (its log
  // streams, the runtime's connection, the state lock, log rotation), the planner of --dry-run, the tracer of --trace
  // and the node's wiring that starts an agent load only when their path is taken.
  const handoverPath = [
    'src/cli/handover.ts',
    'src/cli/detach.ts',
    'src/cli/manifest-args.ts',
    'src/cli/node-info.ts',
    'src/core/node/client.ts',
  ];
  for (const f of handoverPath) assert.ok(loadedOnDemand('src/commands/run.ts').includes(f), `${f} is imported when run runs`);
  const handover = withStaticImports(['src/commands/run.ts', ...handoverPath]);
  assert.deepEqual(
    handover.filter((f) =>
      /src\/cli\/(run|log-stream|runtime|plan|trace|node|render|manifests)\.ts|src\/core\/(cri\/|trace\.ts|lock\.ts|logs\/|kuberuntime\/|node\/spawn\.ts|embedded\/)/.test(
        f,
      ),
    ),
    [],
  );
  for (const f of ['src/cli/node-flags.ts', 'src/core/node/wait.ts']) assert.ok(handover.includes(f), f);
  // plan and run --detach hand the manifests to the agent as read, and it validates them: the API
  // validators (and the YAML parser) load only when no agent answers.
  for (const [what, files] of [
    ['plan', planner],
    ['run', handover],
  ] as const) {
    assert.deepEqual(
      files.filter((f) => /kubernetes-models\/_schemas|@kubernetes-models\/validate|js-yaml|src\/core\/pod\/(validate|load)\.ts/.test(f)),
      [],
      what,
    );
  }
  const onDemand = loadedOnDemand('src/commands/run.ts');
  for (const f of ['src/cli/run.ts', 'src/cli/plan.ts', 'src/cli/node.ts', 'src/cli/manifests.ts'])
    assert.ok(onDemand.includes(f), `${f} is imported when its path is taken`);
  // The runtime path is there when called: the CRI client is its own chunk, imported on first use, on
  // @grpc/grpc-js; containerd's event stream is on the same stack.
  const client = loadedAtStart('src/core/cri/client.ts');
  assert.ok(
    client.some((f) => f.includes('@grpc/grpc-js')),
    'the CRI client is grpc-js',
  );
  const events = [...loadedAtStart('src/core/cri/containerd-events.ts'), ...loadedOnDemand('src/core/cri/containerd-events.ts')];
  assert.ok(
    events.some((f) => f.includes('@grpc/grpc-js')),
    'containerd events use grpc-js too',
  );
});

test("cp receives from a pod in a worker of its own: an entry of the bundle beside cp's chunk, and ws and tar-stream load there", () => {
  const outputs = Object.entries(meta().outputs);
  const worker = outputs.find(([, o]) => o.entryPoint === 'src/cli/cp-receive.ts')?.[0];
  const cp = outputs.find(([, o]) => 'src/cli/cp.ts' in o.inputs)?.[0];
  // copyFromPod starts it as new URL('./cp-receive.js', import.meta.url), as in tsc's output.
  assert.ok(worker && cp, 'both in the bundle');
  assert.equal(worker, join(dirname(cp), 'cp-receive.js'));
  assert.ok(existsSync(join(ROOT, worker)));
  const inWorker = loadedAtStart('src/cli/cp-receive.ts');
  for (const dep of ['node_modules/ws/', 'node_modules/tar-stream/']) {
    assert.ok(
      inWorker.some((f) => f.includes(dep)),
      `${dep} in the worker`,
    );
    assert.ok(!loadedAtStart('src/cli/cp.ts').some((f) => f.includes(dep)), `${dep} is not loaded with cp's own module`);
  }
});

test('the help class renders templates with ejs and leaves plain text as it is', async () => {
  const { default: PodctlHelp } = await import('../../src/help.js');
  const help = new PodctlHelp({ bin: 'podctl', topicSeparator: ' ' } as unknown as ConstructorParameters<typeof PodctlHelp>[0]);
  assert.equal(help.render('Run <%= config.bin %> help'), 'Run podctl help');
  assert.equal(help.render('List pods: <name> & <ns>, 100% plain'), 'List pods: <name> & <ns>, 100% plain');
  const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { oclif: { helpClass?: string } };
  assert.ok(existsSync(join(ROOT, pjson.oclif.helpClass!)), 'package.json names the bundled help class');
});

test(
  'help shows each command with its flags and examples, the root help each command once, and a usage error says where ' + 'the help is',
  () => {
    const home = mkdtempSync(join(tmpdir(), 'podctl-help-'));
    try {
      const cli = (...args: string[]) =>
        spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), ...args], {
          encoding: 'utf8',
          cwd: home,
          env: { ...process.env, NO_COLOR: '1', HOME: home },
        });
      for (const args of [
        ['get', 'pods', '--help'],
        ['get', 'po', '--help'],
        ['help', 'get', 'pod'],
      ]) {
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
      assert.equal(
        missing.stderr,
        "Error: Missing 1 required arg:\npaths  Manifest files or directories (- for stdin).\nSee 'podctl run --help' for usage.\n",
      );
      const noValue = cli('get', 'pods', '--root-dir');
      assert.equal(noValue.status, 2);
      assert.equal(noValue.stderr, "Error: Flag --root-dir expects a value\nSee 'podctl get pods --help' for usage.\n");
      const option = cli('get', 'pods', '-o', 'xml');
      assert.equal(option.status, 2);
      assert.equal(
        option.stderr,
        "Error: Expected --output=xml to be one of: table, wide, json, yaml, name\nSee 'podctl get pods --help' for usage.\n",
      );
      // plan's exit code 2 means "would change": its usage errors exit 1.
      assert.equal(cli('plan').status, 1);
      const created = cli('autocomplete', 'create');
      assert.equal(created.status, 0, created.stderr);
      const bash = readFileSync(join(home, '.cache/podctl/autocomplete/functions/bash/podctl.bash'), 'utf8');
      assert.match(bash, /get:pods --runtime-endpoint[^\n]*--all-namespaces --output --no-headers --watch/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  },
);
