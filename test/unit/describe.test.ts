import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { IPod, IPodStatus } from 'kubernetes-models/v1';
import { EventRecorder } from '../../src/core/events.js';
import { FakeClock } from '../../src/core/clock.js';
import { Metrics } from '../../src/core/metrics.js';
import { fetchPodEvents, nextStart, whyNotRunning } from '../../src/core/podview/describe.js';
import { startStatusServer } from '../../src/core/api/server.js';
import { describeTime, envFromLines, envLines, renderDescribe } from '../../src/cli/describe.js';
import { makePod } from '../support/builders.js';
import { scratchDir } from '../support/e2e.js';

const NOW = Date.parse('2026-01-01T00:01:00Z');
const withStatus = (pod: IPod, status: IPodStatus): IPod => ({ ...pod, status });
const cs = (extra: object) => ({ name: 'app', image: 'busybox:1.36', imageID: '', ready: false, restartCount: 0, ...extra });

test('why: CrashLoopBackOff names the exit code, the exits, when it starts next and the last log line', () => {
  const pod = withStatus(makePod(), {
    phase: 'Running',
    containerStatuses: [
      cs({
        restartCount: 2,
        state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container=app' } },
        lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: '2026-01-01T00:00:50Z' } },
      }),
    ],
  });
  assert.equal(
    whyNotRunning(pod, () => 'crashing now', NOW),
    'container app is in CrashLoopBackOff: exited with code 1, 3 exits so far; next start in 10 s; last log line: "crashing now"',
  );
  assert.equal(nextStart(pod.status!.containerStatuses![0]!), Date.parse('2026-01-01T00:01:10Z'));
  assert.match(
    whyNotRunning(pod, () => undefined, NOW + 60_000)!,
    /next start due now; no output$/,
  );
});

test('why: image pulls, Failed and Succeeded pods, unknown readiness; nothing for a ready pod', () => {
  const pull = withStatus(makePod(), {
    phase: 'Pending',
    containerStatuses: [cs({ state: { waiting: { reason: 'ImagePullBackOff', message: 'not found' } } })],
  });
  assert.match(
    whyNotRunning(pull, () => undefined, NOW)!,
    /^container app cannot start: image "busybox:1.36" could not be pulled \(not found\)/,
  );
  const failed = withStatus(makePod({ restartPolicy: 'Never' }), {
    phase: 'Failed',
    containerStatuses: [cs({ state: { terminated: { exitCode: 2 } } })],
  });
  assert.match(
    whyNotRunning(failed, () => 'bye', NOW)!,
    /^pod Failed: container app exited with code 2 and restartPolicy Never does not start it again; last log line: "bye"/,
  );
  const done = withStatus(makePod({ restartPolicy: 'OnFailure' }), {
    phase: 'Succeeded',
    containerStatuses: [cs({ state: { terminated: { exitCode: 0 } } })],
  });
  assert.match(
    whyNotRunning(done, () => undefined, NOW)!,
    /^pod Succeeded: its containers ran to completion \(restartPolicy OnFailure\)/,
  );
  const unready = withStatus(makePod(), { phase: 'Running', containerStatuses: [cs({ state: { running: {} } })] });
  assert.match(
    whyNotRunning(unready, () => undefined, NOW, ['app'])!,
    /readiness probe's result is unknown: no running watch probes it/,
  );
  assert.match(
    whyNotRunning(unready, () => undefined, NOW)!,
    /runs but is not ready/,
  );
  const ready = withStatus(makePod(), { phase: 'Running', containerStatuses: [cs({ ready: true, state: { running: {} } })] });
  assert.equal(
    whyNotRunning(ready, () => undefined, NOW),
    undefined,
  );
});

test('the status server serves the kubelet events as a v1 EventList, one pod with ?uid=', async () => {
  const clock = new FakeClock(NOW);
  const events = new EventRecorder(clock);
  events.record({ uid: 'u1', namespace: 'default', name: 'web' }, 'Warning', 'BackOff', 'back-off 10s', 'app');
  events.record({ uid: 'u1', namespace: 'default', name: 'web' }, 'Warning', 'BackOff', 'back-off 10s', 'app');
  events.record({ uid: 'u2', namespace: 'default', name: 'db' }, 'Normal', 'Started', 'Started container db', 'db');
  const dir = scratchDir('unit-events');
  const socket = join(dir.dir, 'podctl.sock');
  const server = await startStatusServer(socket, {
    pods: () => [],
    health: () => ({ ok: true, checks: [] }),
    metrics: new Metrics(),
    events: () => events.all(),
  });
  try {
    const got = await fetchPodEvents(socket, 'u1');
    assert.deepEqual(got, [
      { type: 'Warning', reason: 'BackOff', message: 'back-off 10s', count: 2, first: NOW, last: NOW, container: 'app' },
    ]);
    assert.equal(await fetchPodEvents(join(dir.dir, 'none.sock'), 'u1'), undefined);
  } finally {
    server.close();
    dir.cleanup();
  }
});

test(
  'describe Environment: values as written, references named and never resolved for secrets, fields and resources resolved ' + 'as kubectl',
  () => {
    const pod: IPod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'lab', uid: 'u-1', labels: { app: 'web' } },
      spec: {
        nodeName: 'node-a',
        containers: [
          {
            name: 'app',
            image: 'busybox:1.36',
            resources: { limits: { memory: '64Mi' } },
            env: [
              { name: 'PLAIN', value: 'one\ntwo' },
              { name: 'POD', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
              { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
              { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
              { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
              { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
              { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'mode', optional: true } } },
            ],
            envFrom: [{ configMapRef: { name: 'settings' } }, { secretRef: { name: 'creds', optional: true }, prefix: 'DB_' }],
          },
        ],
      },
      status: { podIP: '10.88.0.7', podIPs: [{ ip: '10.88.0.7' }] },
    };
    const c = pod.spec!.containers[0]!;
    assert.deepEqual(envLines(pod, c), [
      // Aligned as kubectl's tabwriter aligns them: each column as wide as its widest cell, plus 2.
      '      PLAIN:     one',
      '                 two',
      '      POD:       web (v1:metadata.name)',
      '      IP:        10.88.0.7 (v1:status.podIP)',
      "      APP:       web (v1:metadata.labels['app'])",
      '      MEM:       64 (limits.memory)',
      '      CPU:       node allocatable (limits.cpu)',
      "      PASSWORD:  <set to the key 'password' in secret 'creds'>     Optional: false",
      "      MODE:      <set to the key 'mode' of config map 'settings'>  Optional: true",
    ]);
    assert.deepEqual(envFromLines(c), [
      '      settings  ConfigMap                 Optional: false',
      "      creds     Secret with prefix 'DB_'  Optional: true",
    ]);
  },
);

test('describe: a container with no env or mounts says <none> in the column of its other fields, as kubectl', () => {
  const pod: IPod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: 'u' },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] },
    status: {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'app',
          image: 'busybox:1.36',
          imageID: '',
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
        },
      ],
    },
  };
  const lines = renderDescribe(pod, 'watch', [], [], undefined, undefined, Date.parse('2026-01-01T00:01:00Z')).split('\n');
  const at = lines.indexOf('    Restart Count:  0');
  assert.ok(at > 0, lines.join('\n'));
  assert.deepEqual(lines.slice(at + 1, at + 3), ['    Environment:    <none>', '    Mounts:         <none>']);
});

test("describe's times are kubectl's: RFC 1123 with the local zone's offset, to the second", () => {
  for (const iso of ['2026-11-27T23:24:51.593Z', '2026-02-01T07:05:09Z', '2024-02-29T12:00:00Z']) {
    const shown = describeTime(iso)!;
    assert.match(
      shown,
      /^(Sun|Mon|Tue|Wed|Thu|Fri|Sat), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}$/,
    );
    assert.equal(Date.parse(shown), Math.floor(Date.parse(iso) / 1000) * 1000, `${iso} -> ${shown}`);
  }
  assert.equal(describeTime(undefined), undefined);
});
