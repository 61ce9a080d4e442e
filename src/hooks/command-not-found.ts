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

/** An unknown command is a usage error (exit 2), with a suggestion on any output, not only a terminal. */
const hook: Hook.CommandNotFound = async function (opts) {
  const sep = opts.config.topicSeparator;
  const show = (id: string) => id.replaceAll(':', sep);
  const ids = opts.config.commands.filter((c) => !c.hidden).flatMap((c) => [c.id, ...c.aliases]);
  const suggestion = closestCommand(opts.id, ids);
  // oclif joins the arguments into the id: name only the words that were the command.
  const words = opts.id.split(':');
  const n = suggestion ? suggestion.split(':').length : 1;
  const rest = [...words.slice(n), ...(opts.argv ?? [])];
  const lines = [`${opts.config.bin}: "${words.slice(0, n).join(' ')}" is not a ${opts.config.bin} command.`];
  if (suggestion) lines.push(`Did you mean "${[opts.config.bin, show(suggestion), ...rest].join(' ')}"?`);
  lines.push(`Run "${opts.config.bin} help" for the list of commands.`);
  process.stderr.write(`${lines.join('\n')}\n`);
  this.exit(2);
};

export default hook;
