'use strict';
// wrap-ansi 7 (oclif's help and error formatting) with a shortcut for text without escape codes.
// After wrapping, wrap-ansi walks the wrapped text once more, a character at a time, to close and
// reopen colours and hyperlinks around each line break. Without an escape character in the text,
// that walk appends every character and nothing else: it returns the wrapped text as it is. The
// walk is what `podctl --help` ran enough for V8 to optimize it on a background thread, and a
// process waits for that compilation before it exits (about 10 ms of every --help).
// scripts/bundle.mjs gives the bundle wrap-ansi's source through this function.

const WALK = "const pre = [...rows.join('\\n')];";

/** wrap-ansi's source, returning the wrapped rows joined when they hold no escape character. */
module.exports = function plainWrapAnsi(source) {
  if (source.split(WALK).length !== 2) throw new Error('wrap-ansi no longer joins its rows as expected; look again at scripts/wrap-ansi-plain.cjs');
  // On one line, so that the lines after keep their numbers.
  return source.replace(WALK, "const joined = rows.join('\\n'); if (!joined.includes('\\u001B') && !joined.includes('\\u009B')) return joined; const pre = [...joined];");
};
