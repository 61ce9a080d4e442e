#!/usr/bin/env node
// CommonJS (bin/package.json), as the bundled CLI it loads: Node then starts no ES module loader.
// Colour only on a terminal and never with NO_COLOR: the libraries would colour a pipe whenever CI is set.
// Set before the CLI loads, since they read it when they are imported.
if (process.env.NO_COLOR !== undefined || (!process.stdout.isTTY && !process.stderr.isTTY && process.env.FORCE_COLOR === undefined)) {
  process.env.FORCE_COLOR = '0';
}
// oclif checks Node's version against its own package.json, which a bundle does not carry; npm checked ours.
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1';
// The bundled CLI (npm run build): oclif, then each command's own code when that command runs.
const { join } = require('node:path');
require('../dist/cli/main.cjs').start(join(__dirname, '..', 'dist', 'cli'));
