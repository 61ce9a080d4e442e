import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { ImageGCManager, imagesNamedByPods } from '../../src/core/kuberuntime/image-gc.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';

function pod(name: string, image: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: ${image}, command: [sleep, "3600"]}\n`;
  return parseManifestText(text, { kind: 'file', path: `/unit/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
}

const tags = async (client: CriClient) => (await client.listImages()).flatMap((i) => i.repoTags).sort();

describe("image GC (the kubelet's image GC manager policy)", () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let clock: FakeClock;
  let kubelet: Kubelet;
  const dir = scratchDir('unit-imagegc');
  const IMAGES = [
    'docker.io/library/busybox:1.36',
    'registry.k8s.io/pause:3.6',
    'docker.io/library/busybox-old:1',
    'docker.io/library/busybox-named:1',
    'docker.io/library/busybox-new:1',
  ];

  before(async () => {
    clock = new FakeClock(Date.parse('2026-11-23T10:00:00Z'));
    fake = await FakeRuntime.start({ clock, images: IMAGES });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
    kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: dir.dir, nodeName: 'unit' });
    kubelet.addOrUpdatePod(pod('user', 'busybox:1.36'));
    await kubelet.workers.waitIdle();
  });
  after(async () => {
    client.close();
    await fake.stop();
    dir.cleanup();
  });

  test(
    'below the high threshold nothing goes; above it, unused images old enough go, least recently used first, down to the low ' +
      'threshold',
    async () => {
      let available = 50;
      const gc = new ImageGCManager({
        runtime: client,
        images: client,
        clock,
        policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000 },
        fsStats: async () => ({ capacityBytes: 100, availableBytes: available }),
      });
      const calm = await gc.garbageCollect();
      assert.equal(calm.usagePercent, 50);
      assert.deepEqual(calm.removed, []);

      available = 10; // 90 % used: free 10 bytes to reach 80 %
      const young = await gc.garbageCollect();
      assert.deepEqual(young.removed, [], 'nothing younger than --image-minimum-gc-age');
      clock.advance(121_000);
      const r = await gc.garbageCollect();
      assert.equal(r.wanted, 10);
      assert.equal(r.removed.length, 1, 'one image frees more than 10 bytes');
      assert.ok(
        ['busybox-old', 'busybox-named', 'busybox-new'].some((n) => r.removed[0]!.tags[0] === `docker.io/library/${n}:1`),
        r.removed[0]!.tags.join(),
      );
      const left = await tags(client);
      assert.ok(left.includes('docker.io/library/busybox:1.36'), 'in use by a container');
      assert.ok(left.includes('registry.k8s.io/pause:3.6'), 'the sandbox image is pinned');
      assert.equal(left.length, IMAGES.length - 1);
    },
  );

  test(
    'by hand: every unused image but those a podctl pod names; --all takes those too, never one in use or the ' + 'sandbox image',
    async () => {
      // A pod whose spec names busybox-named, its container gone (GC'd): named, not used.
      await kubelet.syncPod(pod('named', 'busybox-named:1'), 'create');
      const named = fake.containers().find((c) => fake.sandboxes().find((s) => s.id === c.podSandboxId)?.metadata.name === 'named')!;
      await client.stopContainer(named.id, 0);
      await client.removeContainer(named.id);

      const gc = new ImageGCManager({ runtime: client, images: client, clock });
      const r = await gc.prune({ keep: await imagesNamedByPods(client) });
      assert.ok(r.removed.length >= 1);
      const left = await tags(client);
      assert.deepEqual(left, ['docker.io/library/busybox-named:1', 'docker.io/library/busybox:1.36', 'registry.k8s.io/pause:3.6']);
      const all = await gc.prune();
      assert.deepEqual(all.removed.map((x) => x.tags).flat(), ['docker.io/library/busybox-named:1']);
      assert.deepEqual(await tags(client), ['docker.io/library/busybox:1.36', 'registry.k8s.io/pause:3.6']);
    },
  );
});
