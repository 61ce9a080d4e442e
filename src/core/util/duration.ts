import { PodctlError } from '../errors.js';

/** Parses "30s", "2m", "1h", "500ms" or a bare number of seconds into milliseconds. */
export function parseDuration(value: unknown, what: string): number {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return Math.round(value * 1000);
  if (typeof value === 'string') {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
    if (m) {
      const n = Number(m[1]);
      const unit = m[2] ?? 's';
      const factor = unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000;
      if (n > 0) return Math.round(n * factor);
    }
  }
  throw new PodctlError(`${what}: expected a positive duration such as 30s, 2m or 500ms, got ${JSON.stringify(value)}`, {
    exitCode: 2,
  });
}
