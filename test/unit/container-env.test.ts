import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IConfigMap, IPod, ISecret } from 'kubernetes-models/v1';
import { dnsConfigFor, managedHostsFile, oomScoreAdj, parseResolvConf } from '../../src/core/kuberuntime/config.js';
import { expand, expandCommand, makeEnvironmentVariables, type EnvContext } from '../../src/core/kuberuntime/env.js';
import { StartContainerError } from '../../src/core/kuberuntime/images.js';
import { ObjectStore } from '../../src/core/objects.js';
import { parseManifestText } from '../../src/core/pod/index.js';

function pod(spec: string, meta = ''): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: envpod\n  namespace: team\n${meta}spec:\n${spec}`;
  const parsed = parseManifestText(text, { kind: 'file', path: '/env/pod.yaml' }, { nodeName: 'node-a' });
  assert.deepEqual(
    parsed.problems.filter((p) => p.severity === 'error'),
    [],
  );
  return parsed.pods[0]!.pod;
}

const objects = new ObjectStore();
objects.set('file', {
  configMaps: [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'team' },
      data: { MODE: 'fast', 'bad key': 'x', LEVEL: '3' },
    } as IConfigMap,
  ],
  secrets: [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds', namespace: 'team' },
      data: { PASSWORD: Buffer.from('s3cret').toString('base64') },
    } as ISecret,
  ],
});
const node = { cpuCores: 2, memoryBytes: 8 * 2 ** 30 };
const ctx = (p: IPod): EnvContext => ({
  pod: p,
  container: p.spec!.containers[0]!,
  objects,
  podIPs: ['10.89.0.7'],
  hostIP: '192.0.2.10',
  node,
});
const asMap = (r: { env: { key: string; value: string }[] }) => Object.fromEntries(r.env.map((e) => [e.key, e.value]));

describe('container environment (makeEnvironmentVariables)', () => {
  test('$(VAR) expansion: defined names replaced, undefined kept, $$ escapes, unterminated left alone', () => {
    const vars = new Map([
      ['A', 'one'],
      ['B', 'two'],
    ]);
    const look = (n: string) => vars.get(n);
    assert.equal(expand('$(A)-$(B)', look), 'one-two');
    assert.equal(expand('$(MISSING) and $(A)', look), '$(MISSING) and one');
    assert.equal(expand('$$(A) costs $$5', look), '$(A) costs $5');
    assert.equal(expand('open $(A', look), 'open $(A');
    assert.equal(expand('$A $', look), '$A $');
    assert.deepEqual(expandCommand(['echo', '$(A)', '$$(A)'], [{ key: 'A', value: 'x' }]), ['echo', 'x', '$(A)']);
  });

  test('fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, envFrom with prefix, and expansion in order', () => {
    const p = pod(
      `  serviceAccountName: builder
  containers:
  - name: app
    image: busybox:1.36
    resources: {limits: {memory: 64Mi, cpu: 500m}}
    envFrom:
    - configMapRef: {name: settings}
      prefix: CFG_
    env:
    - {name: NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOST, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: CPU_M, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: MODE, valueFrom: {configMapKeyRef: {name: settings, key: MODE}}}
    - {name: PASS, valueFrom: {secretKeyRef: {name: creds, key: PASSWORD}}}
    - {name: GREETING, value: "$(NAME) in $(NS) at $(IP) mode=$(CFG_MODE) $$(NAME) $(NOPE)"}
    - {name: LATER, value: "$(EARLY)"}
    - {name: EARLY, value: set}
`,
      '  labels: {tier: web}\n',
    );
    const r = makeEnvironmentVariables(ctx(p));
    assert.deepEqual(r.skipped, ['CFG_bad key']);
    const env = asMap(r);
    assert.deepEqual(env, {
      CFG_MODE: 'fast',
      CFG_LEVEL: '3',
      NAME: 'envpod',
      NS: 'team',
      TIER: 'web',
      NODE: 'node-a',
      SA: 'builder',
      IP: '10.89.0.7',
      HOST: '192.0.2.10',
      MEM_MI: '64',
      CPU: '1',
      CPU_M: '500',
      MODE: 'fast',
      PASS: 's3cret',
      GREETING: 'envpod in team at 10.89.0.7 mode=fast $(NAME) $(NOPE)',
      LATER: '$(EARLY)',
      EARLY: 'set',
    });
  });

  test('a resource field without a limit falls back to the node allocatable', () => {
    const p = pod(
      `  containers:\n  - name: app\n    image: busybox:1.36\n    env:\n    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Gi}}}\n    - {name: CPUS, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}\n`,
    );
    assert.deepEqual(asMap(makeEnvironmentVariables(ctx(p))), { MEM: '8', CPUS: '2' });
  });

  test('a missing required ConfigMap, Secret or key is CreateContainerConfigError naming it; optional ones are skipped', () => {
    const cases: [string, RegExp][] = [
      ['{name: X, valueFrom: {configMapKeyRef: {name: nope, key: k}}}', /^configmap "nope" not found$/],
      ['{name: X, valueFrom: {configMapKeyRef: {name: settings, key: NOKEY}}}', /^couldn't find key NOKEY in ConfigMap team\/settings$/],
      ['{name: X, valueFrom: {secretKeyRef: {name: nope, key: k}}}', /^secret "nope" not found$/],
      ['{name: X, valueFrom: {secretKeyRef: {name: creds, key: NOKEY}}}', /^couldn't find key NOKEY in Secret team\/creds$/],
    ];
    for (const [entry, message] of cases) {
      const p = pod(`  containers:\n  - name: app\n    image: busybox:1.36\n    env:\n    - ${entry}\n`);
      assert.throws(
        () => makeEnvironmentVariables(ctx(p)),
        (err: unknown) => err instanceof StartContainerError && err.reason === 'CreateContainerConfigError' && message.test(err.message),
        entry,
      );
    }
    const fromMissing = pod(`  containers:\n  - name: app\n    image: busybox:1.36\n    envFrom:\n    - secretRef: {name: absent}\n`);
    assert.throws(() => makeEnvironmentVariables(ctx(fromMissing)), /secret "absent" not found/);
    const optional = pod(
      `  containers:\n  - name: app\n    image: busybox:1.36\n    envFrom:\n    - secretRef: {name: absent, optional: true}\n    env:\n    - {name: X, valueFrom: {configMapKeyRef: {name: nope, key: k, optional: true}}}\n    - {name: W, valueFrom: {secretKeyRef: {name: creds, key: NOKEY, optional: true}}}\n    - {name: Z, value: z}\n`,
    );
    assert.deepEqual(asMap(makeEnvironmentVariables(ctx(optional))), { Z: 'z' });
  });
});

describe('CRI config details', () => {
  test('OOM score: Guaranteed -997, BestEffort 1000, Burstable by memory request within [3, 999]', () => {
    const g = pod(`  containers:\n  - {name: app, image: busybox:1.36, resources: {limits: {cpu: 100m, memory: 64Mi}}}\n`);
    const b = pod(`  containers:\n  - {name: app, image: busybox:1.36}\n`);
    const u = pod(`  containers:\n  - {name: app, image: busybox:1.36, resources: {requests: {memory: 1Gi}}}\n`);
    const cap = 4 * 2 ** 30;
    assert.equal(oomScoreAdj(g, g.spec!.containers[0]!, cap), -997);
    assert.equal(oomScoreAdj(b, b.spec!.containers[0]!, cap), 1000);
    assert.equal(oomScoreAdj(u, u.spec!.containers[0]!, cap), 750);
    assert.equal(oomScoreAdj(u, u.spec!.containers[0]!, 2 ** 30), 3);
  });

  test('DNS: None uses dnsConfig alone; other policies merge it over the host resolv.conf; no dnsConfig leaves it to the runtime', () => {
    const host = 'nameserver 192.0.2.53\nsearch corp.example\noptions ndots:2 timeout:1\n';
    assert.deepEqual(parseResolvConf(host), { servers: ['192.0.2.53'], searches: ['corp.example'], options: ['ndots:2', 'timeout:1'] });
    const none = pod(
      `  dnsPolicy: None\n  dnsConfig: {nameservers: [1.1.1.1], searches: [a.b], options: [{name: ndots, value: "5"}]}\n  containers:\n  - {name: app, image: busybox:1.36}\n`,
    );
    assert.deepEqual(dnsConfigFor(none, host), { servers: ['1.1.1.1'], searches: ['a.b'], options: ['ndots:5'] });
    const merged = pod(
      `  dnsConfig: {nameservers: [1.1.1.1], searches: [a.b], options: [{name: ndots, value: "5"}, {name: edns0}]}\n  containers:\n  - {name: app, image: busybox:1.36}\n`,
    );
    assert.deepEqual(dnsConfigFor(merged, host), {
      servers: ['192.0.2.53', '1.1.1.1'],
      searches: ['corp.example', 'a.b'],
      options: ['ndots:5', 'timeout:1', 'edns0'],
    });
    assert.equal(dnsConfigFor(pod(`  containers:\n  - {name: app, image: busybox:1.36}\n`), host), undefined);
  });

  test('managed /etc/hosts: the pod name with its FQDN for a subdomain, and hostAliases; a host-network pod copies the host file', () => {
    const p = pod(
      `  hostname: web-0\n  subdomain: web\n  hostAliases: [{ip: 192.0.2.1, hostnames: [db, db.local]}]\n  containers:\n  - {name: app, image: busybox:1.36}\n`,
    );
    const text = managedHostsFile(p, ['10.89.0.9'], 'ignored');
    assert.match(text, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
    assert.match(text, /\n10\.89\.0\.9\tweb-0\.web\.team\.svc\.cluster\.local\tweb-0\n/);
    assert.match(text, /\n# Entries added by HostAliases\.\n192\.0\.2\.1\tdb\tdb\.local\n$/);
    const h = pod(
      `  hostNetwork: true\n  hostAliases: [{ip: 192.0.2.1, hostnames: [db]}]\n  containers:\n  - {name: app, image: busybox:1.36}\n`,
    );
    assert.equal(
      managedHostsFile(h, [], '127.0.0.1 localhost\nhostline'),
      '127.0.0.1 localhost\nhostline\n\n# Entries added by HostAliases.\n192.0.2.1\tdb\n',
    );
  });
});
