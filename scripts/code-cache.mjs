// Writes the V8 code cache of each file of the bundled CLI (dist/cli/**/*.cjs, beside it as
// *.cjs.cache), with which src/cli/start.ts loads them. V8 caches the functions compiled when the
// cache is written, so the CLI first runs a few commands that need nothing but the package (no
// runtime, no agent): oclif's start, parsing, help, and validate's YAML and validators. Functions
// no run compiled are compiled when first called, as with no cache. The build runs this in a
// process of its own with Node's default flags: V8 takes a cache only from the same Node with the
// same flags, and compiles the file from its text otherwise.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CodeCacheLoader } from '../dist/src/cli/code-cache.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const loader = new CodeCacheLoader(join(root, 'dist/cli'));
const cli = loader.require(join(root, 'dist/cli/cli.cjs'));
const hello = join(root, 'examples/hello.yaml');
// What the commands print is not wanted here.
const write = process.stdout.write;
process.stdout.write = () => true;
for (const args of [['--version'], ['--help'], ['help', 'validate'], ['validate', hello], ['validate', hello, '-o', 'json']]) {
  await cli.main(root, args);
}
process.stdout.write = write;
const bytes = loader.writeCaches();
console.error(`code cache: dist/cli, ${Math.round(bytes / 1024)} KB`);
