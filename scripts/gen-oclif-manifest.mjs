// Writes oclif.manifest.json so that the CLI starts without importing every
// command module (what `oclif manifest` does, without that heavy dev tool).
// The commands are read from tsc's output by oclif's pattern discovery; the
// bundled CLI finds them through its explicit index (src/commands.ts) and
// takes flags, args and help from this file. The commands of @oclif/plugin-help
// and @oclif/plugin-autocomplete are listed in that index too, not loaded as
// plugins at start: their entries are copied from the manifests oclif reads
// for those plugins here.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config } from '@oclif/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PLUGINS = ['@oclif/plugin-help', '@oclif/plugin-autocomplete'];
// An old manifest would be read back instead of the commands.
rmSync(join(root, 'oclif.manifest.json'), { force: true });
const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
pjson.oclif = { ...pjson.oclif, commands: './dist/src/commands', plugins: PLUGINS };
const config = await Config.load({ root, pjson, ignoreManifest: true, userPlugins: false });
const plugin = config.plugins.get(config.pjson.name);
const manifest = { ...plugin.manifest, commands: { ...plugin.manifest.commands } };
for (const name of PLUGINS) {
  const p = config.plugins.get(name);
  if (!p) throw new Error(`${name} is not installed`);
  for (const [id, c] of Object.entries(p.manifest.commands)) {
    if (manifest.commands[id]) throw new Error(`${name} and podctl both have a command ${id}`);
    // Where oclif would find the module: podctl's index now, not the plugin's files.
    const { isESM: _isESM, relativePath: _relativePath, permutations: _p, aliasPermutations: _a, ...entry } = c;
    manifest.commands[id] = { ...entry, pluginAlias: plugin.name, pluginName: plugin.name, pluginType: 'core' };
  }
}
const ids = Object.keys(manifest.commands);
const { COMMANDS } = await import(join(root, 'dist/src/commands.js'));
const listed = Object.keys(COMMANDS).sort();
if (JSON.stringify(listed) !== JSON.stringify([...ids].sort())) {
  throw new Error(`src/commands.ts lists ${listed.join(', ')}; src/commands and ${PLUGINS.join(', ')} have ${[...ids].sort().join(', ')}`);
}
// Unindented: every start reads and parses it, and indentation was 40% of its bytes.
writeFileSync(join(root, 'oclif.manifest.json'), `${JSON.stringify(manifest)}\n`);
console.log(`oclif manifest: ${ids.length} commands`);
