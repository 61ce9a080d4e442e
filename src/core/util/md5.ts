import { createHash } from 'node:crypto';

/**
 * The MD5 of these strings one after the other, in hex. Each is hashed in UTF-8,
 * as Node encodes a string (an unpaired surrogate as U+FFFD): static pod UIDs and
 * config hashes depend on these exact bytes.
 */
export function md5Hex(...parts: string[]): string {
  const hash = createHash('md5');
  for (const part of parts) hash.update(part, 'utf8');
  return hash.digest('hex');
}
