'use strict';
// string-width (v4, which oclif's help, wrap-ansi, widest-line and cli-table3 use) with a fast path:
// a string of printable ASCII only is as wide as it is long. string-width strips ANSI codes,
// replaces emoji with a fresh copy of emoji-regex's large expression and measures each code point,
// at every call: oclif's help calls it for every word it wraps, enough for V8 to optimize it in
// the background, which a process then waits for before it exits. scripts/bundle.mjs points those
// packages here. Anything else (escapes, wide or combining characters, emoji) is string-width's.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS, as the packages that require it
const stringWidth = require('string-width');

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

const width = (string) => (typeof string === 'string' && PRINTABLE_ASCII.test(string) ? string.length : stringWidth(string));
module.exports = width;
module.exports.default = width;
