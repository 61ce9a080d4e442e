import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openrcScript, systemdUnit } from '../../src/core/node/supervise.js';
import { scratchDir } from '../support/e2e.js';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');

// systemd-analyze comes with Debian's systemd package, which `podctl runtime up` installs when it is missing.
test('agent install: the systemd unit passes systemd-analyze verify (and a broken one does not)', () => {
  const { dir, cleanup } = scratchDir('unit');
  try {
    const unit = systemdUnit({ exec: [process.execPath, BIN], rootDir: join(dir, 'root'), logRoot: join(dir, 'logs'), args: ['--runtime-endpoint', 'unix:///run/containerd/containerd.sock'] });
    assert.match(unit, /^ExecStart=\S+ \S+run\.js agent --root-dir \S+\/root --log-root \S+\/logs --runtime-endpoint unix:\/\/\/run\/containerd\/containerd\.sock$/m);
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
    assert.match(script, /^command_args="\S+run\.js agent --root-dir \S+\/root --log-root \S+\/logs"$/m);
    const path = join(dir, 'podctl-agent');
    writeFileSync(path, script);
    const r = spawnSync('sh', ['-n', path], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  } finally {
    cleanup();
  }
});
