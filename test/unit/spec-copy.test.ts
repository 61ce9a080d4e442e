import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IPod } from 'kubernetes-models/v1';
import { FakeClock } from '../../src/core/clock.js';
import type { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime } from '../../fakecri/index.js';
import type { Kubelet } from '../../src/core/kubelet.js';
import { newKubelet } from '../../src/core/node/compose.js';
import { containerConfig, podSandboxConfig } from '../../src/core/kuberuntime/config.js';
import { containerSpecJSON, fnv32a, hashContainer, podSpecJSON } from '../../src/core/kuberuntime/hash.js';
import { imagesNamedByPods } from '../../src/core/kuberuntime/image-gc.js';
import * as L from '../../src/core/kuberuntime/labels.js';
import { PodStatusReader } from '../../src/core/kuberuntime/pod-status.js';
import { SpecCopies, recordedContainerSpec, specCopyPath } from '../../src/core/kuberuntime/spec-copy.js';
import { planPods } from '../../src/core/plan.js';
import { findRuntimePod, PodView, specFromRuntime } from '../../src/core/podview/index.js';
import { parseManifestText } from '../../src/core/pod/index.js';
import { scratchDir } from '../support/e2e.js';
import { startFake, stopFake } from '../support/fake-runtime.js';

const pod = (name: string, image = 'busybox:1.36'): IPod =>
  parseManifestText(
    `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - name: app\n    image: ${JSON.stringify(image)}\n    command: [sleep, "3600"]\n    env:\n    - {name: PASS, valueFrom: {secretKeyRef: {name: creds, key: p, optional: true}}}\n    - {name: PLAIN, value: plain}\n`,
    { kind: 'file', path: `/unit/${name}.yaml` },
    { nodeName: 'unit' },
  ).pods[0]!.pod;

describe('spec copies live in the pod directory, not on the records every relist lists', () => {
  let fake: FakeRuntime;
  let client: CriClient;
  const clock = new FakeClock();
  const dir = scratchDir('spec-copy');
  const rootDir = join(dir.dir, 'root');
  let kubelet: Kubelet;
  before(async () => {
    ({ fake, client } = await startFake({ clock }));
    kubelet = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: join(dir.dir, 'logs'),
      rootDir,
      nodeName: 'unit',
      agent: 'spec-copy-unit',
    });
  });
  after(async () => {
    await stopFake({ fake, client });
    dir.cleanup();
  });
  const uidOf = (p: IPod) => p.metadata!.uid!;
  const listed = async (p: IPod) => client.listContainers({ labelSelector: { [L.POD_UID_LABEL]: uidOf(p) } });
  /** A reader as another process has it (a CLI command): nothing remembered, no --root-dir of its own. */
  const freshReader = () => new PodStatusReader({ runtime: client, clock });

  test('written under <root-dir>/pods/<uid>/containers/<name>/<hash>.spec.json; the listed record carries no copy', async () => {
    const p = pod('web');
    await kubelet.syncPod(p, 'create');
    const [c] = await listed(p);
    assert.ok(c, 'the container was created');
    assert.equal(c.annotations[L.CONTAINER_SPEC_ANNOTATION], undefined, 'no spec copy on the listed record');
    const status = await client.containerStatus(c.id);
    assert.equal(status.status?.annotations?.[L.CONTAINER_SPEC_ANNOTATION], undefined, 'nor on its status');
    const spec = p.spec!.containers[0]!;
    const hash = c.annotations[L.CONTAINER_HASH_ANNOTATION]!;
    assert.equal(hash, hashContainer(spec));
    const file = join(rootDir, 'pods', uidOf(p), 'containers', 'app', `${hash}.spec.json`);
    assert.equal(specCopyPath(join(rootDir, 'pods', uidOf(p)), 'app', hash), file);
    assert.equal(readFileSync(file, 'utf8'), containerSpecJSON(spec));
  });

  test("the pod spec copy too: a file named by the hash the sandbox records; the views, image prune and the pod's own annotations see what they saw", async () => {
    const p = pod('web');
    const [sb] = await client.listPodSandbox({ labelSelector: { [L.POD_UID_LABEL]: uidOf(p) } });
    assert.equal(sb!.annotations[L.POD_SPEC_ANNOTATION], undefined, 'no pod spec copy on the listed sandbox');
    const hash = sb!.annotations[L.POD_SPEC_HASH_ANNOTATION]!;
    assert.equal(hash, fnv32a(podSpecJSON(p)));
    assert.equal(readFileSync(join(rootDir, 'pods', uidOf(p), `${hash}.pod-spec.json`), 'utf8'), podSpecJSON(p));
    // A CLI process's view (describe, logs, debug): the recorded spec, and none of podctl's own keys shown as the pod's.
    const view = new PodView({ runtime: client, images: client, clock });
    const rp = await findRuntimePod(view, 'default', 'web');
    assert.deepEqual(rp!.spec, JSON.parse(podSpecJSON(p)));
    const [viewed] = await view.list({ namespace: 'default', name: 'web' });
    assert.deepEqual(
      viewed!.pod.spec!.containers.map((c) => c.image),
      ['busybox:1.36'],
    );
    assert.deepEqual(
      Object.keys(viewed!.pod.metadata!.annotations ?? {}).filter((k) => k.startsWith('io.podctl.')),
      [],
      "podctl's records are not shown as the pod's annotations",
    );
    // podctl image prune keeps what a pod names.
    const named = await imagesNamedByPods(client);
    assert.equal(
      named({
        id: 'sha256:x',
        repoTags: ['docker.io/library/busybox:1.36'],
        repoDigests: [],
        size: 0,
        pinned: false,
        username: '',
        spec: null,
        uid: null,
      }),
      true,
    );
    // A torn copy is none: the view falls back to rebuilding the spec from the containers' copies.
    const file = join(rootDir, 'pods', uidOf(p), `${hash}.pod-spec.json`);
    writeFileSync(file, '{"containers":[]}');
    assert.deepEqual((await findRuntimePod(new PodView({ runtime: client, images: client, clock }), 'default', 'web'))!.spec.containers, [
      JSON.parse(containerSpecJSON(p.spec!.containers[0]!)),
    ]);
    writeFileSync(file, podSpecJSON(p));
  });

  test("a pod's own annotations named as podctl's records never reach the sandbox", () => {
    const p = pod('web');
    p.metadata!.annotations = { [L.POD_SPEC_ANNOTATION]: '{"containers":[]}', [L.POD_SPEC_HASH_ANNOTATION]: '00000000', mine: 'yes' };
    const withDir = podSandboxConfig(p, 0, '', 'a', '', '/var/lib/podctl/pods/x').annotations!;
    assert.deepEqual(withDir, {
      mine: 'yes',
      [L.POD_SPEC_HASH_ANNOTATION]: fnv32a(podSpecJSON(p)),
      [L.POD_DIR_ANNOTATION]: '/var/lib/podctl/pods/x',
    });
    const bare = podSandboxConfig(p, 0, '', 'a').annotations!;
    assert.deepEqual(bare, { mine: 'yes', [L.POD_SPEC_ANNOTATION]: podSpecJSON(p) });
  });

  test(
    'read back by another process through the pod directory its sandbox recorded: status, image, explanations, pod ' + 'view, inspect',
    async () => {
      const p = pod('web');
      const spec = p.spec!.containers[0]!;
      const status = await freshReader().getPodStatus(uidOf(p), 'web', 'default');
      const [app] = status.containers;
      assert.equal(app!.specJSON, containerSpecJSON(spec));
      assert.equal(app!.image, 'busybox:1.36');
      // podctl plan explains a replacement field by field.
      const edited = await planPods({ runtime: client, images: client, statusReader: freshReader() }, [pod('web', 'busybox:1.37')], {
        now: clock.now(),
      });
      assert.deepEqual(edited.pods[0]!.actions[0]!.changes, [{ field: 'containers[app].image', from: 'busybox:1.36', to: 'busybox:1.37' }]);
      // The pod views rebuild a container from its copy (a sandbox without the pod's own copy).
      assert.deepEqual(specFromRuntime(undefined, status).containers, [JSON.parse(containerSpecJSON(spec))]);
      // inspect finds it for its redaction, and says where it looked.
      const [c] = await listed(p);
      const recorded = await recordedContainerSpec(client, c!);
      assert.equal(recorded.specJSON, containerSpecJSON(spec));
      assert.equal(recorded.path, join(rootDir, 'pods', uidOf(p), 'containers', 'app', `${hashContainer(spec)}.spec.json`));
    },
  );

  test('a container an older podctl made still carries its copy as an annotation: that one is read', async () => {
    const p = pod('web');
    const older = { ...p.spec!.containers[0]!, name: 'old', image: 'busybox:1.35' };
    const [sb] = await client.listPodSandbox({ labelSelector: { [L.POD_UID_LABEL]: uidOf(p) } });
    const config = containerConfig({ pod: p, container: older, kind: 'app', restartCount: 0, imageRef: 'docker.io/library/busybox:1.36' });
    assert.equal(
      config.annotations![L.CONTAINER_SPEC_ANNOTATION],
      containerSpecJSON(older),
      'the copy stays an annotation unless recorded in a pod directory',
    );
    const id = await client.createContainer(sb!.id, config, podSandboxConfig(p, 0, ''));
    assert.equal(existsSync(join(rootDir, 'pods', uidOf(p), 'containers', 'old')), false, 'no file for it');
    const status = await freshReader().getPodStatus(uidOf(p), 'web', 'default');
    assert.equal(status.containers.find((c) => c.id === id)!.specJSON, containerSpecJSON(older));
    assert.equal(status.containers.find((c) => c.id === id)!.image, 'busybox:1.35');
    const [c] = (await listed(p)).filter((x) => x.id === id);
    assert.equal((await recordedContainerSpec(client, c!)).specJSON, containerSpecJSON(older));
    await client.removeContainer(id);
  });

  test('a torn or missing copy is no copy (its text must hash to its name); the writer remembers its own', async () => {
    const p = pod('web');
    const spec = p.spec!.containers[0]!;
    const file = join(rootDir, 'pods', uidOf(p), 'containers', 'app', `${hashContainer(spec)}.spec.json`);
    writeFileSync(file, containerSpecJSON(spec).slice(0, 20));
    const status = await freshReader().getPodStatus(uidOf(p), 'web', 'default');
    assert.equal(status.containers[0]!.specJSON, undefined);
    const [c] = await listed(p);
    assert.deepEqual(await recordedContainerSpec(client, c!), { specJSON: undefined, path: file });
    // The process that wrote it does not read it again.
    const own = await kubelet.runtimeManager.getPodStatus(uidOf(p), 'web', 'default');
    assert.equal(own.containers[0]!.specJSON, containerSpecJSON(spec));
    rmSync(file);
    assert.equal((await freshReader().getPodStatus(uidOf(p), 'web', 'default')).containers[0]!.specJSON, undefined);
  });

  test('copies go with the pod directory when the pod is removed', async () => {
    const p = pod('web');
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
    assert.equal(existsSync(join(rootDir, 'pods', uidOf(p))), false);
    assert.equal(fake.containers().filter((c) => c.labels[L.POD_UID_LABEL] === uidOf(p)).length, 0);
    // The writer forgot them too: the same pod made again writes its copy again.
    await kubelet.syncPod(p, 'create');
    assert.ok(existsSync(join(rootDir, 'pods', uidOf(p), 'containers', 'app', `${hashContainer(p.spec!.containers[0]!)}.spec.json`)));
    await kubelet.syncTerminatingPod(p, 0);
    await kubelet.syncTerminatedPod(p);
  });

  test('without a root dir the copy stays an annotation (there is no pod directory)', async () => {
    const bare = newKubelet({
      runtime: client,
      images: client,
      clock,
      logRoot: join(dir.dir, 'logs'),
      nodeName: 'unit',
      agent: 'spec-copy-bare',
    });
    const p = pod('bare');
    await bare.syncPod(p, 'create');
    const [c] = await listed(p);
    assert.equal(c!.annotations[L.CONTAINER_SPEC_ANNOTATION], containerSpecJSON(p.spec!.containers[0]!));
    const [sb] = await client.listPodSandbox({ labelSelector: { [L.POD_UID_LABEL]: uidOf(p) } });
    assert.equal(sb!.annotations[L.POD_SPEC_ANNOTATION], podSpecJSON(p));
    assert.equal(sb!.annotations[L.POD_SPEC_HASH_ANNOTATION], undefined);
    assert.deepEqual(
      (await findRuntimePod(new PodView({ runtime: client, images: client, clock }), 'default', 'bare'))!.spec,
      JSON.parse(podSpecJSON(p)),
    );
    assert.equal(
      (await freshReader().getPodStatus(uidOf(p), 'bare', 'default')).containers[0]!.specJSON,
      containerSpecJSON(p.spec!.containers[0]!),
    );
    await bare.syncTerminatingPod(p, 0);
    await bare.syncTerminatedPod(p);
  });
});

test('SpecCopies: a name that cannot be a path element or a hash that is not one names no file', async () => {
  const dir = scratchDir('spec-copy-names');
  try {
    assert.equal(specCopyPath(dir.dir, '..', '0123abcd'), undefined);
    assert.equal(specCopyPath(dir.dir, 'app', '../../x'), undefined);
    assert.equal(specCopyPath('relative/dir', 'app', '0123abcd'), undefined);
    const copies = new SpecCopies();
    assert.equal(await copies.read(dir.dir, 'app', '../../etc'), undefined);
    await assert.rejects(copies.write(dir.dir, '..', '{}'), /cannot record the spec of container "\.\."/);
    const hash = await copies.write(dir.dir, 'app', '{"name":"app"}');
    assert.equal(await new SpecCopies().read(dir.dir, 'app', hash), '{"name":"app"}');
  } finally {
    dir.cleanup();
  }
});
