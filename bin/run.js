#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS PODCTL_NODE_EXTRA_CA_CERTS=${NODE_EXTRA_CA_CERTS} node
// The line above moves NODE_EXTRA_CA_CERTS aside: Node 20 parses that file and its own roots at every
// start, about 50 ms for a system bundle, before any JavaScript runs. It goes back into the environment
// of every process podctl starts, and podctl's own TLS client trusts it (src/core/config/extra-ca-certs.ts).
const deferred = process.env.PODCTL_NODE_EXTRA_CA_CERTS;
if (deferred !== undefined) {
  delete process.env.PODCTL_NODE_EXTRA_CA_CERTS;
  if (deferred !== '') {
    process.env.NODE_EXTRA_CA_CERTS = deferred;
    globalThis[Symbol.for('podctl.deferredExtraCaCerts')] = deferred;
  }
}
// CommonJS (bin/package.json), as the bundled CLI it loads: Node then starts no ES module loader.
// oclif checks Node's version against its own package.json, which a bundle does not carry; npm checked ours.
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1';
// The bundled CLI (npm run build): its loader (main.cjs), which loads oclif, then each command's own code
// when that command runs, with the V8 code caches the build wrote. The loader itself is compiled here with
// its own cache, in the wrapper the loader gives every file (src/cli/code-cache.ts): from its text, its
// functions were compiled anew at every start.
const { join } = require('node:path');
const { readFileSync } = require('node:fs');
const { Script } = require('node:vm');
const dir = join(__dirname, '..', 'dist', 'cli');
const file = join(dir, 'main.cjs');
let cachedData;
try {
  cachedData = readFileSync(`${file}.cache`);
} catch {
  cachedData = undefined;
}
let source;
try {
  source = readFileSync(file, 'utf8');
} catch (err) {
  // A checkout run before its build: say so, rather than with a stack trace of this file.
  if (err.code !== 'ENOENT') throw err;
  process.stderr.write(`podctl: ${file} is missing: the CLI is not built; run \`npm ci && npm run build\` in ${join(__dirname, '..')} first\n`);
  process.exit(1);
}
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: file, cachedData });
globalThis[Symbol.for('podctl.mainCodeCache')] = cachedData === undefined ? 'none' : script.cachedDataRejected ? 'rejected' : 'used';
const main = { exports: {} };
script.runInThisContext().call(main.exports, main.exports, require, main, file, dir);
main.exports.start(dir);
