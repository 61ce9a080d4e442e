/**
 * apimachinery's HumanDuration: "45s", "3m20s", "25m", "5h12m", "30h", "3d4h", "40d", "2y30d", "9y".
 * Up to a second in the future reads as now ("0s"): clocks of two machines are never quite the same.
 */
export function humanDuration(ms: number): string {
  // Go's int(d.Seconds()) truncates toward zero: -1.5s is -1, which is still "0s".
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 192) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 365 * 2) return `${days}d`;
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${Math.floor(days / 365)}y` : `${Math.floor(days / 365)}y${days % 365}d`;
  return `${Math.floor(days / 365)}y`;
}

/** A timestamp (RFC 3339 or epoch ms) as milliseconds, or undefined when there is none or it does not parse. */
export function timestampMs(t: string | number | Date | undefined | null): number | undefined {
  if (t === undefined || t === null || t === '') return undefined;
  const ms = typeof t === 'number' ? t : t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The printers' translateTimestampSince: how long ago, or "<unknown>" for no time. */
export function timestampSince(t: string | number | Date | undefined | null, now: number): string {
  const ms = timestampMs(t);
  return ms === undefined ? '<unknown>' : humanDuration(now - ms);
}
