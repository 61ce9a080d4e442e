import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { status as Code } from '@grpc/grpc-js';
import { CriClient } from '../../src/core/cri/client.js';
import { socketPath } from '../../src/core/cri/endpoint.js';
import { GrpcStatus, isCriError, type CriError } from '../../src/core/cri/errors.js';
import { criServices } from '../../src/core/cri/proto.js';
import { decodeContainerSummaries } from '../../src/core/cri/summaries.js';
import { GrpcCallError, GrpcChannel, ReceiveBuffer, grpcTimeout } from '../../src/core/cri/transport.js';
import type * as T from '../../src/core/cri/types.js';
import { FakeRuntime } from '../../fakecri/index.js';

const OPTIONS = { windowBytes: 16 * 1024 * 1024, maxMessageBytes: 64 * 1024 * 1024 };
const listContainers = criServices().RuntimeService.ListContainers!;
const encode = (req: object) => listContainers.requestSerialize(req) as Buffer;
const decode = (buf: Buffer) => listContainers.responseDeserialize(buf) as { containers: T.Container[] };

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

describe('CRI transport: gRPC over our HTTP/2 client, against a grpc-js server', () => {
  test('an answer of megabytes, in many HTTP/2 chunks, decodes as the same records, through the generic and the summary decoders', () =>
    withFake(async (fake, client) => {
      fake.seed({ pods: 1500, containersPerPod: 2, labels: (i) => ({ app: `app-${i}`, 'io.podctl.note': 'x'.repeat(200) }) });
      const full = await client.listContainers();
      assert.equal(full.length, 3000);
      const summaries = await client.listContainerSummaries();
      assert.deepEqual(
        summaries.map((s) => [s.id, s.podSandboxId, s.state, s.labels.app]),
        full.map((c) => [c.id, c.podSandboxId, c.state, c.labels.app]),
      );
      // Twice: the second answer is read into the buffer the first one was, and decodes the same.
      assert.deepEqual(
        (await client.listContainerSummaries()).map((s) => s.id),
        full.map((c) => c.id),
      );
    }));

  test('a ReceiveBuffer is reused from one answer to the next, and a call meanwhile gets its own', () =>
    withFake(async (fake) => {
      fake.seed({ pods: 400, containersPerPod: 2 });
      const channel = new GrpcChannel(socketPath(fake.endpoint), OPTIONS);
      const into = new ReceiveBuffer();
      const seen: ArrayBufferLike[] = [];
      const record = (buf: Buffer) => {
        seen.push(buf.buffer);
        return decodeContainerSummaries(buf).length;
      };
      try {
        const deadline = () => Date.now() + 5000;
        assert.equal(await channel.unary(listContainers.path, encode({}), deadline(), record, into), 800);
        assert.equal(await channel.unary(listContainers.path, encode({}), deadline(), record, into), 800);
        assert.equal(seen[0], seen[1], 'the second answer reuses the first one’s memory');
        assert.ok(into.capacity >= 1024 * 1024);
        // Two at once: they cannot share it.
        const both = await Promise.all([channel.unary(listContainers.path, encode({}), deadline(), record, into), channel.unary(listContainers.path, encode({}), deadline(), record, into)]);
        assert.deepEqual(both, [800, 800]);
        assert.notEqual(seen[2], seen[3]);
        // Far fewer records: the buffer shrinks with them.
        const small = new ReceiveBuffer();
        small.take(4 * 1024 * 1024).release();
        small.take(1000).release();
        assert.ok(small.capacity < 4 * 1024 * 1024);
      } finally {
        channel.close();
      }
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

  test('a closed client fails its calls, and a message above the size limit fails RESOURCE_EXHAUSTED', () =>
    withFake(async (fake) => {
      fake.seed({ pods: 50, containersPerPod: 1 });
      const channel = new GrpcChannel(socketPath(fake.endpoint), { ...OPTIONS, maxMessageBytes: 1024 });
      try {
        await assert.rejects(channel.unary(listContainers.path, encode({}), Date.now() + 5000, decode), (err: GrpcCallError) => err.code === GrpcStatus.RESOURCE_EXHAUSTED);
      } finally {
        channel.close();
      }
      await assert.rejects(channel.unary(listContainers.path, encode({}), Date.now() + 5000, decode), (err: GrpcCallError) => err.code === GrpcStatus.UNAVAILABLE);
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
      const stream = client.getContainerEvents({ onEvent: (e) => events.push(e), onError: (e) => errors.push(e), onEnd: () => (ended = true) });
      // A server stream has no acknowledgement: the fake counts the call once it has subscribed it.
      await until('the fake to take the stream', () => (fake.calls().GetContainerEvents ?? 0) === 1);
      const sandbox = await client.runPodSandbox({ metadata: { name: 'p', uid: 'u1', namespace: 'default', attempt: 0 } });
      await until('the sandbox event', () => events.some((e) => e.containerId === sandbox));
      const id = await client.createContainer(sandbox, { metadata: { name: 'c', attempt: 0 }, image: { image: 'docker.io/library/busybox:1.36' } }, { metadata: { name: 'p', uid: 'u1', namespace: 'default', attempt: 0 } });
      await until('the container\'s CREATED event', () => events.some((e) => e.containerId === id && e.containerEventType === 'CONTAINER_CREATED_EVENT'));
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
      const [code, signal] = (await new Promise((resolve) => child.once('close', (c, s) => resolve([c, s])))) as [number | null, NodeJS.Signals | null];
      clearTimeout(timer);
      assert.equal(signal, null, `the process was killed: it did not exit by itself (${stderr})`);
      assert.equal(code, 0, stderr);
      assert.match(stdout, /^version \S+/);
    }));
});

test('grpc-timeout: whole milliseconds up to 8 digits, then seconds, then hours', () => {
  assert.equal(grpcTimeout(300), '300m');
  assert.equal(grpcTimeout(0.4), '1m');
  assert.equal(grpcTimeout(99_999_999), '99999999m');
  assert.equal(grpcTimeout(100_000_000), '100000S');
  assert.equal(grpcTimeout(1e15), '99999999H');
});
