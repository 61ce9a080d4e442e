// Writes oclif.manifest.json as `oclif manifest` does, with @oclif/core's own Plugin: it imports the
// command index the package names (the bundle, dist/cli/commands.js) and caches every command. oclif
// then routes, lists and shows help from it without importing a command.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Plugin } from '@oclif/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const plugin = new Plugin({ root, type: 'core', ignoreManifest: true, errorOnManifestCreate: true });
await plugin.load();
writeFileSync(join(root, 'oclif.manifest.json'), `${JSON.stringify(plugin.manifest, null, 2)}\n`);
console.log(`oclif manifest: ${Object.keys(plugin.manifest.commands).length} commands`);
