import type { IPod } from 'kubernetes-models/v1';
import { PodctlError } from '../errors.js';
import { exchange, request, unixSocket, type Answer } from '../status/client.js';
import type { PlanAnswer } from '../plan.js';
import { MAX_REQUEST_BODY_BYTES, type AppliedPodRef, type ApplyManifestsRequest, type ManifestsRequest } from './agent.js';
import { agentSocket } from './paths.js';
import type { ManifestProblem } from '../pod/types.js';

/** An answer of the agent that is not a success, with its message (the problems of a refused manifest). */
export class AgentRequestError extends PodctlError {
  constructor(
    readonly status: number,
    message: string,
    /** The rest of the agent's answer (a refused manifest's problems and warnings, a refused pod's reasons). */
    readonly details: Record<string, unknown> = {},
    hint?: string,
  ) {
    super(message, { exitCode: status === 400 || status === 413 ? 2 : 1, hint });
  }
}

/**
 * What to do about the agent's 413: this client refuses before sending what its own agent would, so
 * an agent that answers 413 takes less, as one started by an older podctl does.
 */
const TOO_LARGE_HINT =
  'hand the files over in smaller sets, or restart the agent (`podctl agent stop`, then start it again) if an older podctl started it';

const mib = (bytes: number) => `${+(bytes / (1 << 20)).toFixed(1)} MiB`;

/**
 * A request's body, refused here when the agent would answer it 413: the files that make it up named,
 * the largest first, before anything is sent.
 */
function manifestsBody(request: unknown, files: { name: string; text: string }[]): string {
  const body = JSON.stringify(request);
  const size = Buffer.byteLength(body);
  if (size <= MAX_REQUEST_BODY_BYTES) return body;
  const largest = [...files]
    .sort((a, b) => b.text.length - a.text.length)
    .slice(0, 3)
    .map((f) => `${f.name} ${mib(Buffer.byteLength(f.text))}`);
  throw new PodctlError(
    `the manifests come to ${mib(size)} as sent to the agent, more than the ${mib(MAX_REQUEST_BODY_BYTES)} it takes at once ` +
      `(${files.length} file(s); the largest: ${largest.join(', ')})`,
    { hint: 'hand the files over in smaller sets', exitCode: 2 },
  );
}

const entriesOf = (r: ManifestsRequest) => r.manifests.entries.flatMap((e) => ('text' in e ? [{ name: e.display, text: e.text }] : []));

/** The node agent's API client, over its unix socket (<root-dir>/podctl.sock), API version v1. */
export class AgentClient {
  readonly socket: string;

  constructor(rootDir: string) {
    this.socket = agentSocket(rootDir);
  }

  private call(method: string, path: string, opts: { body?: string; timeoutMs?: number } = {}): Promise<Answer> {
    const timeoutMs = opts.timeoutMs ?? 5000;
    return exchange(this.socket, {
      method,
      path,
      body: opts.body,
      timeoutMs,
      timeoutMessage: `the agent on ${this.socket} did not answer ${method} ${path} within ${timeoutMs} ms`,
    });
  }

  private async json<T>(method: string, path: string, opts: { body?: string; timeoutMs?: number } = {}): Promise<T> {
    const r = await this.call(method, path, opts);
    let parsed: unknown;
    try {
      parsed = JSON.parse(r.body);
    } catch {
      parsed = undefined;
    }
    if (r.status !== 200) {
      const answer = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
      throw new AgentRequestError(
        r.status,
        typeof answer.message === 'string' ? answer.message : `${method} ${path}: HTTP ${r.status}: ${r.body.trim()}`,
        answer,
        r.status === 413 ? TOO_LARGE_HINT : undefined,
      );
    }
    return parsed as T;
  }

  /** True when an agent answers on the socket (healthy or not). */
  async running(timeoutMs = 1000): Promise<boolean> {
    try {
      await this.call('GET', '/v1/healthz', { timeoutMs });
      return true;
    } catch {
      return false;
    }
  }

  info(): Promise<{ pid: number; rootDir: string; socket: string; log?: string; since: string; pods: number }> {
    return this.json('GET', '/v1/agent');
  }

  /** The agent's events as a v1 EventList's items, one pod's when uid is given. */
  async events(uid?: string): Promise<{ reason?: string; message?: string; type?: string; lastTimestamp?: string }[]> {
    return (
      await this.json<{ items: { reason?: string; message?: string; type?: string; lastTimestamp?: string }[] }>(
        'GET',
        `/v1/events${uid ? `?uid=${encodeURIComponent(uid)}` : ''}`,
      )
    ).items;
  }

  async pods(): Promise<IPod[]> {
    return (await this.json<{ items: IPod[] }>('GET', '/v1/pods')).items;
  }

  /** The agent's plan of these pods (validated and defaulted) against its runtime; nothing changes. */
  plan(pods: IPod[], prune: boolean): Promise<PlanAnswer> {
    return this.json<PlanAnswer>('POST', '/v1/plan', { body: JSON.stringify({ pods, prune }), timeoutMs: 30_000 });
  }

  /**
   * POST /v1/manifests/plan: the agent reads the manifests as the command would (the same problems,
   * 400 with them), and plans their pods against its runtime. Undefined from an agent without the
   * route (an older one): the caller reads the manifests itself.
   */
  planManifests(
    request: ManifestsRequest & { prune: boolean },
  ): Promise<(PlanAnswer & { pods: number; warnings: ManifestProblem[] }) | undefined> {
    const body = manifestsBody(request, entriesOf(request));
    return this.olderAgentUndefined(this.json('POST', '/v1/manifests/plan', { body, timeoutMs: 30_000 }));
  }

  /**
   * POST /v1/manifests/apply: the agent reads the manifests as the command would (400 with the same
   * problems), admits their pods as the command asks (403 with the pods rejected) and keeps them, all
   * or nothing. Undefined from an agent without the route (an older one).
   */
  applyManifests(request: ApplyManifestsRequest): Promise<{ pods: AppliedPodRef[]; warnings: ManifestProblem[] } | undefined> {
    const body = manifestsBody(request, entriesOf(request));
    return this.olderAgentUndefined(this.json('POST', '/v1/manifests/apply', { body, timeoutMs: 30_000 }));
  }

  private async olderAgentUndefined<T>(answer: Promise<T>): Promise<T | undefined> {
    try {
      return await answer;
    } catch (err) {
      // An agent from before the route answers 405 (a POST it does not take) or 404.
      if (err instanceof AgentRequestError && (err.status === 404 || err.status === 405)) return undefined;
      throw err;
    }
  }

  /** Hands manifests to the agent; the pods it now keeps (a refused manifest changes nothing). */
  async apply(files: { file: string; text: string }[]): Promise<AppliedPodRef[]> {
    const body = manifestsBody(
      { files },
      files.map((f) => ({ name: f.file, text: f.text })),
    );
    return (await this.json<{ pods: AppliedPodRef[] }>('POST', '/v1/pods', { body, timeoutMs: 30_000 })).pods;
  }

  /**
   * GET /v1/pods?watch=1: every pod as ADDED, then each change as it happens. onEnd gets an error
   * when the stream could not be opened or broke; cancel() ends it quietly.
   */
  watchPods(onEvent: (e: { type: string; object: IPod }) => void, onEnd: (err?: Error) => void): { cancel(): void } {
    let cancelled = false;
    let ended = false;
    const end = (err?: Error) => {
      if (ended || cancelled) return;
      ended = true;
      onEnd(err);
    };
    const req = request({ ...unixSocket(this.socket), path: '/v1/pods?watch=1', method: 'GET' }, (res) => {
      if (res.statusCode !== 200 || !String(res.headers['content-type'] ?? '').includes('json')) {
        res.resume();
        return end(new Error(`GET /v1/pods?watch=1: HTTP ${res.statusCode}`));
      }
      let buffered = '';
      // Decoded as a stream: a character split between two pieces stays whole.
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buffered += d;
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (!line) continue;
          try {
            onEvent(JSON.parse(line) as { type: string; object: IPod });
          } catch (err) {
            req.destroy(err as Error);
          }
        }
      });
      res.on('end', () => end(new Error('the agent ended the watch')));
      res.on('error', (err) => end(err));
      // A watcher the agent closed (one too slow to read its events) ends here too.
      res.on('close', () => end(new Error('the agent ended the watch')));
    });
    req.on('error', (err) => end(err));
    req.end();
    return {
      cancel: () => {
        cancelled = true;
        req.destroy();
      },
    };
  }

  /** Sets a pod condition (a readiness gate's); the pod as the agent now has it. */
  setCondition(
    namespace: string,
    name: string,
    condition: { type: string; status: 'True' | 'False' | 'Unknown'; reason?: string; message?: string },
  ): Promise<IPod> {
    return this.json('POST', `/v1/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/conditions`, {
      body: JSON.stringify(condition),
    });
  }

  /** Tells the agent to forget the pod; it terminates it (poll pods() for the end). */
  delete(namespace: string, name: string, gracePeriodSeconds?: number): Promise<{ uid?: string }> {
    const q = gracePeriodSeconds === undefined || gracePeriodSeconds < 0 ? '' : `?gracePeriodSeconds=${gracePeriodSeconds}`;
    return this.json('DELETE', `/v1/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}${q}`, { timeoutMs: 30_000 });
  }
}
