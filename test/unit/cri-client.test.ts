import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { status as Code } from '@grpc/grpc-js';
import { CriClient } from '../../src/core/cri/client.js';
import { GrpcStatus, isCriError, type CriError } from '../../src/core/cri/errors.js';
import type * as T from '../../src/core/cri/types.js';
import { FakeRuntime } from '../../fakecri/index.js';

async function withFake(fn: (fake: FakeRuntime, client: CriClient) => Promise<void>): Promise<void> {
  const fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'] });
  const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 2000, pullTimeoutMs: 2000 });
  try {
    await fn(fake, client);
  } finally {
    client.close();
    await fake.stop();
  }
}

const rejection = async (p: Promise<unknown>): Promise<CriError> => {
  try {
    await p;
  } catch (err) {
    assert.ok(isCriError(err), `a CriError, not ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
};

describe('CRI client (grpc-js) against the fake runtime', () => {
  test('an answer of megabytes decodes as the same records, through the generic and the summary decoders', () =>
    withFake(async (fake, client) => {
      fake.seed({ pods: 1500, containersPerPod: 2, labels: (i) => ({ app: `app-${i}`, 'io.podctl.note': 'x'.repeat(200) }) });
      const full = await client.listContainers();
      assert.equal(full.length, 3000);
      const summaries = await client.listContainerSummaries();
      assert.deepEqual(
        summaries.map((s) => [s.id, s.podSandboxId, s.state, s.labels.app]),
        full.map((c) => [c.id, c.podSandboxId, c.state, c.labels.app]),
      );
      // Twice: the second answer reuses the unchanged records, and decodes the same.
      assert.deepEqual(
        (await client.listContainerSummaries()).map((s) => s.id),
        full.map((c) => c.id),
      );
    }));

  test("a runtime's error status comes back with its code and its message, percent-decoded", () =>
    withFake(async (fake, client) => {
      const message = 'OCI runtime create failed: "ünïcode" 100% (exit 1)';
      fake.failNext('Version', Code.FAILED_PRECONDITION, message);
      const err = await rejection(client.version());
      assert.equal(err.code, GrpcStatus.FAILED_PRECONDITION);
      assert.equal(err.details, message);
      assert.equal(err.method, 'Version');
      // The next call is answered: the session stays usable after an error.
      assert.equal((await client.version()).runtimeName.length > 0, true);
    }));

  test('a request that cannot be encoded fails as a CriError (INTERNAL) naming the field, and sends nothing', () =>
    withFake(async (fake, client) => {
      const err = await rejection(client.runPodSandbox({ metadata: 'not an object' } as unknown as T.PodSandboxConfigInput));
      assert.equal(err.code, GrpcStatus.INTERNAL);
      assert.match(err.message, /RunPodSandbox failed: the request cannot be encoded: .*metadata: object expected/);
      assert.equal((await client.listPodSandbox()).length, 0);
      assert.equal(fake.calls().RunPodSandbox ?? 0, 0);
    }));

  test('a call past its deadline fails DEADLINE_EXCEEDED, naming the method and the timeout', () =>
    withFake(async (fake) => {
      const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 300, pullTimeoutMs: 300 });
      fake.hang('Status');
      try {
        const err = await rejection(client.status());
        assert.equal(err.code, GrpcStatus.DEADLINE_EXCEEDED);
        assert.match(err.message, /Status did not answer within 300ms/);
        fake.unhang('Status');
        assert.ok((await client.status()).status);
      } finally {
        client.close();
      }
    }));

  test('a socket nobody listens on is "no CRI runtime" (UNAVAILABLE), with the connect error as details', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podctl-transport-'));
    // A file that is not a listening socket: connect() is refused.
    writeFileSync(join(dir, 'cri.sock'), '');
    const client = new CriClient({ runtimeEndpoint: `unix://${join(dir, 'cri.sock')}`, timeoutMs: 2000, pullTimeoutMs: 2000 });
    try {
      const err = await rejection(client.version());
      assert.equal(err.code, GrpcStatus.UNAVAILABLE);
      assert.match(err.message, /no CRI runtime at unix:\/\//);
      assert.match(err.details, /connect ECONNREFUSED/);
    } finally {
      client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a closed client fails its calls as CriErrors (UNAVAILABLE), its event stream too', () =>
    withFake(async (fake) => {
      const client = new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 2000, pullTimeoutMs: 2000 });
      assert.equal((await client.version()).runtimeApiVersion, 'v1');
      client.close();
      const err = await rejection(client.version());
      assert.equal(err.code, GrpcStatus.UNAVAILABLE);
      assert.equal(err.method, 'Version');
      // The slot the failed call took is given back: calls beyond the bound still fail at once.
      for (let i = 0; i < 70; i++) await rejection(client.status());
      const streamError = await new Promise<CriError>((resolve) =>
        client.getContainerEvents({ onEvent: () => undefined, onError: resolve }),
      );
      assert.equal(streamError.code, GrpcStatus.UNAVAILABLE);
    }));

  test('container events stream until cancelled; a cancel is no error', () =>
    withFake(async (fake, client) => {
      const events: T.ContainerEventResponse[] = [];
      const errors: CriError[] = [];
      let ended = false;
      // Polled until true or 20 s: the eventual state, however loaded the machine.
      const until = async (what: string, ok: () => boolean) => {
        for (let i = 0; i < 2000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
        assert.ok(ok(), what);
      };
      const stream = client.getContainerEvents({
        onEvent: (e) => events.push(e),
        onError: (e) => errors.push(e),
        onEnd: () => (ended = true),
      });
      // A server stream has no acknowledgement: the fake counts the call once it has subscribed it.
      await until('the fake to take the stream', () => (fake.calls().GetContainerEvents ?? 0) === 1);
      const sandbox = await client.runPodSandbox({ metadata: { name: 'p', uid: 'u1', namespace: 'default', attempt: 0 } });
      await until('the sandbox event', () => events.some((e) => e.containerId === sandbox));
      const id = await client.createContainer(
        sandbox,
        { metadata: { name: 'c', attempt: 0 }, image: { image: 'docker.io/library/busybox:1.36' } },
        { metadata: { name: 'p', uid: 'u1', namespace: 'default', attempt: 0 } },
      );
      await until("the container's CREATED event", () =>
        events.some((e) => e.containerId === id && e.containerEventType === 'CONTAINER_CREATED_EVENT'),
      );
      // A cancel ends the call at once: nothing is reported for it.
      stream.cancel();
      assert.deepEqual(errors, []);
      assert.equal(ended, false);
    }));

  test('an event handler that throws ends its stream with INTERNAL; the connection and other calls go on', () =>
    withFake(async (fake, client) => {
      const errors: CriError[] = [];
      let handled = 0;
      const until = async (what: string, ok: () => boolean) => {
        for (let i = 0; i < 2000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
        assert.ok(ok(), what);
      };
      client.getContainerEvents({
        onEvent: () => {
          handled++;
          throw new Error('handler bug');
        },
        onError: (e) => errors.push(e),
      });
      await until('the fake to take the stream', () => (fake.calls().GetContainerEvents ?? 0) === 1);
      await client.runPodSandbox({ metadata: { name: 'p', uid: 'u1', namespace: 'default', attempt: 0 } });
      await until('the stream to end', () => errors.length === 1);
      assert.equal(handled, 1, 'no message reaches the handler after it threw');
      assert.equal(errors[0]!.code, GrpcStatus.INTERNAL);
      assert.match(errors[0]!.message, /handler failed on a message: handler bug/);
      assert.equal((await client.version()).runtimeApiVersion, 'v1', 'the connection still serves calls');
    }));

  test('a process that made calls and never closed its client still exits: an idle session holds no reference', () =>
    withFake(async (fake) => {
      const clientModule = fileURLToPath(new URL('../../src/core/cri/client.js', import.meta.url));
      const script = `import(${JSON.stringify(clientModule)}).then(async ({ CriClient }) => {
        const client = new CriClient({ runtimeEndpoint: ${JSON.stringify(fake.endpoint)}, timeoutMs: 5000, pullTimeoutMs: 5000 });
        const v = await client.version();
        console.log('version', v.runtimeName);
      });`;
      // Not spawnSync: the fake answers from this process.
      const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += String(d)));
      child.stderr.on('data', (d: Buffer) => (stderr += String(d)));
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const [code, signal] = (await new Promise((resolve) => child.once('close', (c, s) => resolve([c, s])))) as [
        number | null,
        NodeJS.Signals | null,
      ];
      clearTimeout(timer);
      assert.equal(signal, null, `the process was killed: it did not exit by itself (${stderr})`);
      assert.equal(code, 0, stderr);
      assert.match(stdout, /^version \S+/);
    }));
});
