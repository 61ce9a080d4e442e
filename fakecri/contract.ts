/**
 * Client-level CRI behaviour that the fake and a real runtime (containerd)
 * must share. Runtime-neutral: no fake-only controls, no timing assumptions
 * beyond generous polling, and every sandbox a case makes is removed again.
 * The unit tests run these against the fake; an end-to-end test runs the very
 * same cases against containerd.
 */
import assert from 'node:assert/strict';
import type { CriClient } from '../src/core/cri/client.js';
import { isNotFound, isUnimplemented } from '../src/core/cri/errors.js';
import type * as T from '../src/core/cri/types.js';
import { normalizeImageRef } from './images.js';

export interface CriContractContext {
  /** An image that is present or pullable, e.g. 'busybox:1.36' (must provide sh, sleep, echo, true). */
  image: string;
  /** An image no registry holds, e.g. 'docker.io/library/nosuchimage:1'. */
  missingImage: string;
  /** A sandbox name unique to this run (so leftovers of an earlier run never clash). */
  podName: (suffix: string) => string;
  /** Pod namespace of every sandbox (and its io.kubernetes.pod.namespace label); default 'podctl-e2e'. */
  namespace?: string;
}

export interface CriContractCase {
  name: string;
  run(client: CriClient, ctx: CriContractContext): Promise<void>;
}

const RUN_LABEL = 'contract.podctl.io/run';
const GROUP_LABEL = 'contract.podctl.io/group';

function sandboxConfig(
  ctx: CriContractContext,
  suffix: string,
  opts: { hostNetwork?: boolean; labels?: Record<string, string> } = {},
): T.PodSandboxConfigInput {
  const name = ctx.podName(suffix);
  const namespace = ctx.namespace ?? 'podctl-e2e';
  const uid = `${name}-uid`;
  return {
    metadata: { name, uid, namespace, attempt: 0 },
    // A host-network sandbox shares the host's UTS namespace: runc refuses a hostname there.
    hostname: opts.hostNetwork ? '' : name.slice(0, 63),
    labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': namespace, 'io.kubernetes.pod.uid': uid, ...opts.labels },
    linux: { securityContext: { namespaceOptions: { network: opts.hostNetwork ? 'NODE' : 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
  };
}

function containerConfig(name: string, imageRef: string, command: string[], labels: Record<string, string> = {}): T.ContainerConfigInput {
  return { metadata: { name, attempt: 0 }, image: { image: imageRef }, command, labels, linux: {} };
}

/** Stops and removes a sandbox; a sandbox already gone is fine. */
async function removeSandbox(client: CriClient, id: string): Promise<void> {
  try {
    await client.stopPodSandbox(id);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  await client.removePodSandbox(id);
}

/** Runs fn with fresh sandboxes and removes them whatever happens; a cleanup error never hides fn's. */
async function withSandboxes<R>(client: CriClient, configs: T.PodSandboxConfigInput[], fn: (ids: string[]) => Promise<R>): Promise<R> {
  const ids: string[] = [];
  const cleanup = async () => {
    let first: unknown;
    for (const id of ids) await removeSandbox(client, id).catch((err: unknown) => (first ??= err));
    if (first !== undefined) throw first;
  };
  let result: R;
  try {
    for (const config of configs) ids.push(await client.runPodSandbox(config));
    result = await fn(ids);
  } catch (err) {
    await cleanup().catch(() => undefined);
    throw err;
  }
  await cleanup();
  return result;
}

async function ensureImage(client: CriClient, image: string): Promise<string> {
  return (await client.imageStatus(image))?.id ?? (await client.pullImage(image));
}

async function waitFor<R>(what: string, probe: () => Promise<R | undefined>, timeoutMs = 15_000): Promise<R> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new assert.AssertionError({ message: `timed out after ${timeoutMs} ms waiting for ${what}` });
    await new Promise((r) => setTimeout(r, 50));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ids = (items: { id: string }[]) => items.map((i) => i.id).sort();
/** An id no runtime holds (64 hex, like real ones). */
const unknownId = () => 'f'.repeat(56) + Date.now().toString(16).padStart(8, '0').slice(-8);

async function containerStatus(client: CriClient, id: string): Promise<T.ContainerStatus> {
  const status = (await client.containerStatus(id)).status;
  assert.ok(status, `ContainerStatus of ${id} has no status`);
  return status;
}

async function sandboxStatus(client: CriClient, id: string): Promise<T.PodSandboxStatus> {
  const status = (await client.podSandboxStatus(id)).status;
  assert.ok(status, `PodSandboxStatus of ${id} has no status`);
  return status;
}

export function criContractCases(): CriContractCase[] {
  return [
    {
      name: 'Version names a runtime that speaks runtime.v1',
      async run(client) {
        const v = await client.version();
        assert.equal(v.runtimeApiVersion, 'v1');
        assert.ok(v.runtimeName.length > 0);
        assert.ok(v.runtimeVersion.length > 0);
      },
    },
    {
      name: 'Status reports RuntimeReady and NetworkReady',
      async run(client) {
        const conditions = (await client.status()).status?.conditions ?? [];
        const byType = new Map(conditions.map((c) => [c.type, c.status]));
        assert.equal(byType.get('RuntimeReady'), true);
        assert.equal(byType.get('NetworkReady'), true);
      },
    },
    {
      name: 'PullImage returns an image id that ImageStatus finds by short name, full name and id',
      async run(client, ctx) {
        const ref = await client.pullImage(ctx.image);
        assert.match(ref, /^sha256:[0-9a-f]{64}$/);
        const full = normalizeImageRef(ctx.image);
        for (const name of [ctx.image, full, ref]) {
          const image = await client.imageStatus(name);
          assert.equal(image?.id, ref, `ImageStatus(${name})`);
          assert.ok(image.repoTags.includes(full), `repoTags of ${name}: ${image.repoTags.join(', ')}`);
          assert.ok(image.size > 0);
        }
        assert.ok((await client.listImages()).some((i) => i.id === ref));
        assert.equal(await client.pullImage(ctx.image), ref, 'pulling again gives the same id');
      },
    },
    {
      name: 'PullImage of an image no registry holds fails with NOT_FOUND; ImageStatus says absent',
      async run(client, ctx) {
        await assert.rejects(client.pullImage(ctx.missingImage), (err: Error) => {
          assert.ok(isNotFound(err), `expected NOT_FOUND, got ${err.message}`);
          assert.match(err.message, /not found/);
          return true;
        });
        assert.equal(await client.imageStatus(ctx.missingImage), undefined);
      },
    },
    {
      name: 'a sandbox runs; a container is created, started, stopped (exit 137) and removed',
      async run(client, ctx) {
        const imageRef = await ensureImage(client, ctx.image);
        const config = sandboxConfig(ctx, 'lifecycle');
        await withSandboxes(client, [config], async ([sandboxId]) => {
          const sb = await sandboxStatus(client, sandboxId!);
          assert.equal(sb.id, sandboxId);
          assert.equal(sb.state, 'SANDBOX_READY');
          assert.equal(sb.metadata?.name, config.metadata?.name);
          assert.equal(sb.metadata?.uid, config.metadata?.uid);
          assert.equal(sb.metadata?.namespace, config.metadata?.namespace);
          assert.ok(sb.createdAt > 0);
          assert.deepEqual(sb.labels, config.labels);
          assert.deepEqual(ids(await client.listPodSandbox({ id: sandboxId })), [sandboxId]);

          const cid = await client.createContainer(sandboxId!, containerConfig('app', imageRef, ['sleep', '3600'], { app: 'yes' }), config);
          assert.match(cid, /^[0-9a-f]{64}$/);
          let st = await containerStatus(client, cid);
          assert.equal(st.state, 'CONTAINER_CREATED');
          assert.equal(st.metadata?.name, 'app');
          assert.equal(st.labels.app, 'yes');
          assert.ok(st.createdAt > 0);
          assert.equal(st.startedAt, 0);
          assert.equal(st.imageId || imageRef, imageRef);

          await client.startContainer(cid);
          st = await containerStatus(client, cid);
          assert.equal(st.state, 'CONTAINER_RUNNING');
          assert.ok(st.startedAt >= st.createdAt);
          const listed = await client.listContainers({ podSandboxId: sandboxId });
          assert.deepEqual(
            listed.map((c) => [c.id, c.state, c.podSandboxId]),
            [[cid, 'CONTAINER_RUNNING', sandboxId]],
          );
          const stats = await client.containerStats(cid);
          assert.equal(stats?.attributes?.id, cid);
          await assert.rejects(client.startContainer(cid), 'starting a running container again fails');

          await client.stopContainer(cid, 0);
          st = await containerStatus(client, cid);
          assert.equal(st.state, 'CONTAINER_EXITED');
          assert.equal(st.exitCode, 137, 'killed without grace');
          assert.equal(st.reason, 'Error');
          assert.ok(st.finishedAt >= st.startedAt);
          await client.stopContainer(cid, 0); // stopping an exited container is fine

          await client.removeContainer(cid);
          await assert.rejects(client.containerStatus(cid), (err) => isNotFound(err));
          assert.deepEqual(await client.listContainers({ id: cid }), []);
          await client.removeContainer(cid); // removing twice is fine

          await client.stopPodSandbox(sandboxId!);
          assert.equal((await sandboxStatus(client, sandboxId!)).state, 'SANDBOX_NOTREADY');
          await client.stopPodSandbox(sandboxId!); // stopping twice is fine
          await client.removePodSandbox(sandboxId!);
          await assert.rejects(client.podSandboxStatus(sandboxId!), (err) => isNotFound(err));
          assert.deepEqual(await client.listPodSandbox({ id: sandboxId }), []);
          await client.removePodSandbox(sandboxId!); // removing twice is fine
        });
      },
    },
    {
      name: 'a container whose command exits reports its exit code, and ExecSync in it fails',
      async run(client, ctx) {
        const imageRef = await ensureImage(client, ctx.image);
        const config = sandboxConfig(ctx, 'exits');
        await withSandboxes(client, [config], async ([sandboxId]) => {
          const cid = await client.createContainer(sandboxId!, containerConfig('quits', imageRef, ['sh', '-c', 'exit 3']), config);
          await client.startContainer(cid);
          const st = await waitFor('the container to exit', async () => {
            const s = await containerStatus(client, cid);
            return s.state === 'CONTAINER_EXITED' ? s : undefined;
          });
          assert.equal(st.exitCode, 3);
          assert.equal(st.reason, 'Error');
          // containerd may stamp a very short-lived process's exit before its start: only both being set is certain.
          assert.ok(st.startedAt > 0 && st.finishedAt > 0);
          await assert.rejects(client.execSync(cid, ['true'], 5), 'exec in an exited container fails');
        });
      },
    },
    {
      name: 'ExecSync in a running container returns exit codes and output',
      async run(client, ctx) {
        const imageRef = await ensureImage(client, ctx.image);
        const config = sandboxConfig(ctx, 'exec');
        await withSandboxes(client, [config], async ([sandboxId]) => {
          const cid = await client.createContainer(sandboxId!, containerConfig('app', imageRef, ['sleep', '3600']), config);
          await client.startContainer(cid);
          assert.equal((await client.execSync(cid, ['true'], 5)).exitCode, 0);
          assert.equal((await client.execSync(cid, ['false'], 5)).exitCode, 1);
          assert.equal((await client.execSync(cid, ['sh', '-c', 'exit 7'], 5)).exitCode, 7);
          const echo = await client.execSync(cid, ['echo', 'hello', 'probe'], 5);
          assert.equal(echo.exitCode, 0);
          assert.equal(echo.stdout.toString(), 'hello probe\n');
        });
      },
    },
    {
      name: 'label selectors (all pairs), state, id and sandbox filters narrow the lists',
      async run(client, ctx) {
        const imageRef = await ensureImage(client, ctx.image);
        const run = `r${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
        const configA = sandboxConfig(ctx, 'filter-a', { labels: { [RUN_LABEL]: run, [GROUP_LABEL]: 'a' } });
        const configB = sandboxConfig(ctx, 'filter-b', { labels: { [RUN_LABEL]: run, [GROUP_LABEL]: 'b' } });
        await withSandboxes(client, [configA, configB], async ([a, b]) => {
          const ca = await client.createContainer(
            a!,
            containerConfig('app', imageRef, ['sleep', '3600'], { [RUN_LABEL]: run, [GROUP_LABEL]: 'a' }),
            configA,
          );
          const cb = await client.createContainer(
            b!,
            containerConfig('app', imageRef, ['sleep', '3600'], { [RUN_LABEL]: run, [GROUP_LABEL]: 'b' }),
            configB,
          );
          await client.startContainer(ca);

          assert.deepEqual(ids(await client.listPodSandbox({ labelSelector: { [RUN_LABEL]: run } })), [a, b].sort());
          assert.deepEqual(ids(await client.listPodSandbox({ labelSelector: { [RUN_LABEL]: run, [GROUP_LABEL]: 'a' } })), [a]);
          assert.deepEqual(ids(await client.listPodSandbox({ labelSelector: { [RUN_LABEL]: run, [GROUP_LABEL]: 'c' } })), []);
          assert.deepEqual(ids(await client.listPodSandbox({ id: a, labelSelector: { [GROUP_LABEL]: 'b' } })), []);

          assert.deepEqual(ids(await client.listContainers({ labelSelector: { [RUN_LABEL]: run } })), [ca, cb].sort());
          assert.deepEqual(ids(await client.listContainers({ labelSelector: { [RUN_LABEL]: run, [GROUP_LABEL]: 'b' } })), [cb]);
          assert.deepEqual(
            ids(await client.listContainers({ labelSelector: { [RUN_LABEL]: run }, state: { state: 'CONTAINER_RUNNING' } })),
            [ca],
          );
          assert.deepEqual(
            ids(await client.listContainers({ labelSelector: { [RUN_LABEL]: run }, state: { state: 'CONTAINER_CREATED' } })),
            [cb],
          );
          assert.deepEqual(ids(await client.listContainers({ podSandboxId: b })), [cb]);
          assert.deepEqual(ids(await client.listContainers({ id: ca })), [ca]);
          assert.deepEqual(ids(await client.listContainers({ id: ca, podSandboxId: b })), []);
          const stats = await client.listContainerStats({ id: ca });
          assert.deepEqual(
            stats.map((s) => s.attributes?.id),
            [ca],
          );

          await client.stopPodSandbox(b!);
          const selector = { [RUN_LABEL]: run };
          assert.deepEqual(ids(await client.listPodSandbox({ labelSelector: selector, state: { state: 'SANDBOX_NOTREADY' } })), [b]);
          assert.deepEqual(ids(await client.listPodSandbox({ labelSelector: selector, state: { state: 'SANDBOX_READY' } })), [a]);
        });
      },
    },
    {
      name: 'unknown ids: status and stop answer NOT_FOUND, remove succeeds',
      async run(client) {
        const id = unknownId();
        const notFound = (err: unknown) => isNotFound(err);
        await assert.rejects(client.containerStatus(id), notFound);
        await assert.rejects(client.podSandboxStatus(id), notFound);
        await assert.rejects(client.stopContainer(id, 0), notFound);
        await assert.rejects(client.stopPodSandbox(id), notFound);
        await assert.rejects(client.execSync(id, ['true'], 1), notFound);
        await client.removeContainer(id);
        await client.removePodSandbox(id);
        assert.deepEqual(await client.listContainers({ id }), []);
        assert.deepEqual(await client.listPodSandbox({ id }), []);
      },
    },
    {
      name: 'a sandbox or container name (with its attempt) is reserved until removed',
      async run(client, ctx) {
        const imageRef = await ensureImage(client, ctx.image);
        const config = sandboxConfig(ctx, 'reserved');
        await withSandboxes(client, [config], async ([sandboxId]) => {
          await assert.rejects(client.runPodSandbox(config), /reserved/);
          const app = containerConfig('app', imageRef, ['sleep', '3600']);
          const first = await client.createContainer(sandboxId!, app, config);
          await assert.rejects(client.createContainer(sandboxId!, app, config), /reserved/);
          const second = await client.createContainer(sandboxId!, { ...app, metadata: { name: 'app', attempt: 1 } }, config);
          assert.notEqual(first, second);
          await client.removeContainer(first);
          await client.removeContainer(await client.createContainer(sandboxId!, app, config));
          await removeSandbox(client, sandboxId!);
          await withSandboxes(client, [config], async ([again]) => assert.notEqual(again, sandboxId));
        });
      },
    },
    {
      name: 'CreateContainer with an image that is not present fails with NOT_FOUND',
      async run(client, ctx) {
        const config = sandboxConfig(ctx, 'noimage');
        await withSandboxes(client, [config], async ([sandboxId]) => {
          await assert.rejects(client.createContainer(sandboxId!, containerConfig('app', ctx.missingImage, ['true']), config), (err) =>
            isNotFound(err),
          );
          assert.deepEqual(await client.listContainers({ podSandboxId: sandboxId }), []);
        });
      },
    },
    {
      name: 'a pod-network sandbox has an IP; a host-network one has none and reports NODE',
      async run(client, ctx) {
        const pod = sandboxConfig(ctx, 'podnet');
        const host = sandboxConfig(ctx, 'hostnet', { hostNetwork: true });
        await withSandboxes(client, [pod, host], async ([podId, hostId]) => {
          const p = await sandboxStatus(client, podId!);
          assert.match(p.network?.ip ?? '', /^\d+\.\d+\.\d+\.\d+$/);
          assert.equal(p.linux?.namespaces?.options?.network, 'POD');
          const h = await sandboxStatus(client, hostId!);
          assert.equal(h.network?.ip ?? '', '');
          assert.equal(h.linux?.namespaces?.options?.network, 'NODE');
        });
      },
    },
    {
      name: 'GetContainerEvents, when served, reports created, started, stopped and deleted in order',
      async run(client, ctx) {
        const imageRef = await ensureImage(client, ctx.image);
        const events: T.ContainerEventResponse[] = [];
        let streamError: Error | undefined;
        const stream = client.getContainerEvents({ onEvent: (e) => events.push(e), onError: (err) => (streamError = err) });
        try {
          // A server stream has no acknowledgement: give the runtime a moment to register it.
          await sleep(300);
          if (streamError && isUnimplemented(streamError)) return; // containerd 1.6: clients fall back to relisting
          assert.equal(streamError, undefined);
          const config = sandboxConfig(ctx, 'events');
          await withSandboxes(client, [config], async ([sandboxId]) => {
            const cid = await client.createContainer(sandboxId!, containerConfig('app', imageRef, ['sleep', '3600']), config);
            await client.startContainer(cid);
            await client.stopContainer(cid, 0);
            await client.removeContainer(cid);
            const mine = await waitFor(
              'four events',
              async () => {
                const seen = events.filter((e) => e.containerId === cid);
                return seen.length >= 4 ? seen : undefined;
              },
              10_000,
            );
            assert.deepEqual(
              mine.map((e) => e.containerEventType),
              ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT'],
            );
            for (const e of mine.slice(0, 3)) {
              assert.equal(e.podSandboxStatus?.id, sandboxId);
              assert.ok(e.createdAt > 0);
              assert.ok(
                e.containersStatuses.some((s) => s.id === cid),
                'the event carries the container status',
              );
            }
            assert.equal(mine[1]!.containersStatuses.find((s) => s.id === cid)?.state, 'CONTAINER_RUNNING');
            assert.equal(mine[2]!.containersStatuses.find((s) => s.id === cid)?.state, 'CONTAINER_EXITED');
          });
          assert.equal(streamError, undefined);
        } finally {
          stream.cancel();
        }
      },
    },
  ];
}
