import { createInterface } from 'node:readline/promises';
import type { Hook } from '@oclif/core';
import { distance } from 'fastest-levenshtein';

/**
 * The command a mistyped one most likely meant, compared segment for segment
 * ("gett pods" against "get pods"), or undefined when nothing is close.
 */
export function closestCommand(typed: string, ids: readonly string[]): string | undefined {
  const words = typed.split(':');
  let best: { id: string; d: number; typedLength: number } | undefined;
  for (const id of ids) {
    const idWords = id.split(':');
    const candidate = words.slice(0, idWords.length);
    const d = distance(candidate.join(':'), id);
    // The letters typed in the words that differ: "rd" is not a typo of "pod", it has no letter right.
    const typedLength = candidate.filter((w, i) => w !== idWords[i]).reduce((sum, w) => sum + w.length, 0);
    if (!best || d < best.d) best = { id, d, typedLength };
  }
  if (!best) return undefined;
  // Within a third of the word (two edits for short ones): "plna" is plan, "foo" is nothing; and never
  // more edits than half of what was typed.
  const close = best.d <= Math.max(2, Math.floor(best.id.length / 3)) && best.d <= Math.ceil(best.typedLength / 2);
  return close ? best.id : undefined;
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
  // oclif joins the arguments into the id: name only the words that were the command.
  const words = opts.id.split(':');
  // A topic typed right ("get rd") is kept: the mistake is in the word after it, not a command like "agent".
  const inTopic = words.length > 1 ? ids.filter((id) => id.startsWith(`${words[0]}:`)) : [];
  const suggestion = closestCommand(opts.id, inTopic.length ? inTopic : ids);
  const n = suggestion ? suggestion.split(':').length : inTopic.length ? 2 : 1;
  const rest = [...words.slice(n), ...(opts.argv ?? [])];
  process.stderr.write(`${opts.config.bin}: "${words.slice(0, n).join(' ')}" is not a ${opts.config.bin} command.\n`);
  if (!suggestion && inTopic.length) {
    const subcommands = opts.config.commands
      .filter((c) => !c.hidden && !c.aliases.includes(c.id) && c.id.startsWith(`${words[0]}:`))
      .map((c) => c.id.slice(words[0]!.length + 1));
    process.stderr.write(`"${opts.config.bin} ${words[0]}" takes one of: ${subcommands.join(', ')}.\n`);
  }
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
