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

/**
 * GETs a manifest URL. Redirects are followed only within the URL's own origin (scheme, host and
 * port), at most 5 times, so the custom headers (an API key, say) never leave it; a redirect
 * elsewhere is refused. The body is read up to maxBytes, and refused past that.
 */
export async function fetchManifest(url: string, opts: { headers?: Record<string, string>; timeoutMs?: number; maxBytes?: number }): Promise<string> {
  const origin = new URL(url).origin;
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 10_000);
  let current = url;
  for (let hop = 0; ; hop++) {
    const res = await fetch(current, { headers: opts.headers, signal, redirect: 'manual' });
    if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
      await res.body?.cancel();
      const next = new URL(res.headers.get('location')!, current);
      if (next.origin !== origin) {
        throw new Error(`${url}: refusing the redirect to ${next.href}: podctl follows redirects only within ${origin}, so its headers never go elsewhere`);
      }
      if (hop >= MAX_REDIRECTS) throw new Error(`${url}: more than ${MAX_REDIRECTS} redirects`);
      current = next.href;
      continue;
    }
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${res.statusText}`.trim());
    const max = opts.maxBytes ?? DEFAULT_MANIFEST_URL_MAX_BYTES;
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > max) {
      await res.body?.cancel();
      throw new Error(`${url}: the body is ${declared} bytes, over the limit of ${max} (--manifest-url-max-size)`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > max) {
          await reader.cancel();
          throw new Error(`${url}: the body is over the limit of ${max} bytes (--manifest-url-max-size)`);
        }
        chunks.push(value);
      }
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
      const text = await fetchManifest(this.opts.url, { headers: this.opts.headers, timeoutMs: this.opts.timeoutMs, maxBytes: this.opts.maxBytes });
      const parsed = parseManifestText(text, { kind: 'http', path: this.opts.url }, { nodeName: this.opts.nodeName, now: () => new Date(this.opts.clock.now()) });
      const errors = parsed.problems.filter((p) => p.severity === 'error');
      if (errors.length) throw new Error(errors.map(formatProblem).join('\n'));
      this.lastError = undefined;
      const warnings = parsed.problems.filter((p) => p.severity === 'warning').map(formatProblem).join('\n');
      if (warnings && warnings !== this.lastWarnings) this.opts.onWarning?.({ source: 'http', file: this.opts.url, message: warnings });
      this.lastWarnings = warnings;
      this.lastGood = parsed.pods.map((p) => p.pod);
      this.lastObjects = { configMaps: parsed.configMaps, secrets: parsed.secrets, runtimeClasses: parsed.runtimeClasses };
      this.opts.onSnapshot(this.lastGood, this.lastObjects);
    } catch (err) {
      const message = `${(err as Error).message.startsWith(this.opts.url) ? '' : `${this.opts.url}: `}${(err as Error).message}${this.lastGood ? ' (keeping the last good pods)' : ''}`;
      if (message !== this.lastError) this.opts.onError({ source: 'http', file: this.opts.url, message });
      this.lastError = message;
      // Still a snapshot: the source has reported, and its last good pods stand.
      this.opts.onSnapshot(this.lastGood ?? [], this.lastObjects);
    } finally {
      if (!this.stopped) this.timer = this.opts.clock.setTimeout(() => void this.poll(), this.opts.pollMs ?? 20_000);
    }
  }
}
