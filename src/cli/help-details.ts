import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command, Interfaces } from '@oclif/core';

/** Where the build writes what it moves out of oclif.manifest.json (scripts/gen-oclif-manifest.mjs), below the package root. */
export const HELP_DETAILS_FILE = 'dist/cli/oclif-help.json';

const added = new WeakSet<Interfaces.Config>();

/**
 * Puts each command's flags, examples and long description back into the commands oclif
 * loaded from its manifest, which the build left without them: every start reads that manifest,
 * and only help and autocomplete read these. The aliases oclif listed are copies of their command
 * (under the alias's id), and get the same.
 */
export function addHelpDetails(config: Interfaces.Config): void {
  if (added.has(config)) return;
  const details = (JSON.parse(readFileSync(join(config.root, HELP_DETAILS_FILE), 'utf8')) as { commands: Record<string, Partial<Command.Cached>> }).commands;
  const canonical = new Map<string, string>();
  for (const plugin of config.getPluginsList()) {
    for (const c of plugin.commands) {
      for (const alias of [...(c.aliases ?? []), ...(c.hiddenAliases ?? [])]) canonical.set(alias.replaceAll(' ', ':'), c.id);
      Object.assign(c, details[c.id]);
    }
  }
  for (const c of config.commands) Object.assign(c, details[c.id] ?? details[canonical.get(c.id) ?? '']);
  added.add(config);
}
