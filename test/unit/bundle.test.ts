import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { Bundle } from '../../src/core/bundle/index.js';
import { REDACTED, redactEnv, secretEnvPredicate } from '../../src/core/redact.js';
import { parseTar } from '../../src/core/exec/tar.js';

test('secret env names: secretKeyRef ones; with envFrom secretRef, everything not set to a literal value', () => {
  const byRef = secretEnvPredicate({ name: 'a', env: [{ name: 'PASS', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }, { name: 'PLAIN', value: 'x' }] });
  assert.deepEqual(['PASS', 'PLAIN', 'PATH'].map(byRef), [true, false, false]);
  const whole = secretEnvPredicate({ name: 'a', env: [{ name: 'PLAIN', value: 'x' }], envFrom: [{ secretRef: { name: 's' } }] });
  assert.deepEqual(['DB_PASSWORD', 'PLAIN'].map(whole), [true, false]);
  assert.equal(secretEnvPredicate(undefined)('PASS'), false);
});

test('redactEnv replaces secret values in CRI envs and OCI process.env, anywhere in the document, and keeps the rest', () => {
  const doc = {
    status: { id: 'c1' },
    info: {
      config: { envs: [{ key: 'PASS', value: 'hunter2' }, { key: 'PLAIN', value: 'ok' }] },
      runtimeSpec: { process: { env: ['PASS=hunter2', 'PLAIN=ok', 'PATH=/bin'] } },
    },
  };
  const out = redactEnv(doc, (n) => n === 'PASS');
  assert.ok(!JSON.stringify(out).includes('hunter2'));
  assert.deepEqual((out as typeof doc).info.config.envs, [{ key: 'PASS', value: REDACTED }, { key: 'PLAIN', value: 'ok' }]);
  assert.deepEqual((out as typeof doc).info.runtimeSpec.process.env, [`PASS=${REDACTED}`, 'PLAIN=ok', 'PATH=/bin']);
  assert.equal(doc.info.config.envs[0]!.value, 'hunter2', 'the input is not modified');
});

test('a bundle is a .tar.gz of its files under one top directory, with their directories', () => {
  const b = new Bundle('web-bundle');
  b.add('status.json', '{}\n');
  b.add('logs/app/current.log', 'line\n');
  const entries = parseTar(gunzipSync(b.toTarGz()));
  assert.deepEqual(
    entries.map((e) => [e.name, e.type]),
    [
      ['web-bundle/', 'directory'],
      ['web-bundle/logs/', 'directory'],
      ['web-bundle/logs/app/', 'directory'],
      ['web-bundle/status.json', 'file'],
      ['web-bundle/logs/app/current.log', 'file'],
    ],
  );
  assert.equal(entries[4]!.data!.toString(), 'line\n');
});
