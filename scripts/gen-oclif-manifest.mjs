// Writes oclif.manifest.json so that the CLI starts without importing every
// command module (what `oclif manifest` does, without that heavy dev tool).
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config } from '@oclif/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// An old manifest would be read back instead of the commands.
rmSync(join(root, 'oclif.manifest.json'), { force: true });
const config = await Config.load({ root, ignoreManifest: true });
const plugin = config.plugins.get(config.pjson.name);
writeFileSync(join(root, 'oclif.manifest.json'), `${JSON.stringify(plugin.manifest, null, 2)}\n`);
console.log(`oclif manifest: ${Object.keys(plugin.manifest.commands).length} commands`);
