import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { POD_DIR_ANNOTATION } from '../../src/core/kuberuntime/labels.js';
import { Metrics } from '../../src/core/metrics.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { diskReport, dirUsage } from '../../src/core/stats/disk.js';
import { renderDiskReport } from '../../src/cli/stats.js';
import { scratchDir } from '../support/e2e.js';

function pod(name: string): IPod {
  const text = `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sleep, "3600"]\n    volumeMounts: [{name: scratch, mountPath: /scratch}]\n  volumes:\n  - {name: scratch, emptyDir: {}}\n`;
  return parseManifestText(text, { kind: 'file', path: `/unit/${name}.yaml` }, { nodeName: 'unit' }).pods[0]!.pod;
}

describe('disk usage per pod and of the image filesystem (stats, /metrics)', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  let kubelet: Kubelet;
  const logs = scratchDir('unit-disk-logs');
  const root = scratchDir('unit-disk-root');

  before(async () => {
    const clock = new FakeClock(Date.now());
    fake = await FakeRuntime.start({ clock, images: ['docker.io/library/busybox:1.36'] });
    client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 });
    kubelet = newKubelet({ runtime: client, images: client, clock, logRoot: logs.dir, rootDir: root.dir, nodeName: 'unit' });
    kubelet.addOrUpdatePod(pod('disky'));
    await kubelet.workers.waitIdle();
  });
  after(async () => {
    client.close();
    await fake.stop();
    logs.cleanup();
    root.cleanup();
  });

  test('logs and emptyDirs are measured from the directories the sandbox records; the image filesystem from ImageFsInfo', async () => {
    const sandbox = (await client.listPodSandbox())[0]!;
    const podDir = sandbox.annotations[POD_DIR_ANNOTATION]!;
    const emptyDir = join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    writeFileSync(join(emptyDir, 'blob'), Buffer.alloc(300_000, 1));
    const before = await dirUsage(emptyDir);
    assert.ok(before.bytes >= 300_000 && before.inodes === 2);

    const report = await diskReport(client, client);
    const p = report.pods.find((x) => x.name === 'disky')!;
    assert.ok(p.emptyDirs.bytes >= 300_000, `emptyDir ${p.emptyDirs.bytes}`);
    assert.ok(p.logs.bytes > 0 && p.logs.inodes >= 2, 'the container log and its directories');
    assert.ok(report.imageFilesystem && report.imageFilesystem.usedBytes > 0);
    assert.match(renderDiskReport(report), /^POD\s+LOGS\s+EMPTYDIR\s+WRITABLE\s+TOTAL\s+INODES\ndisky\s+/m);

    const metrics = new Metrics();
    metrics.watchDisk(() => diskReport(client, client));
    const text = await metrics.registry.metrics();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('podctl_pod_ephemeral_storage_bytes{namespace="default",pod="disky",source="emptydir"}'));
    assert.ok(line && Number(line.split(' ').at(-1)) >= 300_000, line);
    assert.match(text, /podctl_image_filesystem_bytes\{kind="used"\} [1-9]/);
  });
});
