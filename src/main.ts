// The CLI's entry, bundled by the build into dist/cli/cli.cjs, which bin/run.js loads
// (with V8's code cache: src/cli/code-cache.ts). oclif finds the command index, the help
// class and the not-found hook through the small files next to it (dist/cli/*.cjs), which
// share this bundle's chunks. Neither the help class nor the hook is exported here: cli.cjs
// would evaluate them (oclif's help, with its formatter; readline and fastest-levenshtein)
// at every start, for a --help or a mistyped command.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { commandConfig, routeCommand, type RouteManifest } from './cli/direct.js';
import { COMMANDS } from './commands.js';

/** A CommonJS module's exports, imported: esbuild's bundle hands them as the default export, Node as both. */
const exportsOf = <T extends object>(m: T): T => (m as { default?: T }).default ?? m;

/**
 * Runs the CLI with these arguments. `root` is the package root, where package.json and
 * oclif.manifest.json are. One of podctl's commands runs without oclif's Config
 * (src/cli/direct.ts): its class, with oclif's parser, as oclif would run it, and oclif's
 * error handling and flush around it as oclif's execute has them. Anything else goes to
 * oclif's execute, handed the package.json (sparing its search up the tree for it). No user
 * plugins (podctl installs none), and help and autocomplete are commands of our own index, so
 * oclif loads one plugin, podctl, from its manifest, and no other package.
 */
export async function main(root: string, args: string[] = process.argv.slice(2)): Promise<unknown> {
  const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8')) as RouteManifest;
  const route = routeCommand(args, manifest, pjson.oclif.additionalHelpFlags);
  if (route) {
    const command = COMMANDS[route.id]!;
    command.id = route.id;
    try {
      const result = await command.run(route.argv, commandConfig(pjson, root, manifest));
      // As oclif's execute: not awaited, it gives a stream still writing its time to drain.
      void exportsOf(await import('@oclif/core/flush')).flush();
      return result;
    } catch (err) {
      return exportsOf(await import('@oclif/core/handle')).handle(err as Error);
    }
  }
  const { execute } = exportsOf(await import('@oclif/core/execute'));
  return execute({ args, loadOptions: { root, pjson, userPlugins: false } });
}
