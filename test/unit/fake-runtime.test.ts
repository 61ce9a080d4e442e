import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status as Code } from '@grpc/grpc-js';
import fc from 'fast-check';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { isCriError, isNotFound, isUnimplemented, type CriError } from '../../src/core/cri/errors.js';
import type * as T from '../../src/core/cri/types.js';
import { FakeRuntime, criContractCases, normalizeImageRef, type FakeRuntimeOptions } from '../../fakecri/index.js';
import { ListAnswers } from '../../fakecri/server.js';

const BUSYBOX = 'docker.io/library/busybox:1.36';

function clientFor(fake: FakeRuntime, timeoutMs = 2000): CriClient {
  return new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs, pullTimeoutMs: 2000 });
}

/** A fresh fake and client for one test; both are closed whatever happens. */
async function withFake(opts: FakeRuntimeOptions, fn: (fake: FakeRuntime, client: CriClient) => Promise<void>): Promise<void> {
  const fake = await FakeRuntime.start({ images: [BUSYBOX], ...opts });
  const client = clientFor(fake);
  try {
    await fn(fake, client);
  } finally {
    client.close();
    await fake.stop();
  }
}

let podSeq = 0;
function podConfig(extra: Partial<T.PodSandboxConfigInput> & { hostNetwork?: boolean } = {}): T.PodSandboxConfigInput {
  const name = `pod-${++podSeq}`;
  const { hostNetwork, ...rest } = extra;
  return {
    metadata: { name, uid: `${name}-uid`, namespace: 'default', attempt: 0 },
    labels: { 'io.kubernetes.pod.name': name },
    linux: { securityContext: { namespaceOptions: { network: hostNetwork ? 'NODE' : 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
    ...rest,
  };
}

function ctrConfig(
  name: string,
  command: string[] = ['sleep', '3600'],
  extra: Partial<T.ContainerConfigInput> = {},
): T.ContainerConfigInput {
  return { metadata: { name, attempt: 0 }, image: { image: 'busybox:1.36' }, command, ...extra };
}

/** A running container in a fresh sandbox. */
async function runContainer(client: CriClient, command?: string[], pod = podConfig()): Promise<{ sandboxId: string; containerId: string }> {
  const sandboxId = await client.runPodSandbox(pod);
  const containerId = await client.createContainer(sandboxId, ctrConfig('app', command), pod);
  await client.startContainer(containerId);
  return { sandboxId, containerId };
}

async function statusOf(client: CriClient, id: string): Promise<T.ContainerStatus> {
  const s = (await client.containerStatus(id)).status;
  assert.ok(s);
  return s;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe('the CRI contract cases against the fake', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  before(async () => {
    fake = await FakeRuntime.start();
    client = clientFor(fake);
  });
  after(async () => {
    client.close();
    await fake.stop();
  });

  const ctx = { image: 'busybox:1.36', missingImage: 'docker.io/library/nosuchimage:1', podName: (s: string) => `contract-${s}` };
  for (const c of criContractCases()) {
    test(c.name, async () => {
      await c.run(client, ctx);
      assert.deepEqual(fake.sandboxes(), [], 'the case removed every sandbox it made');
      assert.deepEqual(fake.containers(), []);
    });
  }
});

describe('version, status and images', () => {
  test('version and status answer with the configured name and conditions', () =>
    withFake({ runtimeName: 'fakerd', runtimeVersion: '9.9' }, async (fake, client) => {
      const v = await client.version();
      assert.deepEqual({ ...v }, { version: '0.1.0', runtimeName: 'fakerd', runtimeVersion: '9.9', runtimeApiVersion: 'v1' });
      const conds = (await client.status()).status?.conditions ?? [];
      assert.deepEqual(
        conds.map((c) => [c.type, c.status]),
        [
          ['RuntimeReady', true],
          ['NetworkReady', true],
        ],
      );
      fake.setStatusConditions([{ type: 'RuntimeReady', status: false, reason: 'Broken', message: 'on purpose' }]);
      const after = (await client.status()).status?.conditions ?? [];
      assert.deepEqual({ ...after[0] }, { type: 'RuntimeReady', status: false, reason: 'Broken', message: 'on purpose' });
    }));

  test('without a pod network, NetworkReady is false and only host-network sandboxes run', () =>
    withFake({ networkReady: false }, async (_fake, client) => {
      const net = (await client.status()).status?.conditions.find((c) => c.type === 'NetworkReady');
      assert.equal(net?.status, false);
      assert.equal(net?.reason, 'NetworkPluginNotReady');
      await assert.rejects(client.runPodSandbox(podConfig()), /cni plugin not initialized/);
      const id = await client.runPodSandbox(podConfig({ hostNetwork: true }));
      assert.equal((await client.podSandboxStatus(id)).status?.network?.ip, '');
    }));

  test('image names are normalised as containerd does', () => {
    assert.equal(normalizeImageRef('busybox'), 'docker.io/library/busybox:latest');
    assert.equal(normalizeImageRef('busybox:1.36'), 'docker.io/library/busybox:1.36');
    assert.equal(normalizeImageRef('library/busybox'), 'docker.io/library/busybox:latest');
    assert.equal(normalizeImageRef('user/app:v1'), 'docker.io/user/app:v1');
    assert.equal(normalizeImageRef('localhost:5000/app'), 'localhost:5000/app:latest');
    assert.equal(normalizeImageRef('127.0.0.1:5000/library/busybox:1.36'), '127.0.0.1:5000/library/busybox:1.36');
    assert.equal(normalizeImageRef('quay.io/a/b:c@sha256:' + 'a'.repeat(64)), 'quay.io/a/b@sha256:' + 'a'.repeat(64));
    fc.assert(
      fc.property(
        fc.constantFrom('busybox', 'user/app', 'quay.io/x/y', 'localhost:5000/z'),
        fc.option(fc.constantFrom(':1', ':latest', ':v2.0')),
        (name, tag) => {
          const once = normalizeImageRef(name + (tag ?? ''));
          assert.equal(normalizeImageRef(once), once);
        },
      ),
    );
  });

  test('ImageStatus finds images by short name, full name and id; absent ones are undefined', () =>
    withFake({}, async (fake, client) => {
      const byShort = await client.imageStatus('busybox:1.36');
      assert.match(byShort?.id ?? '', /^sha256:[0-9a-f]{64}$/);
      assert.equal((await client.imageStatus(BUSYBOX))?.id, byShort?.id);
      assert.equal((await client.imageStatus(byShort!.id))?.id, byShort?.id);
      assert.deepEqual(byShort?.repoTags, [BUSYBOX]);
      assert.match(byShort?.repoDigests[0] ?? '', /^docker\.io\/library\/busybox@sha256:[0-9a-f]{64}$/);
      assert.equal(await client.imageStatus('busybox'), undefined, "'busybox' means busybox:latest");
      fake.addImage('busybox');
      assert.ok(await client.imageStatus('docker.io/library/busybox:latest'));
      assert.equal((await client.listImages()).length, 2);
      assert.deepEqual(
        (await client.listImages({ image: { image: 'busybox:latest' } })).map((i) => i.repoTags[0]),
        ['docker.io/library/busybox:latest'],
      );
      fake.removeImageRef('busybox:latest');
      assert.equal(await client.imageStatus('busybox'), undefined);
      const fs = await client.imageFsInfo();
      assert.equal(fs.imageFilesystems.length, 1);
      assert.ok((fs.imageFilesystems[0]?.usedBytes?.value ?? 0) > 0);
    }));

  test('PullImage: present and pullable images give their id; unknown ones NOT_FOUND as containerd words it', () =>
    withFake({ images: [], registry: ['busybox:1.36'] }, async (fake, client) => {
      const ref = await client.pullImage('busybox:1.36');
      assert.match(ref, /^sha256:[0-9a-f]{64}$/);
      assert.equal((await client.imageStatus(BUSYBOX))?.id, ref);
      await assert.rejects(client.pullImage('docker.io/library/nosuch:1'), (err: CriError) => {
        assert.ok(isNotFound(err));
        assert.equal(
          err.details,
          'failed to pull and unpack image "docker.io/library/nosuch:1": failed to resolve reference "docker.io/library/nosuch:1": docker.io/library/nosuch:1: not found',
        );
        return true;
      });
      await assert.rejects(client.pullImage('busybox:latest'), (err) => isNotFound(err), 'only the listed registry names');
      fake.addImage('docker.io/library/local-only:1');
      await assert.rejects(client.pullImage('local-only:1'), (err) => isNotFound(err), 'a pull asks the registry even when present');
      assert.ok(await client.imageStatus('local-only:1'));
      await client.removeImage('busybox:1.36');
      await client.removeImage('busybox:1.36'); // idempotent
      assert.equal(await client.imageStatus('busybox:1.36'), undefined);
    }));
});

describe('sandboxes and containers', () => {
  test('ids are 64 hex; pod IPs use the prefix; a container keeps its config', () =>
    withFake({ ipPrefix: '10.77.' }, async (fake, client) => {
      const dir = mkdtempSync(join(tmpdir(), 'podctl-fake-test-'));
      try {
        const pod = podConfig({ logDirectory: dir, annotations: { a: '1' } });
        const sandboxId = await client.runPodSandbox(pod);
        assert.match(sandboxId, /^[0-9a-f]{64}$/);
        const sb = (await client.podSandboxStatus(sandboxId)).status!;
        assert.match(sb.network?.ip ?? '', /^10\.77\.\d+\.\d+$/);
        assert.deepEqual(sb.annotations, { a: '1' });
        assert.deepEqual({ ...sb.linux?.namespaces?.options }, { network: 'POD', pid: 'CONTAINER', ipc: 'POD', targetId: '' });
        const cid = await client.createContainer(
          sandboxId,
          ctrConfig('web', ['sleep', '1'], { labels: { l: 'v' }, annotations: { n: 'm' }, logPath: 'web/0.log' }),
          pod,
        );
        const st = await statusOf(client, cid);
        assert.equal(st.logPath, join(dir, 'web/0.log'));
        assert.deepEqual(st.labels, { l: 'v' });
        assert.deepEqual(st.annotations, { n: 'm' });
        assert.equal(st.image?.image, BUSYBOX, 'reported by tag, as containerd does');
        const image = await client.imageStatus(BUSYBOX);
        assert.equal(st.imageRef, image?.repoDigests[0]);
        assert.equal(st.imageId, image?.id);
        const [listed] = await client.listContainers({ id: cid });
        assert.equal(listed?.imageRef, image?.id);
        assert.equal(listed?.image?.image, 'busybox:1.36', 'the spec as it was asked for');
        assert.equal(fake.containers()[0]?.config?.command[0], 'sleep');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }));

  test('RunPodSandbox without metadata is INVALID_ARGUMENT', () =>
    withFake({}, async (_fake, client) => {
      await assert.rejects(client.runPodSandbox({ hostname: 'x' }), (err) => isCriError(err, Code.INVALID_ARGUMENT));
      await assert.rejects(client.runPodSandbox({ metadata: { name: 'x' } }), (err) => isCriError(err, Code.INVALID_ARGUMENT));
    }));

  test("duplicates are ALREADY_EXISTS with containerd's wording", () =>
    withFake({}, async (_fake, client) => {
      const pod = podConfig();
      const id = await client.runPodSandbox(pod);
      await assert.rejects(
        client.runPodSandbox(pod),
        (err: CriError) => isCriError(err, Code.ALREADY_EXISTS) && /is reserved for "[0-9a-f]{64}"/.test(err.details),
      );
      await client.createContainer(id, ctrConfig('a'), pod);
      await assert.rejects(client.createContainer(id, ctrConfig('a'), pod), (err) => isCriError(err, Code.ALREADY_EXISTS));
    }));

  test('CreateContainer: unknown sandbox NOT_FOUND, stopped sandbox FAILED_PRECONDITION, absent image NOT_FOUND', () =>
    withFake({}, async (_fake, client) => {
      const pod = podConfig();
      await assert.rejects(client.createContainer('0'.repeat(64), ctrConfig('a'), pod), (err) => isNotFound(err));
      const id = await client.runPodSandbox(pod);
      await assert.rejects(client.createContainer(id, ctrConfig('a', ['true'], { image: { image: 'nginx' } }), pod), (err: CriError) => {
        assert.ok(isNotFound(err));
        assert.equal(err.details, 'failed to resolve image "nginx": not found');
        return true;
      });
      await client.stopPodSandbox(id);
      await assert.rejects(client.createContainer(id, ctrConfig('a'), pod), (err) => isCriError(err, Code.FAILED_PRECONDITION));
    }));

  test('StopContainer: 143 with a grace period, 137 without; start of a non-created container fails', () =>
    withFake({}, async (_fake, client) => {
      const a = await runContainer(client);
      await client.stopContainer(a.containerId, 10);
      assert.equal((await statusOf(client, a.containerId)).exitCode, 143);
      await assert.rejects(client.startContainer(a.containerId), (err) => isCriError(err, Code.FAILED_PRECONDITION));
      const b = await runContainer(client);
      await client.stopContainer(b.containerId, 0);
      assert.equal((await statusOf(client, b.containerId)).exitCode, 137);
    }));

  test('StopPodSandbox kills running containers (137), clears the IP; RemovePodSandbox removes everything', () =>
    withFake({}, async (fake, client) => {
      const pod = podConfig();
      const { sandboxId, containerId } = await runContainer(client, undefined, pod);
      const created = await client.createContainer(sandboxId, ctrConfig('idle'), pod);
      await client.stopPodSandbox(sandboxId);
      const st = await statusOf(client, containerId);
      assert.equal(st.state, 'CONTAINER_EXITED');
      assert.equal(st.exitCode, 137);
      assert.equal(st.reason, 'Error');
      assert.equal((await statusOf(client, created)).state, 'CONTAINER_CREATED', 'a created container is left alone');
      const sb = (await client.podSandboxStatus(sandboxId)).status!;
      assert.equal(sb.state, 'SANDBOX_NOTREADY');
      assert.equal(sb.network?.ip, '');
      await assert.rejects(client.startContainer(created), (err) => isCriError(err, Code.FAILED_PRECONDITION));
      await client.removePodSandbox(sandboxId);
      assert.equal(fake.sandboxes().length, 0);
      assert.equal(fake.containers().length, 0);
      assert.deepEqual(await client.listContainers(), []);
    }));

  test('RemovePodSandbox of a ready sandbox stops it first, as containerd does', () =>
    withFake({}, async (fake, client) => {
      const { sandboxId } = await runContainer(client);
      await client.removePodSandbox(sandboxId);
      assert.equal(fake.sandboxes().length, 0);
      assert.equal(fake.containers().length, 0);
    }));

  test('exitContainer: a running container exits now with its code, reason and message', () =>
    withFake({}, async (fake, client) => {
      const { containerId } = await runContainer(client);
      fake.exitContainer(containerId, 137, { reason: 'OOMKilled', message: 'out of memory' });
      const st = await statusOf(client, containerId);
      assert.equal(st.state, 'CONTAINER_EXITED');
      assert.equal(st.exitCode, 137);
      assert.equal(st.reason, 'OOMKilled');
      assert.equal(st.message, 'out of memory');
      assert.ok(st.finishedAt >= st.startedAt);
      assert.throws(() => fake.exitContainer(containerId, 1), /not running/);
      const other = await runContainer(client);
      fake.exitContainer(other.containerId, 0);
      assert.equal((await statusOf(client, other.containerId)).reason, 'Completed');
    }));

  test('setContainerBehaviour: containers exit after afterMs of the injected clock', () => {
    const clock = new FakeClock(1_700_000_000_000);
    return withFake({ clock }, async (fake, client) => {
      fake.setContainerBehaviour((config) => (config.command.join(' ').includes('crash') ? { exitCode: 2, afterMs: 5000 } : undefined));
      const { containerId } = await runContainer(client, ['sh', '-c', 'crash']);
      const started = await statusOf(client, containerId);
      assert.equal(started.state, 'CONTAINER_RUNNING');
      assert.equal(started.startedAt, 1_700_000_000_000 * 1e6, 'timestamps are clock.now() in ns');
      clock.advance(4999);
      assert.equal((await statusOf(client, containerId)).state, 'CONTAINER_RUNNING');
      clock.advance(1);
      const st = await statusOf(client, containerId);
      assert.equal(st.state, 'CONTAINER_EXITED');
      assert.equal(st.exitCode, 2);
      assert.equal(st.finishedAt, (1_700_000_000_000 + 5000) * 1e6);
      // A stopped container's timer goes with it.
      const second = await runContainer(client, ['crash']);
      await client.stopContainer(second.containerId, 0);
      assert.equal(clock.pendingTimers(), 0);
      // The default behaviour is replaced: an obvious `exit 1` now keeps running.
      const third = await runContainer(client, ['sh', '-c', 'exit 1']);
      assert.equal((await statusOf(client, third.containerId)).state, 'CONTAINER_RUNNING');
    });
  });

  test('by default, commands the fake understands exit with their code at once', () =>
    withFake({}, async (_fake, client) => {
      for (const [command, code] of [
        [['sh', '-c', 'exit 4'], 4],
        [['true'], 0],
        [['/bin/false'], 1],
        [['echo', 'hi'], 0],
      ] as const) {
        const { containerId } = await runContainer(client, [...command]);
        const st = await statusOf(client, containerId);
        assert.deepEqual([st.state, st.exitCode], ['CONTAINER_EXITED', code], command.join(' '));
      }
      const { containerId } = await runContainer(client, ['sh', '-c', 'echo hi; sleep 10']);
      assert.equal((await statusOf(client, containerId)).state, 'CONTAINER_RUNNING');
    }));

  test('a started container writes a CRI log line only when its log directory exists', () =>
    withFake({}, async (_fake, client) => {
      const dir = mkdtempSync(join(tmpdir(), 'podctl-fake-logs-'));
      try {
        const pod = podConfig({ logDirectory: dir });
        const sandboxId = await client.runPodSandbox(pod);
        const cid = await client.createContainer(sandboxId, ctrConfig('web', ['sleep', '9'], { logPath: 'web/0.log' }), pod);
        await client.startContainer(cid);
        const lines = readFileSync(join(dir, 'web/0.log'), 'utf8').split('\n').filter(Boolean);
        assert.equal(lines.length, 1);
        assert.match(lines[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z stdout F started$/);

        const gone = join(dir, 'missing');
        const pod2 = podConfig({ logDirectory: gone });
        const sb2 = await client.runPodSandbox(pod2);
        const c2 = await client.createContainer(sb2, ctrConfig('web', ['sleep', '9'], { logPath: 'web/0.log' }), pod2);
        await client.startContainer(c2);
        assert.equal(existsSync(gone), false);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }));

  test('ExecSync needs a running container; Exec, Attach-like calls are UNIMPLEMENTED', () =>
    withFake({}, async (_fake, client) => {
      const { containerId } = await runContainer(client);
      const r = await client.execSync(containerId, ['sh', '-c', 'exit 42'], 1);
      assert.equal(r.exitCode, 42);
      assert.equal((await client.execSync(containerId, ['cat', '/etc/hostname'], 1)).exitCode, 0, 'anything else succeeds quietly');
      await assert.rejects(client.exec({ containerId, cmd: ['sh'], stdout: true }), (err) => isUnimplemented(err));
      await client.stopContainer(containerId, 0);
      await assert.rejects(client.execSync(containerId, ['true'], 1), (err) => isCriError(err, Code.FAILED_PRECONDITION));
    }));

  test('container stats are synthetic and only for running containers', () =>
    withFake({}, async (_fake, client) => {
      const pod = podConfig();
      const { sandboxId, containerId } = await runContainer(client, undefined, pod);
      await client.createContainer(sandboxId, ctrConfig('idle'), pod);
      const one = await client.containerStats(containerId);
      assert.ok((one?.memory?.workingSetBytes?.value ?? 0) > 0);
      assert.ok(one?.cpu);
      const all = await client.listContainerStats({ podSandboxId: sandboxId });
      assert.deepEqual(
        all.map((s) => s.attributes?.id),
        [containerId],
      );
    }));
});

describe('label selector filtering', () => {
  test('matches a model for any selector (fast-check)', () =>
    withFake({}, async (fake, client) => {
      const tiers = ['a', 'b', 'c'];
      const zones = ['x', 'y'];
      const uid = 'io.kubernetes.pod.uid';
      fake.seed({
        pods: 60,
        containersPerPod: 1,
        labels: (i) => ({
          tier: tiers[i % 3]!,
          zone: zones[Math.floor(i / 3) % 2]!,
          [uid]: `u${i % 7}`,
          ...(i % 5 === 0 ? { canary: 'yes' } : {}),
        }),
      });
      // Removed ones leave the pod UID index too.
      for (const s of fake.sandboxes().filter((_, i) => i % 9 === 0)) await client.removePodSandbox(s.id);
      const all = fake.sandboxes();
      await fc.assert(
        fc.asyncProperty(
          fc.record(
            {
              tier: fc.constantFrom(...tiers, 'z'),
              zone: fc.constantFrom(...zones),
              canary: fc.constant('yes'),
              [uid]: fc.constantFrom('u0', 'u3', 'u9'),
            },
            { requiredKeys: [] },
          ),
          async (selector: Record<string, string>) => {
            const expected = all.filter((s) => Object.entries(selector).every(([k, v]) => s.labels[k] === v)).map((s) => s.id);
            assert.deepEqual(
              (await client.listPodSandbox({ labelSelector: selector })).map((s) => s.id),
              expected,
              'in creation order',
            );
            const containers = await client.listContainers({ labelSelector: selector });
            assert.deepEqual(
              containers.map((c) => c.podSandboxId),
              expected,
            );
          },
        ),
        { numRuns: 40 },
      );
    }));
});

describe('fault injection', () => {
  test('failNext fails the next call(s) of that RPC with that code, then calls succeed', () =>
    withFake({}, async (fake, client) => {
      fake.failNext('ListPodSandbox', Code.UNAVAILABLE, 'runtime restarting', 2);
      fake.failNext('Version', Code.RESOURCE_EXHAUSTED);
      for (let i = 0; i < 2; i++) {
        await assert.rejects(
          client.listPodSandbox(),
          (err: CriError) => isCriError(err, Code.UNAVAILABLE) && err.details === 'runtime restarting',
        );
      }
      assert.deepEqual(await client.listPodSandbox(), []);
      await assert.rejects(client.version(), (err) => isCriError(err, Code.RESOURCE_EXHAUSTED));
      await client.version();
      fake.failNext('PullImage', Code.PERMISSION_DENIED, 'denied');
      await assert.rejects(client.pullImage('busybox:1.36'), (err) => isCriError(err, Code.PERMISSION_DENIED));
      assert.match(await client.pullImage('busybox:1.36'), /^sha256:/);
    }));

  test('hang + a 200 ms client timeout gives DEADLINE_EXCEEDED; unhang lets calls through', () =>
    withFake({}, async (fake) => {
      const client = clientFor(fake, 200);
      try {
        fake.hang('Version');
        await assert.rejects(client.version(), (err: CriError) => {
          assert.ok(isCriError(err, Code.DEADLINE_EXCEEDED), err.message);
          assert.match(err.message, /Version did not answer within 200ms/);
          return true;
        });
        fake.hang('Status');
        const pending = client.status();
        await sleep(50);
        fake.unhang('Status');
        fake.unhang('Version');
        assert.ok((await pending).status);
        assert.equal((await client.version()).runtimeApiVersion, 'v1');
      } finally {
        client.close();
      }
    }));

  test('stop() fails held and delayed calls instead of leaving them hanging', async () => {
    const fake = await FakeRuntime.start();
    const client = clientFor(fake, 5000);
    try {
      fake.hang('ListContainers');
      // Settled into a value at once, so the rejection is never unhandled while stop() runs.
      const settle = (p: Promise<unknown>) =>
        p.then(
          () => undefined,
          (err: unknown) => err,
        );
      const hung = settle(client.listContainers());
      fake.setLatency('Version', 60_000);
      const slow = settle(client.version());
      await sleep(50);
      await fake.stop();
      // Failed, not answered: the hung call would never answer, the delayed one only after 60 s.
      assert.ok(isCriError(await hung, Code.UNAVAILABLE));
      assert.ok(isCriError(await slow, Code.UNAVAILABLE));
    } finally {
      client.close();
    }
  });

  test('setLatency delays answers (per method, or * for all)', () =>
    withFake({}, async (fake) => {
      // Told by the order of answers, not by the clock: a delayed call is still waiting when a later, undelayed one has answered.
      const client = clientFor(fake, 120_000);
      try {
        fake.setLatency('*', 60_000);
        fake.setLatency('Version', 0);
        let delayedSettled = false;
        const delayed = client.status().then(
          () => 'answered',
          (err: unknown) => err,
        );
        void delayed.finally(() => (delayedSettled = true));
        assert.equal((await client.version()).runtimeApiVersion, 'v1', "a method's own 0 wins over *");
        assert.equal(delayedSettled, false, 'Status, asked first, waits out the latency of *');
        fake.setLatency('*', 0);
        assert.ok((await client.status()).status, 'once * is 0 again, a new Status answers at once');
        assert.equal(delayedSettled, false, 'the first Status is still waiting');
        await fake.stop();
        assert.ok(isCriError(await delayed, Code.UNAVAILABLE), 'a call still waiting out its latency fails when the fake stops');
      } finally {
        client.close();
      }
    }));

  test('calls() counts RPCs by proto name; resetCalls() starts over', () =>
    withFake({}, async (fake, client) => {
      await client.version();
      await client.version();
      await client.listContainers();
      fake.failNext('Status', Code.INTERNAL);
      await assert.rejects(client.status());
      assert.deepEqual(fake.calls(), { Version: 2, ListContainers: 1, Status: 1 });
      fake.resetCalls();
      assert.deepEqual(fake.calls(), {});
    }));
});

describe('GetContainerEvents', () => {
  test('delivers created, started, stopped (also for exitContainer) and deleted in order, with the pod status', () =>
    withFake({}, async (fake, client) => {
      const events: T.ContainerEventResponse[] = [];
      const errors: CriError[] = [];
      const stream = client.getContainerEvents({ onEvent: (e) => events.push(e), onError: (e) => errors.push(e) });
      try {
        await until('the stream is registered', () => fake.calls().GetContainerEvents === 1);
        await sleep(20);
        const pod = podConfig();
        const { sandboxId, containerId } = await runContainer(client, undefined, pod);
        const second = await client.createContainer(sandboxId, ctrConfig('second'), pod);
        await client.startContainer(second);
        fake.exitContainer(containerId, 3);
        await client.removeContainer(containerId);
        await until('events', () => events.filter((e) => e.containerId === containerId).length === 4);
        const mine = events.filter((e) => e.containerId === containerId);
        assert.deepEqual(
          mine.map((e) => e.containerEventType),
          ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT'],
        );
        const stoppedEvent = mine[2]!;
        assert.equal(stoppedEvent.podSandboxStatus?.id, sandboxId);
        assert.deepEqual(
          stoppedEvent.containersStatuses.map((s) => [s.id, s.state, s.exitCode]),
          [
            [containerId, 'CONTAINER_EXITED', 3],
            [second, 'CONTAINER_RUNNING', 0],
          ],
          'every container of the pod, as containerd sends',
        );
        assert.deepEqual(
          mine[3]!.containersStatuses.map((s) => s.id),
          [second],
        );
        // Sandbox events carry the sandbox id, as containerd >= 1.7 sends them.
        assert.deepEqual(
          events.filter((e) => e.containerId === sandboxId).map((e) => e.containerEventType),
          ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT'],
        );
        assert.deepEqual(errors, []);
      } finally {
        stream.cancel();
      }
    }));

  test('behaviour exits send a stopped event too', () =>
    withFake({ sandboxEvents: false }, async (fake, client) => {
      const events: T.ContainerEventResponse[] = [];
      const stream = client.getContainerEvents({ onEvent: (e) => events.push(e), onError: () => undefined });
      try {
        await until('the stream is registered', () => fake.calls().GetContainerEvents === 1);
        await sleep(20);
        const { containerId } = await runContainer(client, ['sh', '-c', 'exit 9']);
        await until('three events', () => events.length === 3);
        assert.deepEqual(
          events.map((e) => [e.containerId, e.containerEventType]),
          [
            [containerId, 'CONTAINER_CREATED_EVENT'],
            [containerId, 'CONTAINER_STARTED_EVENT'],
            [containerId, 'CONTAINER_STOPPED_EVENT'],
          ],
        );
      } finally {
        stream.cancel();
      }
    }));

  test('answers UNIMPLEMENTED when implementEvents is false, as containerd 1.6 does', () =>
    withFake({ implementEvents: false }, async (_fake, client) => {
      const err = await new Promise<CriError>((resolve) => {
        client.getContainerEvents({ onEvent: () => assert.fail('no events expected'), onError: resolve });
      });
      assert.ok(isUnimplemented(err), err.message);
    }));

  test('failNext applies to the stream too', () =>
    withFake({}, async (fake, client) => {
      fake.failNext('GetContainerEvents', Code.UNAVAILABLE);
      const err = await new Promise<CriError>((resolve) => {
        client.getContainerEvents({ onEvent: () => undefined, onError: resolve });
      });
      assert.ok(isCriError(err, Code.UNAVAILABLE));
    }));

  test('streams end cleanly when the fake stops', async () => {
    const fake = await FakeRuntime.start();
    const client = clientFor(fake);
    try {
      const errors: CriError[] = [];
      let ended = false;
      client.getContainerEvents({ onEvent: () => undefined, onError: (e) => errors.push(e), onEnd: () => (ended = true) });
      await until('the stream is registered', () => fake.calls().GetContainerEvents === 1);
      await sleep(20);
      await fake.stop();
      await until('the stream ends', () => ended);
      assert.deepEqual(errors, []);
    } finally {
      client.close();
    }
  });
});

describe('scale', () => {
  test('seed(1000) then ListContainers returns 2,000', () =>
    withFake({}, async (fake, client) => {
      fake.seed({ pods: 1000, containersPerPod: 2 });
      const containers = await client.listContainers();
      assert.equal(containers.length, 2000);
      assert.ok(containers.every((c) => c.state === 'CONTAINER_RUNNING'));
      assert.equal((await client.listPodSandbox()).length, 1000);
      const one = containers[1234]!;
      assert.deepEqual((await client.listContainers({ podSandboxId: one.podSandboxId })).length, 2);
      const st = await statusOf(client, one.id);
      assert.equal(st.state, 'CONTAINER_RUNNING');
      await client.stopPodSandbox(one.podSandboxId);
      await client.removePodSandbox(one.podSandboxId);
      assert.equal((await client.listContainers()).length, 1998);
    }));

  // How fast seeding and listing are is bench/scale-fake's to measure; tests assert no time.
  test('seed of 5,000 pods x 2 containers is small', () =>
    withFake({}, async (fake, client) => {
      const heapBefore = process.memoryUsage().heapUsed;
      fake.seed({ pods: 5000, containersPerPod: 2, labels: (i) => ({ 'io.podctl.managed-by': 'podctl', app: `app-${i % 50}` }) });
      const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;
      assert.ok(heapMb < 100, `seed grew the heap by ${heapMb.toFixed(1)} MB`);
      const list = await client.listContainers({ labelSelector: { 'io.podctl.managed-by': 'podctl' } });
      assert.equal(list.length, 10_000);
      assert.equal((await client.listContainers({ labelSelector: { app: 'app-7' } })).length, 200);
    }));

  test('list answers: the same bytes while the same records match with the same encodings, joined afresh on any change', () => {
    const encode = (r: { id: string; wire: Buffer | undefined }) => Buffer.from(r.id);
    const answers = new ListAnswers(encode);
    const a = { id: 'a', wire: undefined as Buffer | undefined };
    const b = { id: 'b', wire: undefined as Buffer | undefined };
    const first = answers.answer<Buffer>({ f: 1 }, [a, b]);
    assert.equal(first.toString(), 'ab');
    // Unchanged: the very Buffer given before, nothing joined again.
    assert.equal(answers.answer<Buffer>({ f: 1 }, [a, b]), first);
    // A record whose encoding was dropped (its state changed) is encoded and joined anew.
    b.wire = undefined;
    const second = answers.answer<Buffer>({ f: 1 }, [a, b]);
    assert.notEqual(second, first);
    assert.equal(second.toString(), 'ab');
    // A record gone, or another filter: answers of their own.
    assert.equal(answers.answer<Buffer>({ f: 1 }, [a]).toString(), 'a');
    const other = answers.answer<Buffer>({ f: 2 }, [b]);
    assert.equal(other.toString(), 'b');
    assert.equal(answers.answer<Buffer>({ f: 2 }, [b]), other);
  });

  test('an unchanged list is answered again as it was; a change is answered afresh', () =>
    withFake({}, async (fake, client) => {
      fake.seed({ pods: 3, containersPerPod: 2 });
      const first = await client.listContainers();
      assert.deepEqual(await client.listContainers(), first);
      const stopped = first[0]!;
      await client.stopContainer(stopped.id, 0);
      const after = await client.listContainers();
      assert.equal(after.length, 6);
      assert.equal(after.find((c) => c.id === stopped.id)!.state, 'CONTAINER_EXITED');
      await client.removeContainer(stopped.id);
      assert.deepEqual(
        (await client.listContainers()).map((c) => c.id),
        first.slice(1).map((c) => c.id),
      );
      // Another filter has its own answer.
      assert.deepEqual(
        (await client.listContainers({ podSandboxId: first[3]!.podSandboxId })).map((c) => c.id).sort(),
        first
          .filter((c) => c.podSandboxId === first[3]!.podSandboxId)
          .map((c) => c.id)
          .sort(),
      );
    }));
});

describe('socket directory', () => {
  test('a given socketDir is kept (only the socket is removed); the default temp dir is removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podctl-fake-own-'));
    try {
      const fake = await FakeRuntime.start({ socketDir: dir });
      assert.equal(fake.endpoint, `unix://${join(dir, 'cri.sock')}`);
      await fake.stop();
      assert.ok(existsSync(dir));
      assert.ok(!existsSync(join(dir, 'cri.sock')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const fake = await FakeRuntime.start();
    const path = fake.endpoint.slice('unix://'.length);
    assert.ok(existsSync(path));
    await fake.stop();
    assert.ok(!existsSync(join(path, '..')));
  });
});
