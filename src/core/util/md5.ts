// js-md5's build without Node's crypto: its main entry, on Node, requires crypto when it loads
// (to hash through it), and loading node:crypto costs a start some 4 ms (about twenty modules).
import { md5 } from 'js-md5/build/md5.modern.mjs';

/**
 * The MD5 of these strings one after the other, in hex: what node:crypto's
 * createHash('md5') gives after an update() with each. Each is hashed as Node hashes
 * a string, in UTF-8 with an unpaired surrogate as U+FFFD (js-md5 would encode it as
 * part of a pair).
 */
export function md5Hex(...parts: string[]): string {
  const hash = md5.create();
  for (const part of parts) hash.update(Buffer.from(part, 'utf8'));
  return hash.hex();
}
