import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { COMMANDS } from '../../src/commands.js';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');

interface Meta {
  outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown>; imports: { path: string; kind: string }[] }>;
}

const meta = (): Meta => JSON.parse(readFileSync(join(ROOT, 'dist/cli/meta.json'), 'utf8')) as Meta;

/** Every source file a bundle entry loads before it runs: its chunk and the chunks those import statically. */
function loadedAtStart(entry: string): string[] {
  const { outputs } = meta();
  const start = Object.keys(outputs).find((o) => outputs[o]!.entryPoint === entry);
  assert.ok(start, `no chunk for ${entry}: run npm run build`);
  const seen = new Set([start]);
  const queue = [start];
  while (queue.length) {
    for (const imp of outputs[queue.shift()!]!.imports) {
      if (imp.kind !== 'import-statement' || seen.has(imp.path) || !outputs[imp.path]) continue;
      seen.add(imp.path);
      queue.push(imp.path);
    }
  }
  return [...seen].flatMap((o) => Object.keys(outputs[o]!.inputs));
}

test('the command index lists every command in src/commands, by its oclif id', () => {
  const ids = readdirSync(join(ROOT, 'src/commands'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(join(ROOT, 'src/commands'), join(e.parentPath, e.name)).replace(/\.ts$/, '').replace(/\/index$/, '').replaceAll('/', ':'))
    .sort();
  assert.deepEqual(Object.keys(COMMANDS).sort(), ids);
});

test('the CLI starts on oclif and the command index alone: no command, gRPC or validator is loaded before a command runs', () => {
  assert.ok(existsSync(join(ROOT, 'dist/cli/main.js')));
  const atStart = [...loadedAtStart('src/main.ts'), ...loadedAtStart('src/commands.ts')];
  assert.deepEqual(atStart.filter((f) => /src\/commands\/|grpc-js|kubernetes-models|protobufjs/.test(f)), []);
});

test('each command loads only what it uses: gRPC loads when the runtime is first called, never at start', () => {
  // runtime up and down start and stop the runtime itself: they talk to it at once.
  const commands = Object.keys(COMMANDS).filter((id) => !id.startsWith('runtime:'));
  for (const id of commands) {
    const file = `src/commands/${id.replaceAll(':', '/')}${id === 'agent' ? '/index' : ''}.ts`;
    const loaded = loadedAtStart(file);
    assert.ok(loaded.includes(file), file);
    assert.deepEqual(loaded.filter((f) => f.includes('@grpc/grpc-js')), [], `${id} loads gRPC before it calls the runtime`);
  }
  // Listing pods through the agent and validating need no runtime at all.
  assert.deepEqual(loadedAtStart('src/commands/validate.ts').filter((f) => /protobufjs|src\/core\/cri\/client|src\/core\/kubelet/.test(f)), []);
  assert.deepEqual(loadedAtStart('src/commands/get/pods.ts').filter((f) => /kubernetes-models\/_schemas|src\/core\/kubelet|src\/core\/pod\/validate/.test(f)), []);
  // The runtime path is there when called: the CRI client is its own chunk, imported on first use.
  assert.ok(loadedAtStart('src/core/cri/client.ts').some((f) => f.includes('@grpc/grpc-js')));
});
