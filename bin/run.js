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
// The bundled CLI (npm run build): oclif, then each command's own code when that command runs.
const { join } = require('node:path');
require('../dist/cli/main.cjs').start(join(__dirname, '..', 'dist', 'cli'));
