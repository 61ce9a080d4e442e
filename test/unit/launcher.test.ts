import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOOPBACK_CERT } from '../support/tls.js';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

/** What the preload saw; a key left out was unset. */
interface Seen {
  atStart?: string;
  atExit?: string;
  deferred?: unknown;
  moved?: string;
  /** How the launcher's compile of the CLI's loader (dist/cli/main.cjs) took its code cache. */
  mainCodeCache?: string;
}

/**
 * Runs `podctl --version` with a preload that notes NODE_EXTRA_CA_CERTS as Node started (before the
 * launcher's code) and, at exit, what the launcher left for podctl and for the processes it starts.
 */
function launch(how: 'executable' | 'node', extraCaCerts: string | undefined): Seen {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-launcher-'));
  try {
    const out = join(dir, 'seen.json');
    const probe = join(dir, 'probe.cjs');
    writeFileSync(
      probe,
      `const atStart = process.env.NODE_EXTRA_CA_CERTS;
process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({ atStart, atExit: process.env.NODE_EXTRA_CA_CERTS, deferred: globalThis[Symbol.for('podctl.deferredExtraCaCerts')], moved: process.env.PODCTL_NODE_EXTRA_CA_CERTS, mainCodeCache: globalThis[Symbol.for('podctl.mainCodeCache')] })));\n`,
    );
    const { NODE_EXTRA_CA_CERTS: _given, ...env } = process.env;
    const r = spawnSync(how === 'executable' ? BIN : process.execPath, how === 'executable' ? ['--version'] : [BIN, '--version'], {
      encoding: 'utf8',
      env: { ...env, NODE_OPTIONS: `--require ${probe}`, ...(extraCaCerts === undefined ? {} : { NODE_EXTRA_CA_CERTS: extraCaCerts }) },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^podctl\/\d/);
    const { mainCodeCache, ...seen } = JSON.parse(readFileSync(out, 'utf8')) as Seen;
    // The loader the launcher compiles takes the cache the build wrote for it.
    assert.equal(mainCodeCache, 'used');
    return seen;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("run as an executable, podctl starts Node without NODE_EXTRA_CA_CERTS, and puts it back for what it starts and for its own TLS client", () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-ca-'));
  try {
    // A path with a space and a quote: the launcher line passes it through untouched.
    const file = join(dir, `extra "ca".pem`);
    writeFileSync(file, LOOPBACK_CERT);
    assert.deepEqual(launch('executable', file), { atExit: file, deferred: file });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without NODE_EXTRA_CA_CERTS, the launcher sets nothing; run by `node bin/run.js`, Node has loaded it itself and nothing is deferred', () => {
  assert.deepEqual(launch('executable', undefined), {});
  assert.deepEqual(launch('node', '/etc/ssl/extra.pem'), { atStart: '/etc/ssl/extra.pem', atExit: '/etc/ssl/extra.pem' });
});

test('a checkout run before its build says so and what to run, exit 1, instead of a stack trace', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podctl-unbuilt-'));
  try {
    mkdirSync(join(dir, 'bin'));
    for (const f of ['run.js', 'package.json']) copyFileSync(join(BIN, '..', f), join(dir, 'bin', f));
    const r = spawnSync(process.execPath, [join(dir, 'bin', 'run.js'), '--version'], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `podctl: ${join(dir, 'dist', 'cli', 'main.cjs')} is missing: the CLI is not built; run \`npm ci && npm run build\` in ${dir} first\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
