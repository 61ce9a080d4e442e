import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { status as Code } from '@grpc/grpc-js';
import { FakeClock } from '../../src/core/clock.js';
import { whyNotRunning } from '../../src/core/podview/describe.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { Metrics } from '../../src/core/metrics.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { PodView, inferWaiting, specFromRuntime } from '../../src/core/podview/index.js';
import { crashBackoffMs } from '../../src/core/kuberuntime/crash-backoff.js';
import { startStatusServer } from '../../src/core/api/server.js';
import { humanDuration, restartsCell } from '../../src/cli/table.js';
import { container, instance, makePod, podStatus, sandbox } from '../support/builders.js';
import { scratchDir } from '../support/e2e.js';

function pod(name: string, containers: string, restartPolicy = 'Always'): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, labels: {tier: web}}\nspec:\n  restartPolicy: ${restartPolicy}\n  containers:\n${containers}`;
  const parsed = parseManifestText(text, { kind: 'file', path: `/unit/${name}.yaml` }, { nodeName: 'unit' });
  assert.deepEqual(parsed.problems, []);
  return parsed.pods[0]!.pod;
}

describe('PodView: v1 Pods rebuilt from the runtime by podctl labels', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let clock: FakeClock;
  let kubelet: Kubelet;
  const dir = scratchDir('unit-podview');

  before(async () => {
    clock = new FakeClock();
    fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
    kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: dir.dir, nodeName: 'unit' });
  });
  after(async () => {
    client.close();
    await fake.stop();
    dir.cleanup();
  });

  test('a crashed container under Always shows CrashLoopBackOff with the delay the kubelet would wait', async () => {
    const p = pod(
      'crashy',
      '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n  - name: probed\n    image: busybox:1.36\n    readinessProbe: {exec: {command: ["true"]}}\n',
    );
    await kubelet.syncPod(p, 'create');
    const appId = () => fake.containers().find((c) => c.state === 'CONTAINER_RUNNING' && c.metadata.name === 'app')!.id;
    fake.exitContainer(appId(), 1);
    await kubelet.syncPod(p, 'sync'); // restarted at once: restartCount 1
    clock.advance(5000);
    fake.exitContainer(appId(), 1);
    await kubelet.syncPod(p, 'sync'); // in backoff: the kubelet's own status says why

    const view = new PodView({ runtime: client, images: client, clock });
    const [v] = await view.list({ namespace: 'default', name: 'crashy' });
    assert.ok(v);
    assert.equal(v.source, 'runtime');
    assert.deepEqual(v.readinessUnknown, ['probed']);
    const s = v.pod.status!;
    assert.equal(v.pod.metadata!.uid, p.metadata!.uid);
    assert.deepEqual(v.pod.metadata!.labels, { tier: 'web' });
    assert.deepEqual(
      v.pod.spec!.containers.map((c) => c.name),
      ['app', 'probed'],
    );
    const appStatus = s.containerStatuses!.find((c) => c.name === 'app')!;
    assert.equal(appStatus.state?.waiting?.reason, 'CrashLoopBackOff');
    const kubeletSays = kubelet.statusManager.get(p.metadata!.uid!)!.containerStatuses!.find((c) => c.name === 'app')!.state!.waiting!;
    assert.deepEqual(appStatus.state!.waiting, kubeletSays, 'the same reason and message as the agent reports');
    assert.match(kubeletSays.message!, /^back-off 10s restarting failed container=app/);
    assert.equal(appStatus.restartCount, 1);
    assert.equal(appStatus.lastState?.terminated?.exitCode, 1);
    const probed = s.containerStatuses!.find((c) => c.name === 'probed')!;
    assert.ok(probed.state?.running);
    assert.equal(probed.ready, false, 'readiness from a probe is unknown without the agent');
  });

  test('the running watch answers first; pods it does not keep still come from the runtime', async () => {
    const p = pod('other', '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
    await kubelet.syncPod(p, 'create');
    const watched: IPod = { ...pod('only-in-watch', '  - {name: app, image: busybox:1.36}\n'), status: { phase: 'Pending' } };
    const socket = join(dir.dir, 'podctl.sock');
    const server = await startStatusServer(socket, {
      pods: () => [watched],
      health: () => ({ ok: true, checks: [] }),
      metrics: new Metrics(),
    });
    try {
      const view = new PodView({ runtime: client, images: client, clock, statusSocket: socket });
      const all = await view.list({ namespace: 'default' });
      const sources = Object.fromEntries(all.map((v) => [v.pod.metadata!.name, v.source]));
      assert.equal(sources['only-in-watch'], 'watch');
      assert.equal(sources.other, 'runtime');
      assert.equal((await view.get('default', 'only-in-watch'))?.pod.status?.phase, 'Pending');
      assert.equal(await view.get('default', 'nope'), undefined);
      assert.equal(await view.get('elsewhere', 'other'), undefined);
    } finally {
      server.close();
    }
  });

  test("a pod whose sandbox status fails shows as Unknown with the runtime's error, beside the others", async () => {
    const names = ['ok-pod', 'broken-pod'];
    for (const n of names) await kubelet.syncPod(pod(n, '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n'), 'create');
    const view = new PodView({ runtime: client, images: client, clock });
    const before = (await view.list()).map((v) => v.pod.metadata!.uid).sort();
    assert.ok(before.length >= 2);
    fake.failNext('PodSandboxStatus', Code.UNKNOWN, 'remove netns: unlinkat /var/run/netns/cni-x: device or resource busy');
    const listed = await view.list();
    assert.deepEqual(listed.map((v) => v.pod.metadata!.uid).sort(), before, 'one broken sandbox hides no other pod');
    const unknown = listed.filter((v) => v.pod.status?.phase === 'Unknown');
    assert.equal(unknown.length, 1);
    assert.match(unknown[0]!.runtimeError ?? '', /device or resource busy/);
    assert.match(unknown[0]!.pod.status!.message ?? '', /device or resource busy/);
    assert.equal(unknown[0]!.pod.spec!.containers[0]!.name, 'app', "the spec comes from the sandbox's copy");
    assert.match(whyNotRunning(unknown[0]!.pod, () => undefined, clock.now()) ?? '', /device or resource busy.*retries/);
    for (const n of names) {
      const p = pod(n, '  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n');
      await kubelet.syncTerminatingPod(p, 0);
      await kubelet.syncTerminatedPod(p);
    }
  });
});

test('without a recorded pod spec, containers come back from their spec annotations in creation order', () => {
  const a = container('init-db');
  const b = container('web', { command: ['httpd'] });
  const p = makePod();
  const status = podStatus(
    p,
    [sandbox({ hostNetwork: true })],
    [
      instance(b, { createdAt: 3000, specJSON: JSON.stringify(b), terminationGracePeriod: 7 }),
      instance(a, { createdAt: 1500, state: 'exited', exitCode: 0, kind: 'init', specJSON: JSON.stringify(a) }),
    ],
  );
  const spec = specFromRuntime(undefined, status);
  assert.deepEqual(
    spec.initContainers?.map((c) => c.name),
    ['init-db'],
  );
  assert.deepEqual(
    spec.containers.map((c) => c.command),
    [['httpd']],
  );
  assert.equal(spec.terminationGracePeriodSeconds, 7);
  assert.equal(spec.hostNetwork, true);
});

test('an exited container waits in CrashLoopBackOff only when its restartPolicy would start it again', () => {
  const c = container('app');
  const exited = (code: number, restartCount = 1) => [instance(c, { state: 'exited', exitCode: code, restartCount })];
  const under = (policy: 'Always' | 'OnFailure' | 'Never', code: number) => {
    const p = makePod({ restartPolicy: policy });
    return inferWaiting(p, podStatus(p, [sandbox()], exited(code)), 'app')?.reason;
  };
  assert.equal(under('Always', 0), 'CrashLoopBackOff');
  assert.equal(under('OnFailure', 1), 'CrashLoopBackOff');
  assert.equal(under('OnFailure', 0), undefined);
  assert.equal(under('Never', 1), undefined);
  const p = makePod();
  assert.equal(
    inferWaiting(p, podStatus(p, [sandbox({ state: 'notready' })], exited(1)), 'app'),
    undefined,
    'a stopped pod is not restarting',
  );
  assert.equal(inferWaiting(p, podStatus(p, [sandbox()], exited(1, 0)), 'app'), undefined, 'a first exit is restarted at once');
  assert.deepEqual([0, 1, 2, 3, 6, 10].map(crashBackoffMs), [0, 10_000, 20_000, 40_000, 300_000, 300_000]);
});

test("kubectl's durations and RESTARTS with how long ago", () => {
  assert.deepEqual(
    [45_000, 119_000, 200_000, 25 * 60_000, (5 * 60 + 12) * 60_000, 30 * 3600_000, (3 * 24 + 4) * 3600_000, 40 * 86_400_000].map(
      humanDuration,
    ),
    ['45s', '119s', '3m20s', '25m', '5h12m', '30h', '3d4h', '40d'],
  );
  const now = Date.parse('2026-01-01T00:01:00Z');
  const p: IPod = {
    ...makePod(),
    status: {
      containerStatuses: [
        {
          name: 'app',
          image: 'x',
          imageID: '',
          ready: true,
          restartCount: 3,
          lastState: { terminated: { exitCode: 1, finishedAt: '2026-01-01T00:00:20Z' } },
        },
      ],
    },
  };
  assert.equal(restartsCell(p, now), '3 (40s ago)');
  assert.equal(restartsCell(makePod(), now), '0');
});

test('crictl-style sizes and CPU percent between two samples', async () => {
  const { humanBytes } = await import('../../src/cli/table.js');
  const { cpuPercent } = await import('../../src/cli/stats.js');
  assert.deepEqual([512, 1090000, 4_260_000, 332_000].map(humanBytes), ['512B', '1.09MB', '4.26MB', '332kB']);
  const at = (ns: number, used: number) => ({
    attributes: null,
    memory: null,
    writableLayer: null,
    swap: null,
    cpu: { timestamp: ns, usageCoreNanoSeconds: { value: used }, usageNanoCores: null },
  });
  assert.equal(cpuPercent(at(1e9, 0), at(2e9, 5e8)), 50);
  assert.equal(cpuPercent(undefined, at(2e9, 5e8)), undefined, 'one sample gives no rate');
});

test('get pods -w: a row after an empty listing comes with the header, aligned to it; otherwise the row alone', async () => {
  const { renderOnePod } = await import('../../src/cli/table.js');
  const pod = makePod({ name: 'watched' });
  const now = Date.parse(pod.metadata!.creationTimestamp ?? '2026-01-01T00:00:00Z');
  const [head, row, ...more] = renderOnePod(pod, 'table', { now }, true).split('\n');
  assert.deepEqual(more, []);
  assert.match(head!, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
  assert.match(row!, /^watched\s+/);
  assert.equal(row!.indexOf(row!.split(/\s{3,}/)[1]!), head!.indexOf('READY'), 'READY is under its header');
  assert.equal(renderOnePod(pod, 'table', { now }).split('\n').length, 1);
  assert.equal(renderOnePod(pod, 'table', { now, noHeaders: true }, true).split('\n').length, 1, '--no-headers: never a header');
  assert.match(renderOnePod(pod, 'wide', { now, wide: true }, true).split('\n')[0]!, /\bIP\s+NODE\s+CONTAINERS$/);
});

// The timeout only turns a hang (a change never read) into a failure.
test(
  'get pods -w reads the listing at each change the agent tells of, not only each second; a row is printed when it changes',
  { timeout: 30_000 },
  async () => {
    const { followPods } = await import('../../src/cli/pod-lister.js');
    const pod = makePod({ name: 'watched' });
    const withState = (state: object, ready = false) => ({
      pod: {
        ...pod,
        status: {
          phase: 'Running',
          containerStatuses: [{ name: 'app', image: 'busybox:1.36', imageID: '', ready, restartCount: 0, state }],
        },
      } as IPod,
      source: 'runtime' as const,
      readinessUnknown: [],
    });
    const listings = [
      [withState({ waiting: { reason: 'ContainerCreating' } })],
      [withState({ waiting: { reason: 'ContainerCreating' } })],
      [withState({ running: {} }, true)],
    ];
    let reads = 0;
    let wake!: () => void;
    let subscribed!: () => void;
    const subscribing = new Promise<void>((resolve) => (subscribed = resolve));
    let unsubscribed = false;
    const lines: string[] = [];
    let onLine: (() => void) | undefined;
    const stop = new AbortController();
    const following = followPods(
      async () => {
        const listing = listings[reads++]!;
        // A change told while the second listing is read: the loop reads again at once.
        if (reads === 2) wake();
        return listing;
      },
      [],
      'table',
      { now: Date.now() },
      (line) => {
        lines.push(line);
        onLine?.();
      },
      {
        changes: (w) => {
          wake = w;
          subscribed();
          return () => (unsubscribed = true);
        },
        // Far beyond the test: only the changes told read the listing.
        pollMs: 3_600_000,
        signal: stop.signal,
      },
    );
    const nextLine = () => new Promise<void>((resolve) => (onLine = resolve));
    try {
      await subscribing;
      let printed = nextLine();
      wake();
      await printed;
      assert.match(lines[0]!, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nwatched\s+0\/1\s+ContainerCreating\s+0\s/);
      printed = nextLine();
      wake();
      await printed;
      assert.equal(reads, 3, 'the second read found no change; the third printed');
      assert.equal(lines.length, 2);
      assert.match(lines[1]!, /^watched\s+1\/1\s+Running\s+0\s/);
    } finally {
      stop.abort();
      await following;
    }
    assert.equal(unsubscribed, true);
  },
);
