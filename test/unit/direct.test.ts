import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Config } from '@oclif/core';
import { normalizeArgv } from '@oclif/core/help';
import fc from 'fast-check';
import { commandConfig, routeCommand, type RouteManifest } from '../../src/cli/direct.js';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');
const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; oclif: { bin?: string; additionalHelpFlags?: string[] } };
const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as RouteManifest;
const config = await Config.load({ root: ROOT, pjson: pjson as never, userPlugins: false });

/**
 * What oclif's main.run does with argv, read from oclif itself: the version or help, or the command it
 * finds (with its arguments) on the Config it loaded; undefined for anything but a command podctl runs directly.
 */
function oclifRoute(argv: string[]): { id: string; argv: string[] } | undefined {
  if (argv.length === 0 || argv[0] === '--version') return undefined;
  const helpFlags = ['--help', ...(pjson.oclif.additionalHelpFlags ?? [])];
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length;
  if (argv.slice(0, end).some((a) => helpFlags.includes(a))) return undefined;
  const [id, ...rest] = normalizeArgv(config, [...argv]);
  const found = id === undefined ? undefined : config.findCommand(id);
  // Under an alias, oclif holds the aliased command with the alias for its id.
  const command = Object.entries(manifest.commands).find(([name, c]) => name === found?.id || [...(c.aliases ?? []), ...(c.hiddenAliases ?? [])].includes(found?.id ?? ''));
  // Help and autocomplete are commands of podctl's index but need oclif's Config: they stay with oclif.
  if (!command || command[1].relativePath === undefined) return undefined;
  return { id: command[0], argv: rest };
}

test('routeCommand finds the command oclif finds, with the same arguments, and leaves help, the version, topics and unknown words to oclif', () => {
  const cases: string[][] = [
    ['validate', 'x.yaml'],
    ['get', 'pods', '-A'],
    ['get', 'po', 'web', '-o', 'wide'],
    ['get', 'pod'],
    ['get', 'containers'],
    ['get'],
    ['get', 'rd'],
    ['agent'],
    ['agent', 'status'],
    ['agent', 'foo'],
    ['logs', 'pods'],
    ['plan', 'get', 'pods'],
    ['run', 'pod.yaml', '--', '--help'],
    ['run', 'pod.yaml', '--help'],
    ['--version'],
    ['version'],
    ['help', 'get'],
    ['autocomplete', 'bash'],
    ['--debug', 'get', 'pods'],
    ['get:pods'],
    ['image', 'prune'],
    ['runtime'],
    ['frobnicate', 'x'],
    ['x=y'],
    [],
  ];
  for (const argv of cases) assert.deepEqual(routeCommand(argv, manifest, pjson.oclif.additionalHelpFlags), oclifRoute(argv), argv.join(' '));
});

test('routeCommand agrees with oclif on any arguments made of command words, aliases, flags and values', () => {
  const words = ['get', 'get:pods', 'agent:stop', 'pods', 'po', 'pod', 'containers', 'agent', 'status', 'stop', 'logs', 'plan', 'run', 'help', 'version', 'runtime', 'up', 'image', 'prune', 'autocomplete', 'web', '-A', '--debug', '-o', 'a=b', '--', '--help', '--version'];
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...words), { maxLength: 5 }), (argv) => {
      assert.deepEqual(routeCommand(argv, manifest, pjson.oclif.additionalHelpFlags), oclifRoute(argv), argv.join(' '));
    }),
    { numRuns: 2000 },
  );
});

test("commandConfig answers what oclif's Command reads as the loaded Config answers it", () => {
  const c = commandConfig(pjson, ROOT, manifest);
  for (const key of ['bin', 'name', 'version', 'root', 'userAgent', 'topicSeparator', 'platform', 'arch'] as const) assert.deepEqual(c[key], config[key], key);
  assert.equal(c.scopedEnvVarKey('CONTENT_TYPE'), config.scopedEnvVarKey('CONTENT_TYPE'));
  assert.deepEqual(c.scopedEnvVarKeys('DEBUG'), config.scopedEnvVarKeys('DEBUG'));
  assert.deepEqual([...c.commandIDs].sort(), [...config.commandIDs].sort());
  for (const name of ['get:pods', 'get:po', 'plan', 'agent:status', 'nope']) assert.equal(c.findCommand(name)?.id, config.findCommand(name)?.id, name);
  assert.deepEqual(c.findCommand('logs')?.args && Object.keys(c.findCommand('logs')!.args), Object.keys(config.findCommand('logs')!.args));
});
