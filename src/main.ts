// The CLI's entry, which bin/run.js imports once the build has bundled it into dist/cli.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// Only what running a CLI needs: @oclif/core's index would evaluate all of it.
import { execute } from '@oclif/core/execute';

// dist/cli/main.js → the package root, where package.json and oclif.manifest.json are.
const root = fileURLToPath(new URL('../..', import.meta.url));
// Handing oclif the package.json spares its search up the tree for it. No user plugins
// (podctl installs none), and help and autocomplete are commands of our own index, so
// oclif loads one plugin, podctl, from its manifest, and no other package.
const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
await execute({ loadOptions: { root, pjson, userPlugins: false } });
