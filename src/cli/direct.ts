// Running one of podctl's own commands without oclif's Config. Config.load builds the plugin, its
// commands, topics and hooks from the manifest, reads a theme, and routes the arguments: a few ms
// of every start, for a command that needs none of it. A podctl command needs its class, oclif's
// parser, and the handful of Config fields oclif's Command reads. Everything else, help, --version,
// a topic, a mistyped or an unknown command, autocomplete, goes through oclif as before.
import type { Interfaces } from '@oclif/core';

/** What routing reads of oclif.manifest.json: each command's aliases, and whether it takes arguments. */
export interface RouteManifest {
  /** A command of podctl's own sources has the relativePath of its module; help's and autocomplete's, copied from their plugins (scripts/gen-oclif-manifest.mjs), have none. */
  commands: Record<string, { aliases?: string[]; hiddenAliases?: string[]; args?: Record<string, unknown>; strict?: boolean; relativePath?: string[] }>;
}

/** The command oclif would run for argv, and the arguments it would hand it. */
export interface Route {
  id: string;
  argv: string[];
}

/**
 * The command of podctl's own that oclif would run for argv, found as oclif finds it with a space as
 * topic separator (its help/util's collation): undefined whenever oclif would do anything else, show
 * help or the version, list a topic, say "not found", or run help's or autocomplete's command.
 */
export function routeCommand(argv: string[], manifest: RouteManifest, helpFlags: string[] = []): Route | undefined {
  if (argv.length === 0) return undefined;
  const help = new Set(['--help', ...helpFlags]);
  for (const arg of argv) {
    if (arg === '--') break;
    if (help.has(arg)) return undefined;
  }
  if (argv[0] === '--version') return undefined;
  const index = commandIndex(manifest);
  // Every id and alias, and each of their topics (get for get:pods): the words oclif lets an id grow by.
  const usable = new Set<string>();
  for (const name of index.ids) {
    const parts = name.split(':');
    for (let i = 1; i <= parts.length; i++) usable.add(parts.slice(0, i).join(':'));
  }
  const words: string[] = [];
  // An id written with colons (get:pods) is taken as it is, as is a lone word.
  if (argv.length === 1 || argv[0]!.includes(':')) words.push(argv[0]!);
  else {
    for (const arg of argv) {
      if (usable.has([...words, arg].join(':'))) {
        words.push(arg);
        continue;
      }
      // A command that takes arguments ends the id: the next word is its first argument.
      const sofar = words.length ? index.find(words.join(':')) : undefined;
      const takesArgs = sofar !== undefined && (sofar.strict === false || Object.keys(sofar.args ?? {}).length > 0);
      if (arg.startsWith('-') || arg.includes('=') || takesArgs) break;
      words.push(arg);
    }
  }
  const command = index.find(words.join(':'));
  if (command?.relativePath === undefined) return undefined;
  return { id: command.command, argv: argv.slice(words.length) };
}

/** A command as oclif's Config holds it: under an alias, the aliased command with the alias for its id; `command` is the command's own id. */
type IndexedCommand = RouteManifest['commands'][string] & { id: string; command: string };

type CommandIndex = { ids: string[]; find: (name: string) => IndexedCommand | undefined };
/** Routing and the Config a routed command gets read the same manifest: indexed once. */
const indexes = new WeakMap<RouteManifest, CommandIndex>();

/** The manifest's command ids and aliases, and a command by either, as oclif's Config lists and finds them. */
function commandIndex(manifest: RouteManifest): CommandIndex {
  const known = indexes.get(manifest);
  if (known) return known;
  const byName = new Map<string, IndexedCommand>();
  for (const [id, c] of Object.entries(manifest.commands)) byName.set(id, { ...c, id, command: id });
  for (const [id, c] of Object.entries(manifest.commands)) {
    for (const alias of [...(c.aliases ?? []), ...(c.hiddenAliases ?? [])]) if (!byName.has(alias)) byName.set(alias, { ...c, id: alias, command: id });
  }
  const index: CommandIndex = { ids: [...byName.keys()], find: (name) => byName.get(name) };
  indexes.set(manifest, index);
  return index;
}

/**
 * The part of oclif's Config that its Command, parser and errors read (bin, userAgent, the scoped
 * environment variables, commandIDs and findCommand for its check of a deprecated alias), and podctl's
 * commands (bin, version): a command handed this runs as under Config.load's, with no hook (podctl has
 * only command_not_found).
 */
export function commandConfig(pjson: { name: string; version: string; oclif: { bin?: string } }, root: string, manifest: RouteManifest): Interfaces.Config {
  const index = commandIndex(manifest);
  const bin = pjson.oclif.bin ?? pjson.name;
  const envKey = (k: string) => [bin.replaceAll('@', '').replaceAll(/[/-]/g, '_'), k].join('_').toUpperCase();
  const config = {
    bin,
    name: pjson.name,
    version: pjson.version,
    root,
    pjson,
    platform: process.platform,
    arch: process.arch,
    userAgent: `${pjson.name}/${pjson.version} ${process.platform}-${process.arch} node-${process.version}`,
    topicSeparator: ' ',
    commandIDs: index.ids,
    findCommand: (id: string) => index.find(id),
    runHook: async () => ({ successes: [], failures: [] }),
    scopedEnvVarKey: envKey,
    scopedEnvVarKeys: (k: string) => [envKey(k)],
    scopedEnvVar: (k: string) => process.env[envKey(k)],
    scopedEnvVarTrue: (k: string) => ['true', '1'].includes(process.env[envKey(k)] ?? ''),
  };
  return config as unknown as Interfaces.Config;
}
