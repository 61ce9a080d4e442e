import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSettings, normalizeEndpoint, resolveEndpoints } from '../../src/core/cri/endpoint.js';
import { parseDuration } from '../../src/core/util/duration.js';
import { PodctlError } from '../../src/core/errors.js';

const embedded = 'unix:///run/podctl/embedded/containerd.sock';
const base = { env: {}, settings: {}, embeddedEndpoint: embedded, embeddedUp: false, socketExists: () => false };

test('endpoint resolution: first match wins', () => {
  const all = {
    ...base,
    runtimeFlag: '/flag.sock',
    env: { CONTAINER_RUNTIME_ENDPOINT: 'unix:///env.sock' },
    settings: { runtimeEndpoint: 'unix:///config.sock' },
    embeddedUp: true,
    socketExists: () => true,
  };
  assert.deepEqual(resolveEndpoints(all).runtime, { endpoint: 'unix:///flag.sock', source: 'flag' });
  assert.deepEqual(resolveEndpoints({ ...all, runtimeFlag: undefined }).runtime, { endpoint: 'unix:///env.sock', source: 'env' });
  assert.deepEqual(resolveEndpoints({ ...all, runtimeFlag: undefined, env: {} }).runtime, {
    endpoint: 'unix:///config.sock',
    source: 'config',
  });
  assert.deepEqual(resolveEndpoints({ ...all, runtimeFlag: undefined, env: {}, settings: {} }).runtime, {
    endpoint: embedded,
    source: 'embedded',
  });
  const standard = resolveEndpoints({ ...base, socketExists: (p) => p === '/run/crio/crio.sock' });
  assert.deepEqual(standard.runtime, { endpoint: 'unix:///run/crio/crio.sock', source: 'standard' });
  assert.deepEqual(resolveEndpoints(base).runtime, { endpoint: embedded, source: 'default' });
});

test('the image endpoint follows the runtime unless set', () => {
  assert.equal(resolveEndpoints({ ...base, runtimeFlag: '/a.sock' }).image.endpoint, 'unix:///a.sock');
  assert.equal(
    resolveEndpoints({ ...base, runtimeFlag: '/a.sock', env: { IMAGE_SERVICE_ENDPOINT: '/b.sock' } }).image.endpoint,
    'unix:///b.sock',
  );
  assert.equal(resolveEndpoints({ ...base, runtimeFlag: '/a.sock', imageFlag: 'unix:///c.sock' }).image.endpoint, 'unix:///c.sock');
});

test('deadlines: 30 s and 2 min unless configured', () => {
  const r = resolveEndpoints(base);
  assert.equal(r.timeoutMs, 30_000);
  assert.equal(r.pullTimeoutMs, 120_000);
  assert.equal(resolveEndpoints({ ...base, settings: { timeoutMs: 5000 }, pullTimeoutMs: 1000 }).timeoutMs, 5000);
  assert.equal(resolveEndpoints({ ...base, settings: { timeoutMs: 5000 }, timeoutMs: 7000 }).timeoutMs, 7000);
});

test('endpoints are normalized, and anything but a unix socket is refused with what is expected', () => {
  assert.equal(normalizeEndpoint('/run/x.sock'), 'unix:///run/x.sock');
  assert.equal(normalizeEndpoint('unix:/run/x.sock'), 'unix:///run/x.sock');
  assert.throws(
    () => normalizeEndpoint('tcp://127.0.0.1:1', '--runtime-endpoint'),
    /invalid --runtime-endpoint "tcp:\/\/127\.0\.0\.1:1": expected a unix socket/,
  );
  assert.throws(() => normalizeEndpoint('unix://relative.sock'), PodctlError);
});

test('config file: crictl keys, errors name the file and the key', async () => {
  const read = (text: string) => () => text;
  assert.deepEqual(
    await loadSettings('/etc/p.yaml', read('runtime-endpoint: unix:///x.sock\ntimeout: 10s\npull-timeout: 5m\ndebug: true\n')),
    {
      runtimeEndpoint: 'unix:///x.sock',
      timeoutMs: 10_000,
      pullTimeoutMs: 300_000,
      debug: true,
    },
  );
  await assert.rejects(
    loadSettings('/etc/p.yaml', read('runtime_endpoint: x\n')),
    /config file \/etc\/p\.yaml: unknown setting "runtime_endpoint"; expected one of runtime-endpoint/,
  );
  await assert.rejects(loadSettings('/etc/p.yaml', read('timeout: soon\n')), /\/etc\/p\.yaml: timeout: expected a positive duration/);
  await assert.rejects(loadSettings('/etc/p.yaml', read('a: [\n')), /config file \/etc\/p\.yaml is not valid YAML/);
  // The default file may be absent; a file named explicitly may not.
  const enoent = () => {
    throw Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
  };
  assert.deepEqual(await loadSettings(undefined, enoent), {});
  await assert.rejects(loadSettings('/nope.yaml', enoent), /cannot read config file \/nope\.yaml/);
});

test('durations', () => {
  assert.equal(parseDuration('500ms', 'x'), 500);
  assert.equal(parseDuration('2m', 'x'), 120_000);
  assert.equal(parseDuration(3, 'x'), 3000);
  assert.throws(() => parseDuration('-1s', '--timeout'), /--timeout: expected a positive duration/);
});
