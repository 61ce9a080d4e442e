import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cniConflist, containerdConfig, hostsToml, registryConfig } from '../../src/core/embedded/config.js';
import { embeddedEndpoint, embeddedPaths, mountsBelow } from '../../src/core/embedded/index.js';
import { DAEMON_START_GRACE_MS, daemonEnd, daemonStartEnded, livePid, startDaemon } from '../../src/core/embedded/process.js';

const paths = embeddedPaths({ root: '/r', runDir: '/run/x' });

test('containerd config: private root, state and socket; the settings this machine needs', () => {
  const toml = containerdConfig(paths);
  assert.match(toml, /^root = "\/r\/containerd"$/m);
  assert.match(toml, /^state = "\/run\/x\/state"$/m);
  assert.match(toml, /^ {2}address = "\/run\/x\/containerd\.sock"$/m);
  assert.match(toml, /restrict_oom_score_adj = true/);
  // Away from /run/netns, which podman turns into a shared bind mount that containerd 1.6 cannot unlink under.
  assert.match(toml, /netns_mounts_under_state_dir = true/);
  assert.match(toml, /sandbox_image = "registry\.k8s\.io\/pause:3\.6"/);
  assert.match(toml, /bin_dir = "\/usr\/lib\/cni"/);
  assert.match(toml, /conf_dir = "\/r\/cni\/net\.d"/);
  assert.match(toml, /config_path = "\/r\/certs\.d"/);
  // The mirrors setting falls back to the public host on a 404: never.
  assert.doesNotMatch(toml, /mirrors/);
  assert.equal(embeddedEndpoint(paths), 'unix:///run/x/containerd.sock');
});

test('registry hosts resolve through the loopback server only', () => {
  const hosts = hostsToml('http://127.0.0.1:5000');
  assert.match(hosts, /^server = "http:\/\/127\.0\.0\.1:5000"$/m);
  assert.match(hosts, /\[host\."http:\/\/127\.0\.0\.1:5000"\]\n {2}capabilities = \["pull", "resolve"\]/);
  assert.match(registryConfig(paths, 5000), /addr: 127\.0\.0\.1:5000/);
});

test("the CNI bridge uses its own subnet, not podman's 10.88.0.0/16, with IPAM state under our root", () => {
  const conf = JSON.parse(cniConflist(paths));
  const bridge = conf.plugins[0];
  assert.equal(bridge.type, 'bridge');
  assert.equal(bridge.ipam.ranges[0][0].subnet, '10.89.0.0/16');
  assert.equal(bridge.ipam.dataDir, '/r/cni/ipam');
  assert.equal(conf.plugins[1].type, 'portmap');
  // Masqueraded by one chain that runtime up sets up (masquerade.ts), not by a chain per pod.
  assert.equal(bridge.ipMasq, false);
});

test('mounts below our directories are found deepest first', () => {
  const mountinfo = [
    '22 1 0:21 / / rw - ext4 /dev/vda rw',
    '30 22 0:40 / /r/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/shm rw - tmpfs shm rw',
    '31 22 0:41 / /run/x/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw',
    '32 22 0:42 / /rx/other rw - tmpfs t rw',
    '33 31 0:43 / /run/x/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs/proc rw - proc proc rw',
  ].join('\n');
  const found = mountsBelow(mountinfo, ['/r', '/run/x']);
  assert.deepEqual([...found].sort(), [
    '/r/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/shm',
    '/run/x/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs',
    '/run/x/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs/proc',
  ]);
  // A mount inside another is unmounted first.
  assert.ok(
    found.indexOf('/run/x/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs/proc') <
      found.indexOf('/run/x/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs'),
  );
});

test('a pid file counts only when its process is alive and is the one we started', () => {
  const files: Record<string, string> = {
    '/pid': '1234\n',
    '/proc/1234/cmdline': 'containerd\0--config\0/r/containerd.toml\0',
  };
  const read = (p: string) => {
    if (p in files) return files[p]!;
    throw new Error('ENOENT');
  };
  const ours = (cmd: string[]) => cmd.includes('/r/containerd.toml');
  assert.equal(livePid('/pid', ours, read), 1234);
  assert.equal(
    livePid('/pid', (cmd) => cmd.includes('/other.toml'), read),
    undefined,
    'a reused pid of another process is not ours',
  );
  delete files['/proc/1234/cmdline'];
  assert.equal(livePid('/pid', ours, read), undefined, 'a dead process');
  assert.equal(livePid('/missing', ours, read), undefined);
});

test(
  'startDaemon records its pid, and how the daemon ended when it ends while this process runs (a signal, or its ' + 'exit code)',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podctl-daemon-'));
    try {
      const killed = startDaemon('sh', ['-c', 'echo up; kill -9 $$'], join(dir, 'a.log'), join(dir, 'a.pid'));
      const exited = startDaemon('sh', ['-c', 'exit 3'], join(dir, 'b.log'), join(dir, 'b.pid'));
      assert.equal(readFileSync(join(dir, 'a.pid'), 'utf8'), `${killed}\n`);
      // The ends arrive as exit events: waited for, in bounded steps.
      for (let i = 0; i < 500 && (daemonEnd(killed) === undefined || daemonEnd(exited) === undefined); i++)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal(daemonEnd(killed), 'signal SIGKILL');
      assert.equal(daemonEnd(exited), 'exit code 3');
      assert.equal(readFileSync(join(dir, 'a.log'), 'utf8'), 'up\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test('a daemon just started that does not read as itself yet (exec under way) has not ended; its exit, a pid gone or the grace past has', () => {
  const exec = { exitSeen: false, pidExists: true, otherForMs: 0 };
  assert.equal(daemonStartEnded(exec), false);
  assert.equal(daemonStartEnded({ ...exec, otherForMs: DAEMON_START_GRACE_MS }), false);
  assert.equal(daemonStartEnded({ ...exec, exitSeen: true }), true);
  assert.equal(daemonStartEnded({ ...exec, pidExists: false }), true);
  assert.equal(daemonStartEnded({ ...exec, otherForMs: DAEMON_START_GRACE_MS + 1 }), true);
});
