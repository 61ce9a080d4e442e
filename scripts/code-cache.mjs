// Writes the V8 code cache of each file of the bundled CLI (dist/cli/**/*.cjs, beside it as
// *.cjs.cache), with which src/cli/start.ts loads them. V8 caches the functions compiled when the
// cache is written, so the CLI first runs a few commands: oclif's start, parsing, help, validate's
// YAML and validators, and the commands that read a runtime when no agent answers (plan, get),
// against the in-memory fake CRI runtime on a private socket, so that the gRPC client, the
// codecs and the plan are compiled too. Functions no run compiled are compiled when first called,
// as with no cache. The build runs this in a process of its own with Node's default flags: V8
// takes a cache only from the same Node with the same flags, and compiles the file from its text
// otherwise.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CodeCacheLoader, cacheFileOf } from '../dist/src/cli/code-cache.js';
import { FakeRuntime } from '../dist/fakecri/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// main.cjs, the loader bin/run.js compiles with its cache, loaded as bin/run.js loads it; the CLI is loaded
// by main.cjs's loader, so that the runs compile the loader's functions into main.cjs's cache too.
const dir = join(root, 'dist/cli');
const mainFile = join(dir, 'main.cjs');
const outer = new CodeCacheLoader(dir);
const loader = new (outer.require(mainFile).CodeCacheLoader)(dir);
const cli = loader.require(join(dir, 'cli.cjs'));
const hello = join(root, 'examples/hello.yaml');

// A pod with more of the spec than the example (an init container, env, a probe, a volume): the
// runs compile what such pods need, not one manifest's path.
const scratch = mkdtempSync(join(tmpdir(), 'podctl-code-cache-'));
const training = join(scratch, 'training.yaml');
writeFileSync(
  training,
  `apiVersion: v1
kind: Pod
metadata: {name: training, labels: {app: training}}
spec:
  initContainers:
    - {name: init, image: busybox:1.36, command: [sh, -c, 'true']}
  containers:
    - name: app
      image: busybox:1.36
      command: [sh, -c, 'sleep 3600']
      env: [{name: MODE, value: training}]
      readinessProbe: {exec: {command: ['true']}, periodSeconds: 5}
      volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {}}]
`,
);
const fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
const runtime = ['--runtime-endpoint', fake.endpoint, '--root-dir', join(scratch, 'root')];

// What the commands print, and the codes they exit with (plan exits 2: it would change), are not wanted here.
// An error a run prints is shown: the cache would then lack what that run did not reach.
const write = process.stdout.write;
const writeErr = process.stderr.write;
const exit = process.exit;
let errors = '';
process.stdout.write = () => true;
process.stderr.write = (chunk) => {
  errors += String(chunk);
  return true;
};
process.exit = () => undefined;
try {
  for (const args of [
    ['--version'],
    ['--help'],
    ['help', 'validate'],
    ['validate', hello],
    ['validate', hello, '-o', 'json'],
    ['plan', training, ...runtime],
    ['plan', training, ...runtime, '-o', 'json'],
    ['get', 'pods', '-A', ...runtime],
  ]) {
    await cli.main(root, args);
  }
} finally {
  process.stdout.write = write;
  process.stderr.write = writeErr;
  process.exit = exit;
  // plan sets exit code 2 ("would change"): the runs' codes are not the build's.
  process.exitCode = undefined;
  await fake.stop();
  rmSync(scratch, { recursive: true, force: true });
}
if (/error/i.test(errors)) console.error(`code cache: a training run failed:\n${errors}`);
let bytes = loader.writeCaches();
const mainCache = outer.loaded.get(mainFile).script.createCachedData();
writeFileSync(cacheFileOf(mainFile), mainCache);
bytes += mainCache.length;
console.error(`code cache: dist/cli, ${Math.round(bytes / 1024)} KB`);
