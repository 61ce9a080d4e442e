import { CriClient } from '../core/cri/client.js';
import { errorMessage } from '../core/errors.js';

function clientFor(endpoint: string): CriClient {
  return new CriClient({ runtimeEndpoint: endpoint, timeoutMs: 2000, pullTimeoutMs: 2000 });
}

/** One readiness check: the CRI Status call reports RuntimeReady and NetworkReady. */
export async function waitRuntimeReady(endpoint: string, _signal: AbortSignal): Promise<{ ready: boolean; detail: string }> {
  const client = clientFor(endpoint);
  try {
    const status = await client.status();
    const conditions = status.status?.conditions ?? [];
    const notReady = ['RuntimeReady', 'NetworkReady'].filter((t) => !conditions.find((c) => c.type === t)?.status);
    if (notReady.length === 0) return { ready: true, detail: 'RuntimeReady and NetworkReady' };
    const detail = notReady
      .map((t) => {
        const c = conditions.find((x) => x.type === t);
        return `${t} false${c?.message ? ` (${c.reason}: ${c.message})` : ''}`;
      })
      .join(', ');
    return { ready: false, detail };
  } catch (err) {
    return { ready: false, detail: errorMessage(err) };
  } finally {
    client.close();
  }
}

/** Every sandbox's ID, whoever made it. */
export async function sandboxIds(endpoint: string): Promise<string[]> {
  const client = clientFor(endpoint);
  try {
    return (await client.listPodSandbox()).map((s) => s.id);
  } finally {
    client.close();
  }
}

/** Stops and removes every sandbox of the embedded runtime, which is podctl's own, before it stops. */
export async function removeAllPods(endpoint: string): Promise<void> {
  const client = new CriClient({ runtimeEndpoint: endpoint, timeoutMs: 30_000, pullTimeoutMs: 30_000 });
  try {
    const sandboxes = await client.listPodSandbox();
    for (const s of sandboxes) {
      await client.stopPodSandbox(s.id);
      await client.removePodSandbox(s.id);
    }
  } finally {
    client.close();
  }
}
