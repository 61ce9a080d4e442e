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
    // Where oclif would find the module: podctl's index now, not the plugin's files. With no relativePath,
    // src/cli/direct.ts leaves them to oclif (help needs its Config).
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
// Every start reads and parses oclif.manifest.json, but only help and autocomplete read a command's
// flags, examples and long description: 90% of its bytes, and the allocation that cost a start a
// garbage collection. They go to HELP_DETAILS, which src/cli/help-details.ts puts back into the
// loaded commands when help or autocomplete runs. The args stay: oclif's routing of `a b` reads them
// (whether b is a word of the command id or its argument). A description stays where there is no
// summary: oclif takes a topic's from it as it loads.
const HELP_DETAILS = 'dist/cli/oclif-help.json';
const DETAIL_KEYS = ['flags', 'examples', 'description', 'usage'];
const details = {};
for (const [id, c] of Object.entries(manifest.commands)) {
  const moved = DETAIL_KEYS.filter((k) => k in c && !(k === 'description' && !c.summary));
  details[id] = Object.fromEntries(moved.map((k) => [k, c[k]]));
  const kept = Object.fromEntries(Object.entries(c).filter(([k]) => !moved.includes(k)));
  manifest.commands[id] = { ...kept, flags: {} };
}
// Unindented: every start reads and parses it.
writeFileSync(join(root, 'oclif.manifest.json'), `${JSON.stringify(manifest)}\n`);
writeFileSync(join(root, HELP_DETAILS), `${JSON.stringify({ commands: details })}\n`);
console.log(`oclif manifest: ${ids.length} commands; their help in ${HELP_DETAILS}`);
