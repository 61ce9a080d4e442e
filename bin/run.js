#!/usr/bin/env node
// `podctl --version` answers without loading oclif (most of start-up time), in oclif's own words.
if (process.argv.length === 3 && process.argv[2] === '--version') {
  const { readFileSync } = await import('node:fs');
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`);
} else {
  // Colour only on a terminal and never with NO_COLOR: the libraries would colour a pipe whenever CI is set.
  if (process.env.NO_COLOR !== undefined || (!process.stdout.isTTY && !process.stderr.isTTY && process.env.FORCE_COLOR === undefined)) {
    process.env.FORCE_COLOR = '0';
  }
  const { execute } = await import('@oclif/core');
  await execute({ dir: import.meta.url });
}
