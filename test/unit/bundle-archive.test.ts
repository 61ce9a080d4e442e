import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { extract } from 'tar-stream';
import { Bundle, BundleOutputError } from '../../src/core/bundle/index.js';

/** The files of a .tar.gz, by name. */
async function files(path: string): Promise<Record<string, string>> {
  const x = extract();
  const out: Record<string, string> = {};
  x.end(gunzipSync(readFileSync(path)));
  for await (const entry of x) {
    const chunks: Buffer[] = [];
    for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c);
    out[entry.header.name] = entry.header.type === 'directory' ? '<dir>' : Buffer.concat(chunks).toString('utf8');
  }
  return out;
}

function sample(): Bundle {
  const b = new Bundle('web-bundle');
  b.add('status.json', '{}\n');
  b.add('logs/app/current.log', 'line\n');
  b.add(`inspect/${'c'.repeat(120)}.json`, '{"long": "name"}\n');
  return b;
}

test('bundle archive: the listed files under the top directory, with their directories, long names kept', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-unit-bundle-'));
  try {
    const out = join(dir, 'b.tar.gz');
    await sample().writeTo(out);
    assert.deepEqual(await files(out), {
      'web-bundle/': '<dir>',
      'web-bundle/inspect/': '<dir>',
      'web-bundle/logs/': '<dir>',
      'web-bundle/logs/app/': '<dir>',
      'web-bundle/status.json': '{}\n',
      'web-bundle/logs/app/current.log': 'line\n',
      [`web-bundle/inspect/${'c'.repeat(120)}.json`]: '{"long": "name"}\n',
    });
    assert.equal(lstatSync(out).mode & 0o777, 0o600);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(
  'bundle archive: a symlink at the output path is replaced, not followed; an existing file becomes a new file of ' + 'mode 0600',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podctl-unit-bundle-'));
    try {
      const victim = join(dir, 'victim');
      writeFileSync(victim, 'keep', { mode: 0o644 });
      const link = join(dir, 'link.tar.gz');
      symlinkSync(victim, link);
      await sample().writeTo(link);
      assert.equal(readFileSync(victim, 'utf8'), 'keep', 'the symlink target is untouched');
      assert.equal(lstatSync(victim).mode & 0o777, 0o644);
      assert.ok(lstatSync(link).isFile(), 'the output is a file of its own now');
      assert.equal(lstatSync(link).mode & 0o777, 0o600);
      assert.ok('web-bundle/status.json' in (await files(link)));

      const existing = join(dir, 'existing.tar.gz');
      writeFileSync(existing, 'old', { mode: 0o644 });
      await sample().writeTo(existing);
      assert.equal(lstatSync(existing).mode & 0o777, 0o600);
      assert.ok('web-bundle/status.json' in (await files(existing)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test('bundle archive: a directory or a missing directory as the output is refused by name, and nothing is left beside it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-unit-bundle-'));
  try {
    mkdirSync(join(dir, 'adir'));
    await assert.rejects(
      sample().writeTo(join(dir, 'adir')),
      (e: Error) => e instanceof BundleOutputError && /adir is a directory: name the archive file to write/.test(e.message),
    );
    await assert.rejects(
      sample().writeTo(join(dir, 'none', 'b.tar.gz')),
      (e: Error) => e instanceof BundleOutputError && /none: no such directory/.test(e.message),
    );
    assert.deepEqual(readdirSync(dir), ['adir']);
    assert.deepEqual(readdirSync(join(dir, 'adir')), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
