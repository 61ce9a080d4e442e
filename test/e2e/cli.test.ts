import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { podctl } from '../support/e2e.js';

test('podctl info on the embedded runtime shows RuntimeReady and NetworkReady true', () => {
  const r = podctl(['info']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /RuntimeReady\s+true/);
  assert.match(r.stdout, /NetworkReady\s+true/);
  const json = JSON.parse(podctl(['info', '-o', 'json']).stdout);
  assert.equal(json.runtimeName, 'containerd');
  assert.deepEqual(
    json.conditions
      .filter((c: { type: string }) => ['RuntimeReady', 'NetworkReady'].includes(c.type))
      .map((c: { status: boolean }) => c.status),
    [true, true],
  );
});

test('podctl version names the client and the runtime', () => {
  const r = podctl(['version', '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  const v = JSON.parse(r.stdout);
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'));
  assert.equal(v.client.version, pkg.version);
  assert.equal(v.runtime.apiVersion, 'v1');
});

test('no runtime at the endpoint: one line naming it and what to do, non-zero, no stack trace', () => {
  const r = podctl(['info', '--runtime-endpoint', 'unix:///nonexistent.sock'], { env: { PODCTL_RUNTIME_ENDPOINT: '' } });
  assert.notEqual(r.code, 0);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.equal(
    lines[0],
    'Error: no CRI runtime at unix:///nonexistent.sock; start one with `podctl runtime up` or pass --runtime-endpoint',
  );
});

test('a malformed endpoint is named with what is expected', () => {
  const r = podctl(['info', '--runtime-endpoint', 'tcp://1.2.3.4:1'], { env: { PODCTL_RUNTIME_ENDPOINT: '' } });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /invalid --runtime-endpoint "tcp:\/\/1\.2\.3\.4:1": expected a unix socket/);
});

test('--help lists every command with a description, and each command has examples', () => {
  const r = podctl(['--help']);
  assert.equal(r.code, 0);
  for (const cmd of ['info', 'plan', 'run', 'runtime down', 'runtime status', 'runtime up', 'sync-once', 'version', 'watch']) {
    assert.match(r.stdout, new RegExp(`\\n\\s+${cmd}\\s+\\S`), `${cmd} listed with a summary`);
    const h = podctl([...cmd.split(' '), '--help']);
    assert.equal(h.code, 0, cmd);
    assert.match(h.stdout, /EXAMPLES/, `${cmd} has examples`);
  }
});

test('podctl --version prints name/version platform-arch node-version, as oclif prints it, from package.json', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
  const r = podctl(['--version']);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, `${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`);
});
