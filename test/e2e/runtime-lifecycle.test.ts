import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { embeddedPaths } from '../../src/core/embedded/index.js';
import { E2E_ENDPOINT, podctl, scratchDir } from '../support/e2e.js';

const paths = embeddedPaths();
const ours = (line: string) => line.includes(paths.rootDir) || line.includes(paths.runDir);
/** The pods' network namespaces: under containerd's state dir (netns_mounts_under_state_dir), and /run/netns for older set-ups. */
const netns = () =>
  [join(paths.stateDir, 'io.containerd.grpc.v1.cri', 'netns'), '/var/run/netns'].flatMap((d) => {
    try {
      return readdirSync(d)
        .filter((n) => n.startsWith('cni-'))
        .map((n) => join(d, n));
    } catch {
      return [];
    }
  });

/** The NAT rules that are podctl's: the pod network's chain, and any per-pod chain of the bridge plugin on the podctl network. */
const natRules = () =>
  execFileSync('iptables', ['-w', '5', '-t', 'nat', '-S'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes('PODCTL-POSTROUTING') || l.includes('name: \\"podctl\\"'));

test(
  'runtime down then up: nothing left behind, and it works again',
  { skip: E2E_ENDPOINT !== `unix://${paths.socket}` && 'e2e runs against another runtime' },
  () => {
    const netnsBefore = netns();
    const logs = scratchDir('lifecycle-logs');
    // A pod running while the runtime goes down must not leave its netns or mounts behind.
    const root = join(logs.dir, 'root');
    const run = podctl(['run', '--detach', 'examples/hello.yaml', '--log-root', logs.dir, '--root-dir', root]);
    assert.equal(run.code, 0, run.stderr);
    // The agent run --detach started goes first (by the PID in its lock); the pod keeps running.
    assert.equal(podctl(['agent', 'stop', '--root-dir', root]).code, 0);
    assert.ok(netns().length > netnsBefore.length, 'the pod has a network namespace');

    const down = podctl(['runtime', 'down']);
    assert.equal(down.code, 0, down.stderr);
    const status = JSON.parse(podctl(['runtime', 'status', '-o', 'json']).stdout);
    assert.equal(status.running, false);
    assert.equal(status.endpoint, `unix://${paths.socket}`);
    assert.equal(readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(ours).length, 0, 'no mounts left below our dirs');
    assert.deepEqual(
      netns().filter((n) => !netnsBefore.includes(n)),
      [],
      'no network namespace left',
    );
    assert.deepEqual(natRules(), [], 'no NAT rule of the pod network left');
    const info = podctl(['info']);
    assert.notEqual(info.code, 0);
    assert.match(info.stderr, /no CRI runtime at unix:\/\/.*containerd\.sock; start one with `podctl runtime up`/);

    const up = podctl(['runtime', 'up']);
    assert.equal(up.code, 0, up.stderr);
    assert.equal(JSON.parse(podctl(['runtime', 'status', '-o', 'json']).stdout).running, true);
    assert.match(podctl(['info']).stdout, /NetworkReady\s+true/);
    assert.ok(
      natRules().includes('-A POSTROUTING -s 10.89.0.0/16 -m comment --comment "podctl pod network masquerade" -j PODCTL-POSTROUTING'),
      natRules().join('\n'),
    );
    // up again is a no-op that succeeds.
    assert.equal(podctl(['runtime', 'up']).code, 0);
    logs.cleanup();
  },
);
