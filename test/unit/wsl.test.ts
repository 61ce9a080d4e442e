import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { detectWsl, isWsl, type WslHost } from '../../src/cli/wsl.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** A Linux host with these files (their text) and this kernel release. */
const host = (files: Record<string, string>, release = '6.8.0-generic', platform: NodeJS.Platform = 'linux'): WslHost => ({
  platform,
  release,
  read: (path) => files[path],
  exists: (path) => path in files,
});

test('detectWsl: a Microsoft kernel (by its release, /proc/version or WSL paths) on Linux, outside a container', () => {
  assert.equal(detectWsl(host({ '/proc/version': 'Linux version 6.8.0 (buildd@ubuntu)' })), false);
  assert.equal(detectWsl(host({})), false);
  assert.equal(detectWsl(host({}, '5.15.153.1-microsoft-standard-WSL2')), true);
  assert.equal(detectWsl(host({}, '4.4.0-19041-Microsoft')), true);
  assert.equal(detectWsl(host({ '/proc/version': 'Linux version 5.15.153.1-Microsoft-standard-WSL2' })), true);
  assert.equal(detectWsl(host({ '/proc/sys/fs/binfmt_misc/WSLInterop': '' })), true);
  assert.equal(detectWsl(host({ '/run/WSL': '' })), true);
  // Not on Linux, whatever the release says.
  assert.equal(detectWsl(host({}, '5.15.153.1-microsoft-standard-WSL2', 'win32')), false);
  // Inside Podman's or Docker's container on WSL: not WSL, as is-wsl answers.
  const wsl = '5.15.153.1-microsoft-standard-WSL2';
  assert.equal(detectWsl(host({ '/run/.containerenv': '' }, wsl)), false);
  assert.equal(detectWsl(host({ '/.dockerenv': '' }, wsl)), false);
  assert.equal(detectWsl(host({ '/proc/self/cgroup': '0::/docker/0123abcd' }, wsl)), false);
  assert.equal(detectWsl(host({ '/proc/self/cgroup': '0::/user.slice' }, wsl)), true);
  assert.equal(detectWsl(host({ '/proc/version': 'Linux version 5.15 microsoft', '/.dockerenv': '' })), false);
});

test("isWsl answers as is-wsl (oclif's, through wsl-utils) on this host", async () => {
  const fromOclif = createRequire(join(ROOT, 'node_modules/@oclif/core/lib/util/os.js'));
  const isWslFile = createRequire(fromOclif.resolve('wsl-utils')).resolve('is-wsl');
  const { default: theirs } = (await import(pathToFileURL(isWslFile).href)) as { default: boolean };
  assert.equal(isWsl, theirs);
});
