import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';

/**
 * bin/run.js's first line moves NODE_EXTRA_CA_CERTS aside before Node starts, because Node 20 parses
 * that file and its own bundled roots at every start (about 50 ms for a system bundle) though a podctl
 * command seldom opens a TLS connection. The launcher puts the variable back for the processes podctl
 * starts and records the file under this key; podctl's TLS client (a manifest URL over https) then
 * trusts the file's certificates beside Node's roots, as Node would have.
 */
export const DEFERRED_EXTRA_CA_CERTS = Symbol.for('podctl.deferredExtraCaCerts');

let loaded: { file: string; ca: string[] | undefined } | undefined;

/**
 * The `ca` option for a TLS connection of this process: Node's roots and the deferred file's
 * certificates, or undefined when nothing was deferred (Node's default store already holds them).
 * An unreadable file is warned about once and leaves Node's roots, as Node does at start.
 */
export function deferredCaOption(): string[] | undefined {
  const file = (globalThis as Record<symbol, unknown>)[DEFERRED_EXTRA_CA_CERTS];
  if (typeof file !== 'string' || file === '') return undefined;
  if (loaded?.file !== file) {
    let ca: string[] | undefined;
    try {
      ca = [...rootCertificates, readFileSync(file, 'utf8')];
    } catch (err) {
      process.emitWarning(`Ignoring extra certs from \`${file}\`, load failed: ${(err as Error).message}`);
    }
    loaded = { file, ca };
  }
  return loaded.ca;
}
