import { CriClient } from '../../src/core/cri/client.js';
import { FakeRuntime, type FakeRuntimeOptions } from '../../fakecri/index.js';

/** A fake runtime with busybox present, and a client on it (5 s deadlines): what most kubelet unit tests start from. */
export async function startFake(opts: FakeRuntimeOptions = {}): Promise<{ fake: FakeRuntime; client: CriClient }> {
  const fake = await FakeRuntime.start({ images: ['docker.io/library/busybox:1.36'], ...opts });
  return { fake, client: new CriClient({ runtimeEndpoint: fake.endpoint, timeoutMs: 5000, pullTimeoutMs: 5000 }) };
}

/** Closes the client, then stops the fake. */
export async function stopFake(f: { fake: FakeRuntime; client: CriClient }): Promise<void> {
  f.client.close();
  await f.fake.stop();
}
