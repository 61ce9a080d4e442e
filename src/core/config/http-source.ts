import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { IPod } from 'kubernetes-models/v1';
import type { Clock, TimerHandle } from '../clock.js';
import { formatProblem, parseManifestText } from '../pod/index.js';
import { NO_OBJECTS, type SourceObjects } from '../objects.js';
import type { SourceError } from './file-source.js';

export interface HttpSourceOptions {
  url: string;
  headers?: Record<string, string>;
  nodeName: string;
  clock: Clock;
  /** --http-check-frequency, 20 s. */
  pollMs?: number;
  /** Per request (10 s). */
  timeoutMs?: number;
  /** A body larger than this is refused and the last good pods kept (--manifest-url-max-size, 4 MiB). */
  maxBytes?: number;
  /** The pods served, and the ConfigMaps and Secrets served with them. */
  onSnapshot(pods: IPod[], objects: SourceObjects): void;
  onError(err: SourceError): void;
  /** The warnings of a good body, said once per distinct text. */
  onWarning?(warning: SourceError): void;
}

export const DEFAULT_MANIFEST_URL_MAX_BYTES = 4 << 20;
const MAX_REDIRECTS = 5;

/** One GET, answered with its response head; the body is left for the caller to read. */
function get(url: URL, headers: Record<string, string> | undefined, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const tls = url.protocol === 'https:';
    if (!tls && url.protocol !== 'http:') return reject(new Error(`expected an http or https URL, got ${url.protocol}`));
    const req = (tls ? httpsRequest : httpRequest)(url, { headers, signal, agent: false }, resolve);
    req.on('error', reject);
    req.end();
  });
}

/**
 * GETs a manifest URL. Redirects are followed only within the URL's own origin (scheme, host and
 * port), at most 5 times, so the custom headers (an API key, say) never leave it; a redirect
 * elsewhere is refused. The body is read up to maxBytes, and refused past that.
 */
export async function fetchManifest(
  url: string,
  opts: { headers?: Record<string, string>; timeoutMs?: number; maxBytes?: number },
): Promise<string> {
  const origin = new URL(url).origin;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const signal = AbortSignal.timeout(timeoutMs);
  let current = new URL(url);
  for (let hop = 0; ; hop++) {
    let res: IncomingMessage;
    try {
      res = await get(current, opts.headers, signal);
    } catch (err) {
      if (signal.aborted) throw new Error(`${url}: no answer within ${timeoutMs / 1000} s`);
      throw new Error(`${url}: ${(err as Error).message}`);
    }
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location) {
      res.destroy();
      const next = new URL(res.headers.location, current);
      if (next.origin !== origin) {
        throw new Error(
          `${url}: refusing the redirect to ${next.href}: podctl follows ` +
            `redirects only within ${origin}, so its headers never go elsewhere`,
        );
      }
      if (hop >= MAX_REDIRECTS) throw new Error(`${url}: more than ${MAX_REDIRECTS} redirects`);
      current = next;
      continue;
    }
    if (status < 200 || status >= 300) {
      res.destroy();
      throw new Error(`${url}: HTTP ${status} ${res.statusMessage ?? ''}`.trim());
    }
    const max = opts.maxBytes ?? DEFAULT_MANIFEST_URL_MAX_BYTES;
    const declared = Number(res.headers['content-length'] ?? NaN);
    if (declared > max) {
      res.destroy();
      throw new Error(`${url}: the body is ${declared} bytes, over the limit of ${max} (--manifest-url-max-size)`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        size += chunk.byteLength;
        if (size > max) {
          res.destroy();
          throw new Error(`${url}: the body is over the limit of ${max} bytes (--manifest-url-max-size)`);
        }
        chunks.push(chunk);
      }
    } catch (err) {
      if (size > max) throw err;
      throw new Error(`${url}: ${signal.aborted ? `no answer within ${timeoutMs / 1000} s` : (err as Error).message}`);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}

/**
 * The kubelet's HTTP source: polls a URL serving one or many manifests. A
 * failed fetch or an invalid body keeps the last good pods and is reported
 * once per distinct failure.
 */
export class HttpSource {
  private timer?: TimerHandle;
  private stopped = true;
  private lastError?: string;
  private lastWarnings = '';
  private lastGood?: IPod[];
  private lastObjects: SourceObjects = NO_OBJECTS;

  constructor(private readonly opts: HttpSourceOptions) {}

  start(): void {
    this.stopped = false;
    void this.poll();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
  }

  async poll(): Promise<void> {
    try {
      const text = await fetchManifest(this.opts.url, {
        headers: this.opts.headers,
        timeoutMs: this.opts.timeoutMs,
        maxBytes: this.opts.maxBytes,
      });
      const parsed = parseManifestText(
        text,
        { kind: 'http', path: this.opts.url },
        { nodeName: this.opts.nodeName, now: () => new Date(this.opts.clock.now()) },
      );
      const errors = parsed.problems.filter((p) => p.severity === 'error');
      if (errors.length) throw new Error(errors.map(formatProblem).join('\n'));
      this.lastError = undefined;
      const warnings = parsed.problems
        .filter((p) => p.severity === 'warning')
        .map(formatProblem)
        .join('\n');
      if (warnings && warnings !== this.lastWarnings) this.opts.onWarning?.({ source: 'http', file: this.opts.url, message: warnings });
      this.lastWarnings = warnings;
      this.lastGood = parsed.pods.map((p) => p.pod);
      this.lastObjects = { configMaps: parsed.configMaps, secrets: parsed.secrets, runtimeClasses: parsed.runtimeClasses };
      this.opts.onSnapshot(this.lastGood, this.lastObjects);
    } catch (err) {
      const said = (err as Error).message;
      const named = said.startsWith(this.opts.url) ? said : `${this.opts.url}: ${said}`;
      const message = `${named}${this.lastGood ? ' (keeping the last good pods)' : ''}`;
      if (message !== this.lastError) this.opts.onError({ source: 'http', file: this.opts.url, message });
      this.lastError = message;
      // Still a snapshot: the source has reported, and its last good pods stand.
      this.opts.onSnapshot(this.lastGood ?? [], this.lastObjects);
    } finally {
      if (!this.stopped) this.timer = this.opts.clock.setTimeout(() => void this.poll(), this.opts.pollMs ?? 20_000);
    }
  }
}
