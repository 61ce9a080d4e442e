// Writes oclif.manifest.json so that the CLI starts without importing every
// command module (what `oclif manifest` does, without that heavy dev tool).
// The commands are read from tsc's output by oclif's pattern discovery; the
// bundled CLI finds them through its explicit index (src/commands.ts) and
// takes flags, args and help from this file.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config } from '@oclif/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// An old manifest would be read back instead of the commands.
rmSync(join(root, 'oclif.manifest.json'), { force: true });
const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
pjson.oclif = { ...pjson.oclif, commands: './dist/src/commands' };
const config = await Config.load({ root, pjson, ignoreManifest: true });
const plugin = config.plugins.get(config.pjson.name);
const ids = Object.keys(plugin.manifest.commands);
const { COMMANDS } = await import(join(root, 'dist/src/commands.js'));
const listed = Object.keys(COMMANDS).sort();
if (JSON.stringify(listed) !== JSON.stringify([...ids].sort())) {
  throw new Error(`src/commands.ts lists ${listed.join(', ')}; src/commands has ${[...ids].sort().join(', ')}`);
}
writeFileSync(join(root, 'oclif.manifest.json'), `${JSON.stringify(plugin.manifest, null, 2)}\n`);
console.log(`oclif manifest: ${ids.length} commands`);
