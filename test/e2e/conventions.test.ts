import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { podctl, scratchDir } from '../support/e2e.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const BIN = join(ROOT, 'bin', 'run.js');

/** Runs podctl under a pseudo-terminal (script), answering `answer` once `prompt` shows. */
function underPty(
  args: string[],
  prompt: RegExp,
  answer: string,
  env: NodeJS.ProcessEnv = {},
  base: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; out: string }> {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...base, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let answered = false;
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (!answered && prompt.test(out)) {
      answered = true;
      child.stdin.write(answer);
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, out });
    }),
  );
}

test('a mistyped command: "did you mean" on a terminal, and the suggestion runs when accepted; declined or without a terminal, exit 2', async () => {
  const yes = await underPty(
    ['gett', 'pods', '-n', 'podctl-nowhere', '--root-dir', '/nonexistent'],
    /Did you mean "podctl get pods -n podctl-nowhere --root-dir \/nonexistent"\? \[y\/N\]/,
    'y\r',
  );
  assert.match(yes.out, /"gett pods" is not a podctl command/);
  assert.match(yes.out, /No resources found in podctl-nowhere namespace\./, 'the suggested command ran with the same arguments');
  assert.equal(yes.code, 0);
  const no = await underPty(['lgos'], /Did you mean "podctl logs"\? \[y\/N\]/, 'n\r');
  assert.equal(no.code, 2);
  assert.match(no.out, /Run "podctl help" for the list of commands\./);
  const piped = podctl(['lgos']);
  assert.equal(piped.code, 2);
  assert.equal(
    piped.stderr,
    'podctl: "lgos" is not a podctl command.\nDid you mean "podctl logs"?\nRun "podctl help" for the list of commands.\n',
  );
});

test('NO_COLOR: no colour codes even on a terminal, where help has them otherwise', async () => {
  const sgrColour = new RegExp(`${String.fromCharCode(27)}\\[(3\\d|9\\d|1)m`);
  // The colour libraries turn styling off under CI whatever the terminal: compare without it.
  const { CI: _ci, NO_COLOR: _nc, FORCE_COLOR: _fc, ...plain } = process.env;
  const coloured = await underPty(['help'], /^$/, '', {}, plain);
  assert.match(coloured.out, /USAGE/);
  assert.match(coloured.out, sgrColour, 'on a terminal help is styled');
  const r = await underPty(['help'], /^$/, '', { NO_COLOR: '1' }, plain);
  assert.match(r.out, /USAGE/);
  assert.doesNotMatch(r.out, sgrColour, JSON.stringify(r.out));
});

test('shell completion: the bash function completes commands and flags', () => {
  const cache = scratchDir('e2e-autocomplete');
  try {
    const env = { ...process.env, XDG_CACHE_HOME: cache.dir };
    const setup = spawnSync(process.execPath, [BIN, 'autocomplete', 'bash'], { env, encoding: 'utf8' });
    assert.equal(setup.status, 0, setup.stderr);
    const fn = join(cache.dir, 'podctl', 'autocomplete', 'functions', 'bash', 'podctl.bash');
    const complete = (words: string[]) =>
      spawnSync(
        'bash',
        [
          '-c',
          `source '${fn}'; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _podctl_autocomplete; echo "\${COMPREPLY[@]}"`,
        ],
        { env, encoding: 'utf8' },
      )
        .stdout.trim()
        .split(/\s+/);
    assert.ok(complete(['podctl', 'lo']).includes('logs'));
    assert.ok(complete(['podctl', 'des']).includes('describe'));
    assert.ok(complete(['podctl', 'logs', '--ta']).includes('--tail'));
  } finally {
    cache.cleanup();
  }
});

test("every command's --help has examples", () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as {
    commands: Record<string, { hidden?: boolean }>;
  };
  // podctl's own commands, from its manifest; help and autocomplete are oclif's plugins, with manifests of
  // their own, so autocomplete is asked for by name (`help --help` is the root help, as oclif reads it).
  const ids = [...Object.keys(manifest.commands).filter((id) => !manifest.commands[id]!.hidden), 'autocomplete'];
  for (const id of ['get:pods', 'get:containers', 'get:images', 'logs', 'exec', 'delete', 'describe', 'events', 'inspect', 'stats'])
    assert.ok(ids.includes(id), id);
  for (const id of ids) {
    const h = podctl([...id.split(':'), '--help']);
    assert.equal(h.code, 0, id);
    assert.match(h.stdout, /EXAMPLES/, `${id} has examples`);
  }
});
