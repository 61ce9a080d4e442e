import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CriClient } from '../../src/core/cri/client.js';
import {
  E2E_NAMESPACE,
  e2eClient,
  eventually,
  podctl,
  removeE2EPods,
  scratchDir,
  startPodctl,
  type RunningPodctl,
} from '../support/e2e.js';

const REGISTRY = 'http://127.0.0.1:5000';
const UNUSED = 'docker.io/library/busybox:e2e-unused';
let client: CriClient;
const dir = scratchDir('e2e-image-gc');
let watch: RunningPodctl | undefined;

/**
 * Pushes busybox:1.36 again under the tag e2e-unused with one more env var in its config: the
 * same layers, another image ID, so it is an image no pod uses. Only the loopback registry's API.
 */
async function pushUnusedImage(): Promise<void> {
  const accept = 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json';
  const res = await fetch(`${REGISTRY}/v2/library/busybox/manifests/1.36`, { headers: { Accept: accept } });
  assert.equal(res.status, 200);
  const type = res.headers.get('content-type')!;
  const manifest = (await res.json()) as { config: { digest: string; size: number; mediaType: string } };
  const config = (await (await fetch(`${REGISTRY}/v2/library/busybox/blobs/${manifest.config.digest}`)).json()) as {
    config: { Env?: string[] };
  };
  config.config.Env = [...(config.config.Env ?? []), 'PODCTL_E2E=unused'];
  const body = Buffer.from(JSON.stringify(config));
  const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  const upload = await fetch(`${REGISTRY}/v2/library/busybox/blobs/uploads/`, { method: 'POST' });
  assert.equal(upload.status, 202);
  const location = new URL(upload.headers.get('location')!, REGISTRY);
  location.searchParams.set('digest', digest);
  assert.equal((await fetch(location, { method: 'PUT', body, headers: { 'Content-Type': 'application/octet-stream' } })).status, 201);
  const next = { ...manifest, config: { ...manifest.config, digest, size: body.length } };
  const put = await fetch(`${REGISTRY}/v2/library/busybox/manifests/e2e-unused`, {
    method: 'PUT',
    body: JSON.stringify(next),
    headers: { 'Content-Type': type },
  });
  assert.equal(put.status, 201, await put.text());
}

const present = async (ref: string) => (await client.listImages()).some((i) => i.repoTags.includes(ref));

before(async () => {
  client = e2eClient();
  await removeE2EPods(client);
  await pushUnusedImage();
});

after(async () => {
  if (watch) {
    watch.kill('SIGKILL');
    await watch.done;
  }
  await removeE2EPods(client);
  client.close();
  dir.cleanup();
});

test(
  'image prune removes an unused image and keeps what running pods and the sandbox use; a full disk makes the agent prune ' + 'by itself',
  async () => {
    const manifests = join(dir.dir, 'manifests');
    mkdirSync(manifests, { recursive: true });
    writeFileSync(
      join(manifests, 'user.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: image-user, namespace: ${E2E_NAMESPACE}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: app, image: busybox:1.36, command: [sleep, "3600"]}\n`,
    );
    const once = podctl(['sync-once', manifests, '--root-dir', join(dir.dir, 'root'), '--log-root', join(dir.dir, 'logs')]);
    assert.equal(once.code, 0, once.stderr);

    await client.pullImage(UNUSED);
    assert.ok(await present(UNUSED));
    const pruned = podctl(['image', 'prune', '-o', 'json']);
    assert.equal(pruned.code, 0, pruned.stderr);
    const result = JSON.parse(pruned.stdout) as { removed: { tags: string[] }[] };
    assert.ok(
      result.removed.some((r) => r.tags.includes(UNUSED)),
      pruned.stdout,
    );
    assert.equal(await present(UNUSED), false);
    assert.ok(await present('docker.io/library/busybox:1.36'), "the running pod's image stays");
    assert.ok(await present('registry.k8s.io/pause:3.6'), 'the sandbox image stays');

    // Thresholds at 0 %: the disk always counts as full, so the agent's first image GC frees what it can.
    await client.pullImage(UNUSED);
    watch = startPodctl([
      'watch',
      manifests,
      '--root-dir',
      join(dir.dir, 'root'),
      '--log-root',
      join(dir.dir, 'logs'),
      '--image-gc-high-threshold',
      '0',
      '--image-gc-low-threshold',
      '0',
      '--image-minimum-gc-age',
      '0s',
    ]);
    await eventually('the agent removes the unused image', async () => ((await present(UNUSED)) ? undefined : true), 60_000);
    assert.ok(await present('docker.io/library/busybox:1.36'));
    assert.ok(await present('registry.k8s.io/pause:3.6'));
    watch.kill('SIGTERM');
    await watch.done;
    watch = undefined;
  },
);
