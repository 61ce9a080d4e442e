/**
 * What a command says beside its output: on stderr, one line each, in kubectl's words ("Warning: ...",
 * "Error: ..."). Commands and their helpers say it through these, not each with its own write.
 */

/** One line on stderr, as it is. */
export function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

export function warn(message: string): void {
  say(`Warning: ${message}`);
}

/** A pod the node refused, as every path that admits pods says it. */
export function sayRejected(pod: string, message: string): void {
  say(`${pod}: rejected at admission: ${message}`);
}

/** Every error but the last said, as kubectl says each; the last is returned, for the command to throw (its exit). */
export function sayAllButLast(errors: string[]): string {
  for (const e of errors.slice(0, -1)) say(`Error: ${e}`);
  return errors.at(-1)!;
}
