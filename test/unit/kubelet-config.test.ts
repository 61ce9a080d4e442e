import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyKubeletConfig, goDurationMs, loadKubeletConfig } from '../../src/cli/kubelet-config.js';
import { agentArgs } from '../../src/cli/node.js';
import { PodctlError } from '../../src/core/errors.js';
import { scratchDir } from '../support/e2e.js';

const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'run.js');
const HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
const load = (text: string) => loadKubeletConfig('/etc/podctl/kubelet.yaml', () => text);
const refused = (text: string, message: RegExp) =>
  assert.throws(
    () => load(text),
    (err: unknown) => err instanceof PodctlError && message.test(err.message) && err.exitCode === 2,
  );

test('a KubeletConfiguration sets the flags of the same meaning, with Go durations and resource maps', () => {
  const file = load(
    `${HEAD}containerLogMaxSize: 1Mi\ncontainerLogMaxFiles: 3\ncontainerLogMonitorInterval: 1m30s\nimageGCHighThresholdPercent: 90\nimageGCLowThresholdPercent: 70\n` +
      `imageMinimumGCAge: 2m0s\nmaxPods: 20\nsystemReserved: {cpu: 100m, memory: 100Mi}\nfileCheckFrequency: 5s\nstaticPodURL: http://127.0.0.1:8080/pods\n` +
      `staticPodURLHeader: {Authorization: [Bearer t]}\nclusterDNS: [10.96.0.10]\ncgroupDriver: systemd\n`,
  );
  assert.deepEqual(file.flags, {
    'container-log-max-size': '1Mi',
    'container-log-max-files': 3,
    'container-log-monitor-interval': '90000ms',
    'image-gc-high-threshold': 90,
    'image-gc-low-threshold': 70,
    'image-minimum-gc-age': '120000ms',
    'max-pods': 20,
    'system-reserved': 'cpu=100m,memory=100Mi',
    'file-check-frequency': '5000ms',
    'manifest-url': 'http://127.0.0.1:8080/pods',
    'manifest-url-header': ['Authorization: Bearer t'],
  });
  assert.deepEqual(file.notImplemented, ['clusterDNS', 'cgroupDriver'], "a real kubelet's fields load, and are named");
});

test('bad kubelet config input names the file, the field and what is expected', () => {
  refused(
    'apiVersion: v1\nkind: KubeletConfiguration\n',
    /kubelet\.yaml: apiVersion: expected "kubelet\.config\.k8s\.io\/v1beta1", got "v1"/,
  );
  refused('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n', /kubelet\.yaml: kind: expected "KubeletConfiguration", got "Pod"/);
  refused(
    `${HEAD}containerLogMaxSzie: 1Mi\n`,
    /kubelet\.yaml: containerLogMaxSzie: not a KubeletConfiguration field podctl knows; it reads containerLogMaxSize, /,
  );
  refused(`${HEAD}containerLogMaxFiles: 1\n`, /kubelet\.yaml: containerLogMaxFiles: expected a whole number of at least 2, got 1/);
  refused(`${HEAD}imageGCHighThresholdPercent: 101\n`, /imageGCHighThresholdPercent: expected a whole number from 0 to 100, got 101/);
  refused(`${HEAD}containerLogMaxSize: lots\n`, /containerLogMaxSize: expected a size such as 10Mi, got "lots"/);
  refused(`${HEAD}imageMinimumGCAge: soon\n`, /imageMinimumGCAge: expected a duration such as 10s, 2m or 1m30s, got "soon"/);
  refused(`${HEAD}systemReserved: [cpu]\n`, /systemReserved: expected a map of resource to quantity/);
  refused('- a\n- b\n', /kubelet\.yaml: \(document\): expected a KubeletConfiguration mapping/);
  assert.throws(() => loadKubeletConfig('/nope/kubelet.yaml'), /cannot read kubelet config file \/nope\/kubelet\.yaml/);
});

test('Go durations as metav1.Duration writes them', () => {
  assert.equal(goDurationMs('2m0s'), 120_000);
  assert.equal(goDurationMs('1h30m'), 5_400_000);
  assert.equal(goDurationMs('500ms'), 500);
  assert.equal(goDurationMs('1.5s'), 1500);
  assert.equal(goDurationMs(0), 0);
  assert.equal(goDurationMs('10'), undefined, 'a unit is required, as in Go');
  assert.equal(goDurationMs('-1s'), undefined);
});

test("a flag given on the command line wins over the file; a defaulted one takes the file's value; other commands' flags are left alone", () => {
  const file = load(`${HEAD}containerLogMaxSize: 1Mi\ncontainerLogMaxFiles: 3\nfileCheckFrequency: 5s\n`);
  const flags: Record<string, unknown> = { 'container-log-max-size': '50Mi', 'container-log-max-files': 5 };
  const metadata = { flags: { 'container-log-max-files': { setFromDefault: true } } };
  const unused = applyKubeletConfig(flags, metadata, new Set(['container-log-max-size', 'container-log-max-files']), file);
  assert.deepEqual(flags, { 'container-log-max-size': '50Mi', 'container-log-max-files': 3 });
  assert.deepEqual(unused, ['fileCheckFrequency'], 'a field this command has no use for is named, not dropped silently');
});

test('run --detach and agent install pass the node flags given (and the config file, by its absolute path) to the agent they start', () => {
  const flags = {
    'root-dir': 'state',
    'log-root': '/var/log/pods',
    'node-name': 'n1',
    'kubelet-config': 'kubelet.yaml',
    'container-log-max-size': '1Mi',
    'container-log-max-files': 5,
    'allow-privileged': true,
    'pleg-relist-period': '1s',
  };
  const metadata = { flags: { 'container-log-max-files': { setFromDefault: true }, 'pleg-relist-period': { setFromDefault: true } } };
  assert.deepEqual(agentArgs(flags, metadata, { also: ['pleg-relist-period'] }), [
    '--log-root',
    '/var/log/pods',
    '--node-name',
    'n1',
    '--allow-privileged',
    '--root-dir',
    join(process.cwd(), 'state'),
    '--kubelet-config',
    join(process.cwd(), 'kubelet.yaml'),
    '--container-log-max-size',
    '1Mi',
  ]);
  assert.deepEqual(agentArgs(flags, metadata, { always: [], omit: ['root-dir', 'log-root'] }), [
    '--node-name',
    'n1',
    '--allow-privileged',
    '--kubelet-config',
    join(process.cwd(), 'kubelet.yaml'),
    '--container-log-max-size',
    '1Mi',
  ]);
});

test("the CLI: a bad --kubelet-config stops watch before anything runs; agent install writes the file's path into the unit", () => {
  const { dir, cleanup } = scratchDir('kubelet-config');
  try {
    const bad = join(dir, 'kubelet.yaml');
    writeFileSync(bad, `${HEAD}containerLogMaxFiles: one\n`);
    const r = spawnSync(
      process.execPath,
      [BIN, 'watch', join(dir, 'manifests'), '--root-dir', join(dir, 'root'), '--kubelet-config', bad],
      { encoding: 'utf8', env: { ...process.env, PODCTL_RUNTIME_ENDPOINT: `unix://${join(dir, 'none.sock')}` } },
    );
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /kubelet\.yaml: containerLogMaxFiles: expected a whole number of at least 2, got "one"/);

    writeFileSync(bad, `${HEAD}containerLogMaxFiles: 3\n`);
    const units = join(dir, 'units');
    const i = spawnSync(
      process.execPath,
      [
        BIN,
        'agent',
        'install',
        '--dir',
        units,
        '--root-dir',
        join(dir, 'root'),
        '--kubelet-config',
        bad,
        '--image-gc-high-threshold',
        '90',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(i.status, 0, i.stderr);
    const exec = readFileSync(join(units, 'podctl-agent.service'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('ExecStart='))!;
    assert.match(exec, new RegExp(` --kubelet-config ${bad.replaceAll('/', '\\/')} --image-gc-high-threshold 90$`));
    assert.doesNotMatch(exec, /--container-log-max-files/, 'a defaulted flag is left to the file');
  } finally {
    cleanup();
  }
});
