#!/usr/bin/env node
// CommonJS (bin/package.json), as the bundled CLI it loads: Node then starts no ES module loader.
// oclif checks Node's version against its own package.json, which a bundle does not carry; npm checked ours.
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1';
// The bundled CLI (npm run build): oclif, then each command's own code when that command runs.
const { join } = require('node:path');
require('../dist/cli/main.cjs').start(join(__dirname, '..', 'dist', 'cli'));
