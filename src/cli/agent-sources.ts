import { PodctlError } from '../core/errors.js';
import { parseDuration } from '../core/util/duration.js';
import { bytes } from '../core/util/quantity.js';

/** The agent's pod sources from its flags: the manifests path's re-read, and --manifest-url's headers, size bound and poll. */
export function sourceOptions(flags: {
  'manifest-url'?: string;
  'manifest-url-header'?: string[];
  'manifest-url-max-size': string;
  'file-check-frequency': string;
  'http-check-frequency': string;
}): {
  fileCheckMs: number;
  manifestUrl?: string;
  manifestUrlHeaders: Record<string, string>;
  manifestUrlMaxBytes: number;
  httpCheckMs: number;
} {
  const headers: Record<string, string> = {};
  for (const h of flags['manifest-url-header'] ?? []) {
    const i = h.indexOf(':');
    if (i <= 0) throw new PodctlError(`--manifest-url-header "${h}": expected "Name: value"`, { exitCode: 2 });
    headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
  }
  const maxBytes = bytes(flags['manifest-url-max-size']);
  if (maxBytes === undefined || maxBytes <= 0)
    throw new PodctlError(`--manifest-url-max-size: expected a size such as 4Mi, got ${JSON.stringify(flags['manifest-url-max-size'])}`, {
      exitCode: 2,
    });
  return {
    fileCheckMs: parseDuration(flags['file-check-frequency'], '--file-check-frequency'),
    manifestUrl: flags['manifest-url'],
    manifestUrlHeaders: headers,
    manifestUrlMaxBytes: maxBytes,
    httpCheckMs: parseDuration(flags['http-check-frequency'], '--http-check-frequency'),
  };
}
