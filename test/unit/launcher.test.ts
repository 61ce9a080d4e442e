import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The package root (tests run from dist/test/unit). */
const ROOT = join(import.meta.dirname, '..', '..', '..');
const BIN = join(ROOT, 'bin', 'run.js');

test('run as an executable, podctl leaves NODE_EXTRA_CA_CERTS as the user set it, for Node and for what it starts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-launcher-'));
  try {
    const out = join(dir, 'seen.json');
    const probe = join(dir, 'probe.cjs');
    writeFileSync(
      probe,
      `const atStart = process.env.NODE_EXTRA_CA_CERTS;\nprocess.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({ atStart, atExit: process.env.NODE_EXTRA_CA_CERTS })));\n`,
    );
    const file = join(dir, 'extra.pem');
    const r = spawnSync(BIN, ['--version'], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: `--require ${probe}`, NODE_EXTRA_CA_CERTS: file },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^podctl\/\d/);
    assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), { atStart: file, atExit: file });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an init and a prerun hook that package.json names run for a podctl command, as oclif runs hooks', () => {
  // A package root of its own: podctl's package.json with two more hooks, its build and its node_modules.
  const dir = mkdtempSync(join(tmpdir(), 'podctl-hooks-'));
  try {
    mkdirSync(join(dir, 'bin'));
    copyFileSync(BIN, join(dir, 'bin', 'run.js'));
    for (const entry of ['dist', 'node_modules', 'oclif.manifest.json', 'examples']) symlinkSync(join(ROOT, entry), join(dir, entry));
    const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { oclif: { hooks: Record<string, string> } };
    pjson.oclif.hooks = { ...pjson.oclif.hooks, init: './hooks/init.js', prerun: './hooks/prerun.js' };
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pjson));
    mkdirSync(join(dir, 'hooks'));
    writeFileSync(
      join(dir, 'hooks', 'init.js'),
      "export default async function (opts) { process.stderr.write(`init hook: ${opts.id} ${opts.argv.join(' ')}\\n`); }\n",
    );
    writeFileSync(
      join(dir, 'hooks', 'prerun.js'),
      "export default async function (opts) { process.stderr.write(`prerun hook: ${opts.Command.id} ${Object.keys(opts.Command.flags).includes('output')}\\n`); }\n",
    );
    const r = spawnSync(process.execPath, [join(dir, 'bin', 'run.js'), 'validate', 'examples/hello.yaml'], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^valid: 1 pod\(s\)/);
    // init with the words as typed, before routing; prerun with the command's own class, flags and all.
    assert.equal(r.stderr, 'init hook: validate examples/hello.yaml\nprerun hook: validate true\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
