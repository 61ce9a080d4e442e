import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IContainer, IPod, ISecret } from 'kubernetes-models/v1';
import { countRedacted, MIN_SUBSTRING_SECRET, REDACTED, redactEnv, secretEnvPredicate } from '../../src/core/redact.js';
import { expandCommand, makeEnvironmentVariables } from '../../src/core/kuberuntime/env.js';

const SECRET = 'hunter2-s3cr3t';

function secret(data: Record<string, string>): ISecret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'creds', namespace: 'default' },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  } as ISecret;
}

/**
 * The verbose ContainerStatus of a container as inspect and bundle print it (info expanded): the
 * environment and command line the kubelet made from the spec, repeated in containerd's CRI config
 * and OCI spec (which adds the image's PATH).
 */
function inspectDoc(container: IContainer, data: Record<string, string>): unknown {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', uid: 'u' },
    spec: { containers: [container] },
  } as IPod;
  const { env } = makeEnvironmentVariables({
    pod,
    container,
    objects: { configMap: () => undefined, secret: () => secret(data) },
    podIPs: ['10.0.0.2'],
    node: { cpuCores: 1, memoryBytes: 1 << 30 },
  });
  const command = expandCommand(container.command, env);
  const args = expandCommand(container.args, env);
  return {
    status: { id: 'c1', metadata: { name: container.name } },
    info: {
      info: {
        config: { metadata: { name: container.name }, command, args, envs: env },
        runtimeSpec: {
          process: { args: [...command, ...args], env: ['PATH=/usr/local/bin:/usr/bin:/bin', ...env.map((e) => `${e.key}=${e.value}`)] },
        },
      },
    },
  };
}

const envsOf = (doc: unknown) => (doc as { info: { info: { config: { envs: { key: string; value: string }[] } } } }).info.info.config.envs;
const ociOf = (doc: unknown) =>
  (doc as { info: { info: { runtimeSpec: { process: { args: string[]; env: string[] } } } } }).info.info.runtimeSpec.process;
const configOf = (doc: unknown) => (doc as { info: { info: { config: { command: string[]; args: string[] } } } }).info.info.config;

test(
  'inspect and bundle: a Secret value expanded through $(VAR) into another variable, an argument or a command word is ' +
    'redacted; literal values stay',
  () => {
    const container: IContainer = {
      name: 'app',
      image: 'busybox',
      command: ['sh', '-c', 'echo token=$(PW); sleep 3600'],
      args: ['--password=$(PW)', 'plain-arg'],
      env: [
        { name: 'PW', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
        { name: 'EXPANDED', value: 'pre-$(PW)-post' },
        { name: 'COPY', value: SECRET },
        { name: 'PLAIN', value: 'plain-value' },
      ],
    };
    const doc = inspectDoc(container, { password: SECRET });
    assert.ok(JSON.stringify(doc).includes(`pre-${SECRET}-post`), 'the kubelet expanded $(PW)');
    // inspect (from the container's spec copy) and bundle (from the pod's spec) both redact with the container's predicate.
    const out = redactEnv(doc, secretEnvPredicate(container));
    assert.ok(!JSON.stringify(out).includes(SECRET), JSON.stringify(out, null, 1));
    assert.deepEqual(envsOf(out), [
      { key: 'PW', value: REDACTED },
      { key: 'EXPANDED', value: REDACTED },
      { key: 'COPY', value: REDACTED },
      { key: 'PLAIN', value: 'plain-value' },
    ]);
    assert.deepEqual(configOf(out).command, ['sh', '-c', REDACTED]);
    assert.deepEqual(configOf(out).args, [REDACTED, 'plain-arg']);
    assert.deepEqual(ociOf(out).args, ['sh', '-c', REDACTED, REDACTED, 'plain-arg']);
    assert.deepEqual(ociOf(out).env, [
      'PATH=/usr/local/bin:/usr/bin:/bin',
      `PW=${REDACTED}`,
      `EXPANDED=${REDACTED}`,
      `COPY=${REDACTED}`,
      'PLAIN=plain-value',
    ]);
    assert.equal(countRedacted(out), 10);
    // Nothing else of the document changes.
    assert.deepEqual((out as { status: unknown }).status, (doc as { status: unknown }).status);
  },
);

test('a value from envFrom secretRef is redacted where a literal variable expands it', () => {
  const container: IContainer = {
    name: 'app',
    image: 'busybox',
    envFrom: [{ secretRef: { name: 'creds' } }],
    env: [
      { name: 'URL', value: 'postgres://app:$(DB_PASSWORD)@db/app' },
      { name: 'MODE', value: 'production' },
    ],
  };
  const out = redactEnv(inspectDoc(container, { DB_PASSWORD: SECRET }), secretEnvPredicate(container));
  assert.deepEqual(envsOf(out), [
    { key: 'DB_PASSWORD', value: REDACTED },
    { key: 'URL', value: REDACTED },
    { key: 'MODE', value: 'production' },
  ]);
  // The image's PATH is redacted (envFrom: any variable not set to a literal may be the Secret's), but
  // its value is not taken for a secret: only what the kubelet set (CRI envs) is.
  assert.deepEqual(ociOf(out).env, [`PATH=${REDACTED}`, `DB_PASSWORD=${REDACTED}`, `URL=${REDACTED}`, 'MODE=production']);
});

test(`a Secret value shorter than ${MIN_SUBSTRING_SECRET} characters is redacted where it is a whole value, not inside other text`, () => {
  const container: IContainer = {
    name: 'app',
    image: 'busybox',
    args: ['1', 'x$(N)', 'run-1-time'],
    env: [
      { name: 'N', valueFrom: { secretKeyRef: { name: 'creds', key: 'n' } } },
      { name: 'ALSO', value: '1' },
      { name: 'EXPANDED', value: 'v$(N)' },
      { name: 'REPLICAS', value: '10' },
    ],
  };
  const out = redactEnv(inspectDoc(container, { n: '1' }), secretEnvPredicate(container));
  assert.deepEqual(envsOf(out), [
    { key: 'N', value: REDACTED },
    { key: 'ALSO', value: REDACTED },
    { key: 'EXPANDED', value: 'v1' },
    { key: 'REPLICAS', value: '10' },
  ]);
  assert.deepEqual(configOf(out).args, [REDACTED, 'x1', 'run-1-time']);
  // At the minimum length, a part of a value is enough.
  const four = redactEnv(
    inspectDoc({ ...container, env: [{ name: 'N', valueFrom: { secretKeyRef: { name: 'creds', key: 'n' } } }] }, { n: 'abcd' }),
    secretEnvPredicate(container),
  );
  assert.deepEqual(configOf(four).args, ['1', REDACTED, 'run-1-time']);
});

test('an empty Secret value matches nothing; a container with no secret variable is left as it is', () => {
  const container: IContainer = {
    name: 'app',
    image: 'busybox',
    args: ['', 'a'],
    env: [
      { name: 'E', valueFrom: { secretKeyRef: { name: 'creds', key: 'e' } } },
      { name: 'EMPTY', value: '' },
    ],
  };
  const out = redactEnv(inspectDoc(container, { e: '' }), secretEnvPredicate(container));
  assert.deepEqual(envsOf(out), [
    { key: 'E', value: REDACTED },
    { key: 'EMPTY', value: '' },
  ]);
  assert.deepEqual(configOf(out).args, ['', 'a']);
  const plain: IContainer = { name: 'app', image: 'busybox', args: ['x'], env: [{ name: 'A', value: 'b' }] };
  const doc = inspectDoc(plain, {});
  assert.deepEqual(redactEnv(doc, secretEnvPredicate(plain)), doc);
});
