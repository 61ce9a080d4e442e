import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openrcScript, systemdUnit } from '../../src/core/node/supervise.js';
import { scratchDir } from '../support/e2e.js';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

// systemd-analyze comes with Debian's systemd package, which `podctl runtime up` installs when it is missing.
test('agent install: the systemd unit passes systemd-analyze verify (and a broken one does not)', () => {
  const { dir, cleanup } = scratchDir('unit');
  try {
    const unit = systemdUnit({
      exec: [process.execPath, BIN],
      rootDir: join(dir, 'root'),
      logRoot: join(dir, 'logs'),
      args: ['--runtime-endpoint', 'unix:///run/containerd/containerd.sock'],
    });
    assert.match(
      unit,
      /^ExecStart=\S+ \S+run\.js agent --root-dir \S+\/root --log-root \S+\/logs --runtime-endpoint unix:\/\/\/run\/containerd\/containerd\.sock$/m,
    );
    assert.match(unit, /^KillMode=process$/m, 'stopping the agent leaves the pods (the containers are not its children anyway)');
    assert.match(unit, /^WantedBy=multi-user\.target$/m);
    const path = join(dir, 'podctl-agent.service');
    writeFileSync(path, unit);
    const ok = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stderr);
    const broken = join(dir, 'broken.service');
    writeFileSync(broken, unit.replace(process.execPath, join(dir, 'no-such-node')));
    assert.notEqual(spawnSync('systemd-analyze', ['verify', broken], { encoding: 'utf8' }).status, 0, 'verify does check the command');
  } finally {
    cleanup();
  }
});

test('agent install --init openrc: a script sh can parse, running the same agent command under supervise-daemon', () => {
  const { dir, cleanup } = scratchDir('openrc');
  try {
    const script = openrcScript({ exec: [process.execPath, BIN], rootDir: join(dir, 'root'), logRoot: join(dir, 'logs') });
    assert.match(script, /^#!\/sbin\/openrc-run$/m);
    assert.match(script, /^supervisor=supervise-daemon$/m);
    assert.match(script, /^command_args='\S+run\.js agent --root-dir \S+\/root --log-root \S+\/logs'$/m);
    const path = join(dir, 'podctl-agent');
    writeFileSync(path, script);
    const r = spawnSync('sh', ['-n', path], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  } finally {
    cleanup();
  }
});

/** Paths that a shell or systemd would read as something else: a command substitution, quotes, a specifier, a variable. */
const HOSTILE = `x$(touch PWNED)"q'u%n$HOME\\b; ;`;

test(
  'agent install --init openrc: a --root-dir with $(...), quotes and a backslash runs nothing and comes back as it was, ' +
    'through the source and the eval',
  () => {
    const { dir, cleanup } = scratchDir('openrc-quote');
    try {
      const root = join(dir, HOSTILE, 'root');
      const logRoot = join(dir, `l ${HOSTILE}`);
      const args = ['--kubelet-config', join(dir, `k"${HOSTILE}.yaml`)];
      const script = openrcScript({ exec: [process.execPath, join(dir, `bin ${HOSTILE}`, 'run.js')], rootDir: root, logRoot, args });
      const path = join(dir, 'podctl-agent');
      writeFileSync(path, script);
      assert.equal(spawnSync('sh', ['-n', path], { encoding: 'utf8' }).status, 0);
      // What openrc-run does: source the script (in a directory where PWNED would land), then eval
      // command, command_args and the logs as supervise-daemon.sh does.
      const probe = [
        '. ./podctl-agent',
        `printf '%s\\n' "$description"`,
        'eval "set -- $command $command_args"',
        `printf '%s\\n' "$#" "$@"`,
        'eval "set -- $output_log $error_log"',
        `printf '%s\\n' "$@"`,
      ].join('\n');
      const r = spawnSync('sh', ['-c', probe], { cwd: dir, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const argv = [process.execPath, join(dir, `bin ${HOSTILE}`, 'run.js'), 'agent', '--root-dir', root, '--log-root', logRoot, ...args];
      assert.deepEqual(r.stdout.split('\n').slice(0, -1), [
        `podctl node agent (${root})`,
        String(argv.length),
        ...argv,
        join(root, 'agent.log'),
        join(root, 'agent.log'),
      ]);
      assert.ok(!existsSync(join(dir, 'PWNED')), 'nothing in --root-dir ran');
    } finally {
      cleanup();
    }
  },
);

test(
  'agent install: the systemd unit escapes quotes, backslashes, % specifiers and $ (systemd-analyze verify finds the ' +
    'executable by its exact path)',
  () => {
    const { dir, cleanup } = scratchDir('unit-quote');
    try {
      // The executable sits under the hostile directory: verify checks it exists, so a path systemd read
      // differently (a specifier expanded, a quote or backslash taken as syntax) fails.
      const binDir = join(dir, `bin ${HOSTILE.replace(/["'\\]/g, '')}`);
      mkdirSync(binDir, { recursive: true });
      const node = join(binDir, 'node');
      symlinkSync(process.execPath, node);
      const root = join(dir, HOSTILE, 'root');
      const unit = systemdUnit({
        exec: [node, BIN],
        rootDir: root,
        logRoot: join(dir, 'logs'),
        args: ['--kubelet-config', `/etc/a%%b$X "c"`],
      });
      const line = /^ExecStart=(.*)$/m.exec(unit)![1]!;
      assert.ok(line.includes(' --kubelet-config "/etc/a%%%%b$$X \\"c\\""'), line);
      assert.ok(line.includes(`"${root.replace(/[\\"]/g, '\\$&').replace(/%/g, '%%').replace(/\$/g, '$$$$')}"`), line);
      assert.match(unit, /^Description=podctl node agent \(.*u%%n\$HOME.*\)$/m);
      const path = join(dir, 'podctl-agent.service');
      writeFileSync(path, unit);
      const ok = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
      assert.equal(ok.status, 0, ok.stderr);
      // An executable systemd would refuse to start is refused here, saying why.
      assert.throws(
        () => systemdUnit({ exec: [join(dir, `it's`, 'node'), BIN], rootDir: root, logRoot: dir }),
        /systemd does not start an executable whose path holds a quote or a backslash/,
      );
    } finally {
      cleanup();
    }
  },
);

test('agent install: a path with a newline is refused, naming it, and nothing is written', () => {
  const { dir, cleanup } = scratchDir('unit-newline');
  try {
    const out = join(dir, 'units');
    const r = spawnSync(
      process.execPath,
      [BIN, 'agent', 'install', '--dir', out, '--root-dir', join(dir, 'a\nExecStartPre=/bin/touch /tmp/x')],
      { encoding: 'utf8' },
    );
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /holds a control character/);
    assert.match(r.stderr, /a\\nExecStartPre/);
    assert.ok(!existsSync(out), 'nothing is written');
    assert.throws(() => openrcScript({ exec: ['/bin/node'], rootDir: '/a\tb', logRoot: '/l' }), /control character/);
  } finally {
    cleanup();
  }
});
