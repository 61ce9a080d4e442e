// The CLI's entry, bundled by the build into dist/cli/cli.cjs, which bin/run.js loads
// (with V8's code cache: src/cli/code-cache.ts). oclif finds the command index, the help
// class and the not-found hook through the small files next to it (dist/cli/*.cjs), which
// share this bundle's chunks. The hook is not exported here: cli.cjs would load it (with
// readline and fastest-levenshtein) at every start, for a mistyped command.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// Only what running a CLI needs: @oclif/core's index would evaluate all of it.
import { execute } from '@oclif/core/execute';

export { COMMANDS } from './commands.js';
export { default as Help } from './help.js';

/**
 * Runs the CLI with these arguments. `root` is the package root, where package.json and
 * oclif.manifest.json are. Handing oclif the package.json spares its search up the tree for
 * it. No user plugins (podctl installs none), and help and autocomplete are commands of our
 * own index, so oclif loads one plugin, podctl, from its manifest, and no other package.
 */
export async function main(root: string, args: string[] = process.argv.slice(2)): Promise<unknown> {
  const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return execute({ args, loadOptions: { root, pjson, userPlugins: false } });
}
