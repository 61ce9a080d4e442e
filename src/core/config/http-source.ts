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
  /** The pods served, and the ConfigMaps and Secrets served with them. */
  onSnapshot(pods: IPod[], objects: SourceObjects): void;
  onError(err: SourceError): void;
  /** The warnings of a good body, said once per distinct text. */
  onWarning?(warning: SourceError): void;
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
      const res = await fetch(this.opts.url, { headers: this.opts.headers, signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000) });
      if (!res.ok) throw new Error(`${this.opts.url}: HTTP ${res.status} ${res.statusText}`.trim());
      const text = await res.text();
      const parsed = parseManifestText(text, { kind: 'http', path: this.opts.url }, { nodeName: this.opts.nodeName, now: () => new Date(this.opts.clock.now()) });
      const errors = parsed.problems.filter((p) => p.severity === 'error');
      if (errors.length) throw new Error(errors.map(formatProblem).join('\n'));
      this.lastError = undefined;
      const warnings = parsed.problems.filter((p) => p.severity === 'warning').map(formatProblem).join('\n');
      if (warnings && warnings !== this.lastWarnings) this.opts.onWarning?.({ source: 'http', file: this.opts.url, message: warnings });
      this.lastWarnings = warnings;
      this.lastGood = parsed.pods.map((p) => p.pod);
      this.lastObjects = { configMaps: parsed.configMaps, secrets: parsed.secrets };
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
