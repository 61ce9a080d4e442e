import { PodctlError } from '../core/errors.js';
import { formatProblem } from '../core/pod/problems.js';
import { readManifests, type ReadManifests } from '../core/pod/read.js';
import type { ManifestProblem } from '../core/pod/types.js';

/**
 * The manifests named on the command line, read but not parsed: what a command hands to the agent,
 * which reads them as the command would (manifestSetFromTexts) and answers with the same problems.
 * Nothing here loads the API validators (src/cli/manifests.ts does, for the commands that read
 * manifests themselves).
 */

/** All of standard input, for manifests given as `-`. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads what the paths name (- is stdin): files, the manifest files of directories. */
export function readManifestArgs(paths: string[]): Promise<ReadManifests> {
  return readManifests(paths, { readStdin });
}

/** The warnings of a manifest set, on stderr, one a line. */
export function printWarnings(warnings: ManifestProblem[]): void {
  for (const w of warnings) process.stderr.write(`Warning: ${formatProblem(w)}\n`);
}

/** A set without a pod: nothing to run or plan. */
export function noPodFound(paths: string[]): PodctlError {
  return new PodctlError(`no Pod found in ${paths.join(', ')}`, {
    hint: 'expected at least one document with apiVersion: v1 and kind: Pod',
    exitCode: 2,
  });
}

/** Each text as handed to the agent's POST /v1/pods: stdin first, as it was read, then the files by absolute path. */
export function textsOf(read: ReadManifests): { file: string; text: string }[] {
  const texts = read.entries.flatMap((e) => ('text' in e ? [{ file: e.kind === 'file' ? e.path : '<stdin>', text: e.text }] : []));
  return [...texts.filter((t) => t.file === '<stdin>'), ...texts.filter((t) => t.file !== '<stdin>')];
}
