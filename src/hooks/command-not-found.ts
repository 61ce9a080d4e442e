import { createInterface } from 'node:readline/promises';
import type { Hook } from '@oclif/core';
import { distance } from 'fastest-levenshtein';

/**
 * The command a mistyped one most likely meant, compared segment for segment
 * ("gett pods" against "get pods"), or undefined when nothing is close.
 */
export function closestCommand(typed: string, ids: readonly string[]): string | undefined {
  const words = typed.split(':');
  let best: { id: string; d: number } | undefined;
  for (const id of ids) {
    const n = id.split(':').length;
    const candidate = words.slice(0, n).join(':');
    const d = distance(candidate, id);
    if (!best || d < best.d) best = { id, d };
  }
  if (!best) return undefined;
  // Within a third of the word (two edits for short ones): "plna" is plan, "foo" is nothing.
  return best.d <= Math.max(2, Math.floor(best.id.length / 3)) ? best.id : undefined;
}

/** Asks on the terminal whether to run the suggestion; no by default. */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

/**
 * An unknown command is a usage error (exit 2) with the closest command as a
 * suggestion, on any output; on a terminal podctl offers to run it.
 */
const hook: Hook.CommandNotFound = async function (opts) {
  const sep = opts.config.topicSeparator;
  const show = (id: string) => id.replaceAll(':', sep);
  const ids = opts.config.commands.filter((c) => !c.hidden).flatMap((c) => [c.id, ...c.aliases]);
  const suggestion = closestCommand(opts.id, ids);
  // oclif joins the arguments into the id: name only the words that were the command.
  const words = opts.id.split(':');
  const n = suggestion ? suggestion.split(':').length : 1;
  const rest = [...words.slice(n), ...(opts.argv ?? [])];
  process.stderr.write(`${opts.config.bin}: "${words.slice(0, n).join(' ')}" is not a ${opts.config.bin} command.\n`);
  const didYouMean = suggestion && `Did you mean "${[opts.config.bin, show(suggestion), ...rest].join(' ')}"?`;
  if (didYouMean && process.stdin.isTTY && process.stderr.isTTY) {
    if (await confirm(didYouMean)) return this.config.runCommand(suggestion, rest);
  } else if (didYouMean) {
    process.stderr.write(`${didYouMean}\n`);
  }
  process.stderr.write(`Run "${opts.config.bin} help" for the list of commands.\n`);
  this.exit(2);
};

export default hook;
